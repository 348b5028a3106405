package jetstream

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/flockrun/flock/state"
)

// DefaultFailoverAfter is Options.FailoverAfter's default.
const DefaultFailoverAfter = 300 * time.Millisecond

// getTimeout bounds a get whose context has no deadline (nats.go's own
// default for API requests): a request to a stream leader that is dead or
// stopped is never answered.
const getTimeout = 5 * time.Second

// replicaEvery is how often a failover read sends another direct get
// while none has answered: each goes to one replica of the stream's queue
// group, which may be the stopped one.
const replicaEvery = 150 * time.Millisecond

// getReq is a request of JetStream's message-get API: a message by
// sequence, the first of a subject at or after a sequence, or the last of
// a subject.
type getReq struct {
	Seq     uint64 `json:"seq,omitempty"`
	NextFor string `json:"next_by_subj,omitempty"`
	LastFor string `json:"last_by_subj,omitempty"`
	// committed says the message is known to be there (at or before a
	// committed tip): a replica that does not find it lags the leader,
	// and a failover read asks again rather than answer "not found".
	committed bool
}

// getResp is the leader's answer to a getReq.
type getResp struct {
	Error   *jetstream.APIError `json:"error,omitempty"`
	Message *struct {
		Subject  string    `json:"subject"`
		Sequence uint64    `json:"seq"`
		Header   []byte    `json:"hdrs,omitempty"`
		Data     []byte    `json:"data,omitempty"`
		Time     time.Time `json:"time"`
	} `json:"message,omitempty"`
}

// reader reads the store. A strict reader reads every message from its
// stream's leader, which has every acknowledged write: the executor's
// reads and every read that decides a commit go through one. A failover
// reader (Store.FailoverReads) asks the leader first and, when the leader
// does not answer within Options.FailoverAfter (a stream electing a new
// leader after a server died, an overloaded leader), any current replica
// (a direct get), which may lag the leader by the last writes: what the
// HTTP API's reads use, so that they answer during a failover.
type reader struct {
	s        *Store
	failover bool
}

// get returns the message req names from stream (jetstream.ErrMsgNotFound
// if there is none).
func (r reader) get(ctx context.Context, stream string, req getReq) (*jetstream.RawStreamMsg, error) {
	if !r.failover {
		return r.s.leaderGet(ctx, stream, req)
	}
	ctx, cancel := withGetTimeout(ctx)
	defer cancel()
	return failover(ctx, r.s, stream, func(ctx context.Context) (*jetstream.RawStreamMsg, error) {
		return r.s.leaderGet(ctx, stream, req)
	}, func(ctx context.Context) (*jetstream.RawStreamMsg, error) {
		return r.s.replicaGet(ctx, stream, req)
	})
}

// leaderRecheck is how long failover reads of a stream whose leader did
// not answer go to its replicas without asking the leader first.
const leaderRecheck = time.Second

// failover asks stream's leader (leader) and, when it does not answer
// within Options.FailoverAfter, its replicas (replicas). A stream whose
// leader did not answer in the last leaderRecheck is asked from its
// replicas first, so that a read of many messages during an election
// waits for the leader once, not once per message.
func failover[T any](ctx context.Context, s *Store, stream string, leader, replicas func(context.Context) (T, error)) (T, error) {
	if s.leaders.down(stream) {
		if v, err := replicas(ctx); err == nil || !transient(err) || ctx.Err() != nil {
			return v, err
		}
	}
	lctx, lcancel := context.WithTimeout(ctx, s.opts.FailoverAfter)
	v, err := leader(lctx)
	lcancel()
	if err == nil || !transient(err) {
		s.leaders.mark(stream, false)
		return v, err
	}
	if ctx.Err() != nil {
		return v, err
	}
	s.leaders.mark(stream, true)
	dv, derr := replicas(ctx)
	if derr != nil {
		return dv, fmt.Errorf("%w (and from a replica: %w)", err, derr)
	}
	return dv, nil
}

// leaderless remembers the streams whose leader lately did not answer a
// failover read (see failover).
type leaderless struct {
	mu    sync.Mutex
	since map[string]time.Time // when a leader last did not answer; guarded by mu
}

// down reports whether stream's leader did not answer in the last
// leaderRecheck.
func (l *leaderless) down(stream string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.since[stream]
	return ok && time.Since(at) < leaderRecheck
}

// mark records whether stream's leader answered (down false) or not.
func (l *leaderless) mark(stream string, down bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case down && l.since == nil:
		l.since = map[string]time.Time{stream: time.Now()}
	case down:
		l.since[stream] = time.Now()
	default:
		delete(l.since, stream)
	}
}

// replicaGet asks the replicas of stream for a message (see fromReplicas).
func (s *Store) replicaGet(ctx context.Context, stream string, req getReq) (*jetstream.RawStreamMsg, error) {
	return fromReplicas(ctx, func(ctx context.Context) (*jetstream.RawStreamMsg, error) {
		m, err := s.directGet(ctx, stream, req)
		if req.committed && errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, fmt.Errorf("%w: a replica of stream %s lags: %w", state.ErrUnavailable, stream, err)
		}
		return m, err
	})
}

// fromReplicas calls ask, which asks one replica of a stream (a direct
// get goes to one member of the replicas' queue group, which may be a
// stopped server that never answers), every replicaEvery until a call
// answers or fails for good, or ctx ends.
func fromReplicas[T any](ctx context.Context, ask func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		v   T
		err error
	}
	answers := make(chan answer, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	try := func() {
		wg.Add(1)
		go func() { // owned: the deferred Wait waits for it
			defer wg.Done()
			v, err := ask(ctx)
			select {
			case answers <- answer{v, err}:
			case <-ctx.Done():
			}
		}()
	}
	t := time.NewTicker(replicaEvery)
	defer t.Stop()
	try()
	var last error
	for {
		select {
		case a := <-answers:
			if a.err == nil || !transient(a.err) {
				return a.v, a.err
			}
			last = a.err
		case <-t.C:
			try()
		case <-ctx.Done():
			var zero T
			return zero, cmp.Or(last, ctx.Err())
		}
	}
}

// directLastSubjects asks one replica of stream for the subjects that
// match filter (the last message of each, read with a batched direct
// get): at most 1024, the server's bound on such a get.
func (s *Store) directLastSubjects(ctx context.Context, stream, filter string) ([]string, error) {
	var subjects []string
	_, err := s.directBatch(ctx, stream, struct {
		MultiLast []string `json:"multi_last"`
		NoHeaders bool     `json:"no_hdr"`
	}{[]string{filter}, true}, func(m *nats.Msg) {
		subjects = append(subjects, m.Header.Get(jetstream.SubjectHeader))
	})
	return subjects, err
}

// directBatch sends one batched direct get (body) to one replica of
// stream and calls each with every message of its answer, in order. It
// returns the end-of-batch marker, whose headers say how many messages
// match past the batch (Nats-Num-Pending) and the batch's last sequence
// (Nats-Last-Sequence), or nil when nothing matches.
func (s *Store) directBatch(ctx context.Context, stream string, body any, each func(*nats.Msg)) (*nats.Msg, error) {
	nc := s.js.Conn()
	inbox := nc.NewRespInbox()
	msgs := make(chan *nats.Msg, 64)
	sub, err := nc.ChanSubscribe(inbox, msgs)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	if err := nc.PublishRequest(jetstream.DefaultAPIPrefix+"DIRECT.GET."+stream, inbox, b); err != nil {
		return nil, err
	}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case m := <-msgs:
			switch m.Header.Get("Status") {
			case "":
				each(m)
			case "204": // end of the batch
				return m, nil
			case "404": // nothing matches
				return nil, nil
			case "503": // no replica answers (one dying, or none yet)
				return nil, fmt.Errorf("batched direct get from stream %s: %w", stream, nats.ErrNoResponders)
			case "408":
				return nil, fmt.Errorf("batched direct get from stream %s: %w", stream, nats.ErrTimeout)
			default:
				return nil, fmt.Errorf("batched direct get from stream %s: %s %s", stream,
					m.Header.Get("Status"), m.Header.Get("Description"))
			}
		}
	}
}

// withGetTimeout bounds ctx by getTimeout unless it has a deadline.
func withGetTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, getTimeout)
}

// leaderReask is how often a strict get asks a stream's leader again
// while no answer came: a request that reached the servers while they
// still took a dead server for the stream's leader is never answered
// (only the leader answers, and the followers notice its death only at
// their election timeout), so that only a request sent after the election
// reaches the new leader. Without it, a takeover's first read of a run's
// head, made as soon as the claims consumer had its new leader, waited
// for its whole 3 s try when the heads stream elected its own a moment
// later.
const leaderReask = time.Second

// leaderGet asks stream's leader for a message, again every leaderReask
// while none of its asks was answered, until ctx ends (a get only reads:
// asking twice is harmless).
func (s *Store) leaderGet(ctx context.Context, stream string, req getReq) (*jetstream.RawStreamMsg, error) {
	ctx, cancel := withGetTimeout(ctx)
	defer cancel()
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	m, err := s.ask(ctx, jetstream.DefaultAPIPrefix+"STREAM.MSG.GET."+stream, body)
	if err != nil {
		return nil, err
	}
	var resp getResp
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return nil, fmt.Errorf("get from stream %s: bad answer: %w", stream, err)
	}
	if resp.Error != nil {
		if resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			return nil, jetstream.ErrMsgNotFound
		}
		return nil, resp.Error
	}
	if resp.Message == nil {
		return nil, fmt.Errorf("get from stream %s: %w", stream, jetstream.ErrInvalidJetStreamResponse)
	}
	out := &jetstream.RawStreamMsg{Subject: resp.Message.Subject, Sequence: resp.Message.Sequence,
		Data: resp.Message.Data, Time: resp.Message.Time}
	if len(resp.Message.Header) > 0 {
		if out.Header, err = nats.DecodeHeadersMsg(resp.Message.Header); err != nil {
			return nil, fmt.Errorf("get from stream %s: message %d: %w", stream, out.Sequence, err)
		}
	}
	return out, nil
}

// directGet asks any current replica of stream for a message (the stream
// allows direct gets).
func (s *Store) directGet(ctx context.Context, stream string, req getReq) (*jetstream.RawStreamMsg, error) {
	subj := jetstream.DefaultAPIPrefix + "DIRECT.GET." + stream
	var body []byte
	if req.LastFor != "" {
		subj += "." + req.LastFor
	} else {
		var err error
		if body, err = json.Marshal(req); err != nil {
			return nil, err
		}
	}
	m, err := s.js.Conn().RequestWithContext(ctx, subj, body)
	if err != nil {
		return nil, err
	}
	if len(m.Data) == 0 {
		switch m.Header.Get("Status") {
		case "":
		case "404":
			return nil, jetstream.ErrMsgNotFound
		default:
			return nil, fmt.Errorf("direct get from stream %s: %s %s", stream, m.Header.Get("Status"), m.Header.Get("Description"))
		}
	}
	seq, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("direct get from stream %s: bad sequence header %q", stream, m.Header.Get(jetstream.SequenceHeader))
	}
	tm, _ := time.Parse(time.RFC3339Nano, m.Header.Get(jetstream.TimeStampHeaer))
	return &jetstream.RawStreamMsg{Subject: m.Header.Get(jetstream.SubjectHeader), Sequence: seq,
		Header: m.Header, Data: m.Data, Time: tm}, nil
}

// transient reports whether err says that the store cannot answer now
// but may soon: no answer in time, no responder (a stream without a
// leader), a connection being re-established, or a JetStream error of
// status 503 ("temporarily unavailable").
func transient(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, state.ErrUnavailable),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, nats.ErrConnectionReconnecting),
		errors.Is(err, nats.ErrDisconnected),
		errors.Is(err, jetstream.ErrNoStreamResponse),
		errors.Is(err, jetstream.ErrAsyncPublishTimeout),
		errors.Is(err, jetstream.ErrTooManyStalledMsgs):
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.Code == 503
}

// Unavailable wraps err with state.ErrUnavailable when it says JetStream
// did not answer (a timeout, no responders, a 503: a stream electing its
// leader); any other error is returned as it is. Callers outside the
// store (a node's check of its claim queue) classify their own requests
// with it.
func Unavailable(err error) error { return unavailable(err) }

// unavailable wraps a transient err with state.ErrUnavailable (see
// transient); any other error is returned as it is.
func unavailable(err error) error {
	if err == nil || errors.Is(err, state.ErrUnavailable) || !transient(err) {
		return err
	}
	return fmt.Errorf("%w: %w", state.ErrUnavailable, err)
}

// ask sends a request to subj and returns its answer. One not answered
// within leaderReask is sent again every leaderReask until ctx ends, to
// an inbox of its own that takes the first answer to any of these later
// asks (nats.ErrNoResponders if no server serves subj).
func (s *Store) ask(ctx context.Context, subj string, body []byte) (*nats.Msg, error) {
	nc := s.js.Conn()
	tctx, tcancel := context.WithTimeout(ctx, leaderReask)
	m, err := nc.RequestWithContext(tctx, subj, body)
	tcancel()
	if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return m, err
	}
	sub, err := nc.SubscribeSync(nc.NewInbox())
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	for {
		if err := nc.PublishRequest(subj, sub.Subject, body); err != nil {
			return nil, err
		}
		tctx, tcancel := context.WithTimeout(ctx, leaderReask)
		m, err := sub.NextMsgWithContext(tctx)
		tcancel()
		switch {
		case err == nil && m.Header.Get("Status") == "503" && len(m.Data) == 0:
			return nil, nats.ErrNoResponders
		case err == nil:
			return m, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case !errors.Is(err, context.DeadlineExceeded):
			return nil, err
		}
	}
}
