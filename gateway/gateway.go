package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flockrun/flock/internal/httpserver"
	"github.com/flockrun/flock/internal/selfaddr"
	"github.com/flockrun/flock/operations"
)

// TokenPrefix starts every session token, so that a leaked one is
// recognisable (and scrubbable) as a flock gateway token.
const TokenPrefix = "flk-gw-"

// Gateway holds the open sessions and serves their OpenAI-compatible
// routes. It is safe for concurrent use. The zero value is not usable;
// call New.
type Gateway struct {
	log *slog.Logger

	mu sync.Mutex
	// sessions by id; guarded by mu.
	sessions map[string]*Session
	// opened is closed and replaced whenever a session opens, waking Await;
	// guarded by mu.
	opened chan struct{}
	// baseURL is the announced server root (SetBaseURL); guarded by mu.
	baseURL string
	// ln and srv are the private loopback listener, started on the first
	// BaseURL call without an announced root; guarded by mu.
	ln     net.Listener
	srv    *http.Server
	served chan error
	closed bool
	// listen bounds the private listener's clients (SetListenOptions);
	// guarded by mu.
	listen httpserver.Options
}

// SetListenOptions sets the header and body timeouts of the private
// listener (flock serve passes the server's header_timeout_s and
// body_timeout_s); call it before BaseURL starts the listener.
func (g *Gateway) SetListenOptions(o httpserver.Options) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.listen = o
}

// New returns a Gateway with no sessions. It does no I/O.
func New(log *slog.Logger) *Gateway {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Gateway{log: log, sessions: map[string]*Session{}, opened: make(chan struct{})}
}

// SetBaseURL announces the root URL at which the server serves the
// gateway's routes (flock serve calls it once it listens, "http://ADDR").
// Sessions opened afterwards hand agents that URL.
func (g *Gateway) SetBaseURL(root string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.baseURL = strings.TrimRight(root, "/")
}

// BaseURL returns the root URL agents reach the gateway at: the announced
// one, else a private listener on 127.0.0.1 that the gateway starts on
// first use (flock run, or runs resumed before the server listens) and
// stops in Close.
func (g *Gateway) BaseURL() (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.baseURL != "" {
		return g.baseURL, nil
	}
	if g.closed {
		return "", ErrClosed
	}
	if g.ln == nil {
		ln, err := selfaddr.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", fmt.Errorf("gateway: listen: %w", err)
		}
		g.ln = ln
		o := g.listen
		o.ErrorLog = slog.NewLogLogger(g.log.Handler(), slog.LevelWarn)
		g.srv = httpserver.New(loopbackOnly(g), o)
		g.served = make(chan error, 1)
		srv, served := g.srv, g.served
		go func() { served <- srv.Serve(ln) }()
	}
	return "http://" + g.ln.Addr().String(), nil
}

// Close stops the private listener, if any, and closes every session.
func (g *Gateway) Close() error {
	g.mu.Lock()
	g.closed = true
	srv, served := g.srv, g.served
	g.srv, g.served = nil, nil
	sessions := make([]*Session, 0, len(g.sessions))
	for _, s := range g.sessions {
		sessions = append(sessions, s)
	}
	close(g.opened)
	g.opened = make(chan struct{})
	g.mu.Unlock()
	for _, s := range sessions {
		s.Release()
	}
	if srv == nil {
		return nil
	}
	err := srv.Close()
	if serr := <-served; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// Recorded is a model call answered before, in an earlier attempt of the
// same agent: its journaled request and result.
type Recorded struct {
	// OpID is the op that answered: a gateway_wait op (CallID names the
	// call among its calls) or, in session runs journaled before
	// gateway_wait answered calls, a generate op.
	OpID    string
	CallID  string
	Request operations.GenerateRequest
	Result  operations.GenerateResult
}

// SessionConfig describes a session to Open.
type SessionConfig struct {
	// Model is the default model: a call naming no model, or one that is
	// not in Models, uses it.
	Model string
	// Models are the other model names a call may choose.
	Models []string
	// Replay are the calls of earlier attempts, in journal order; a call
	// whose request equals one of them (the k-th such call gets the k-th
	// recorded answer) is answered from it without a model call.
	Replay []Recorded
}

// Open registers a session under id (the session run's id) with a fresh
// token, which it returns with the session. The token is held in memory
// only.
func (g *Gateway) Open(id string, cfg SessionConfig) (*Session, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("gateway: token: %w", err)
	}
	s := &Session{ID: id, gw: g, token: TokenPrefix + hex.EncodeToString(b[:]), model: cfg.Model,
		models: map[string]bool{cfg.Model: true}, notify: make(chan struct{}, 1),
		waiting: map[string]*call{}, recorded: map[string][]Recorded{}, recordedOps: map[string]bool{},
		answered: map[string][]operations.GatewayCall{}, responses: map[string]responseChain{}, seen: map[string]int{},
		nonce: hex.EncodeToString(b[:4])}
	s.order = append(s.order, cfg.Model)
	for _, m := range cfg.Models {
		if !s.models[m] {
			s.models[m] = true
			s.order = append(s.order, m)
		}
	}
	for _, r := range cfg.Replay {
		s.recordLocked(r)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, ErrClosed
	}
	if _, dup := g.sessions[id]; dup {
		return nil, fmt.Errorf("%w: %s", ErrDuplicateSession, id)
	}
	g.sessions[id] = s
	close(g.opened)
	g.opened = make(chan struct{})
	return s, nil
}

// Await returns the session id once it is open: the session run's
// gateway_wait op may be dispatched (after a restart) before the external
// op that opens the session.
func (g *Gateway) Await(ctx context.Context, id string) (*Session, error) {
	for {
		g.mu.Lock()
		s, ok := g.sessions[id]
		opened, closed := g.opened, g.closed
		g.mu.Unlock()
		if ok {
			return s, nil
		}
		if closed {
			return nil, ErrNoSession
		}
		select {
		case <-opened:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// Lookup returns the open session id, or nil.
func (g *Gateway) Lookup(id string) *Session {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sessions[id]
}

// remove forgets s (its Close calls it).
func (g *Gateway) remove(s *Session) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sessions[s.ID] == s {
		delete(g.sessions, s.ID)
	}
}

// Trace is one model call of a session, as the agent saw it.
type Trace struct {
	// ID is "<session>:<seq>"; the answer carries it in X-Flock-Trace-Id
	// and in its "flock" object, and the completion id is "chatcmpl-" + ID.
	ID  string `json:"id"`
	Seq int    `json:"seq"`
	// StepID is the client's X-Flock-Step-Id header, if it sent one.
	StepID string `json:"step_id,omitempty"`
	// OpID is the op that answered (in this session run or, when
	// Replayed, an earlier attempt's): the gateway_wait op, whose call
	// CallID it was.
	OpID     string                     `json:"op_id"`
	CallID   string                     `json:"call_id,omitempty"`
	Replayed bool                       `json:"replayed,omitempty"`
	Time     time.Time                  `json:"time"`
	Request  operations.GenerateRequest `json:"request"`
	Result   operations.GenerateResult  `json:"result"`
}

func (t *Trace) completionID() string { return "chatcmpl-" + t.ID }

// call is a model call waiting for its generate op.
type call struct {
	id     string
	key    string
	stepID string
	req    operations.GenerateRequest
	done   chan struct{}
	// set before done is closed:
	opID string
	res  operations.Result
	err  error
}

// gatewayCall returns the call as the gateway_wait op takes it.
func (c *call) gatewayCall() operations.GatewayCall {
	return operations.GatewayCall{ID: c.id, Request: c.req}
}

// Session is one agent's gateway session: the calls it sends wait in a
// queue that the session run's gateway_wait op takes and answers; once
// its answers are journaled, the next op hands them back to their callers
// (DeliverAnswered, or Deliver from the journal).
type Session struct {
	ID    string
	gw    *Gateway
	token string
	model string
	// models and order are the names a call may use; read-only after Open.
	models map[string]bool
	order  []string
	// nonce prefixes call ids, so that ids of two attempts never meet.
	nonce string
	// notify wakes Take (capacity 1).
	notify chan struct{}

	mu sync.Mutex
	// queue holds calls not yet taken; waiting, taken calls by id; guarded by mu.
	queue   []*call
	waiting map[string]*call
	// recorded are earlier answers by request key, consumed in order;
	// recordedOps the op and call ids among them; seen counts this
	// attempt's calls per key; guarded by mu.
	recorded    map[string][]Recorded
	recordedOps map[string]bool
	seen        map[string]int
	// answered are the answers of gateway_wait ops by op id, kept from
	// Answered until DeliverAnswered (the op's next wait, once they are
	// journaled); guarded by mu.
	answered map[string][]operations.GatewayCall
	// responses are the session's Responses API answers by response id,
	// for previous_response_id; guarded by mu.
	responses map[string]responseChain
	seq       int
	trace     []Trace
	closed    bool
	// failed, once set, answers every call (the run reached a limit).
	failed error
	// fatal is the first call whose generate failed in a way no retry
	// fixes (operations.Code.Fatal); guarded by mu.
	fatal *callError
}

// Fatal returns the first call of the session whose model call failed in
// a way no retry fixes (a refused key, an unknown model, a rate limit the
// run cannot outwait): its failure code and message; ok is false when
// none did. The external handler names it when the agent then fails.
func (s *Session) Fatal() (code operations.Code, msg string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fatal == nil {
		return "", "", false
	}
	return s.fatal.code, s.fatal.msg, true
}

// Token is the session's bearer token (OPENAI_API_KEY of the agent).
func (s *Session) Token() string { return s.token }

// Model is the session's default model.
func (s *Session) Model() string { return s.model }

// requestKey identifies a request for replay: the hash of its journaled
// JSON.
func requestKey(g operations.GenerateRequest) string {
	b, _ := json.Marshal(g)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func (s *Session) recordLocked(r Recorded) {
	ref := r.OpID + "\x00" + r.CallID
	if r.OpID != "" && s.recordedOps[ref] {
		return
	}
	s.recordedOps[ref] = true
	k := requestKey(r.Request)
	s.recorded[k] = append(s.recorded[k], r)
}

// Do answers one call: from the journal of an earlier attempt when the
// same request was answered there, otherwise by queueing it for the
// session run and waiting for its journaled generate result.
func (s *Session) Do(ctx context.Context, req operations.GenerateRequest, stepID string) (*Trace, error) {
	key := requestKey(req)
	s.mu.Lock()
	if s.failed != nil {
		err := s.failed
		s.mu.Unlock()
		return nil, err
	}
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	s.seq++
	seq := s.seq
	n := s.seen[key]
	s.seen[key] = n + 1
	if rec := s.recorded[key]; n < len(rec) {
		r := rec[n]
		t := Trace{ID: s.ID + ":" + strconv.Itoa(seq), Seq: seq, StepID: stepID, OpID: r.OpID, CallID: r.CallID,
			Replayed: true, Time: time.Now().UTC(), Request: req, Result: r.Result}
		s.trace = append(s.trace, t)
		s.mu.Unlock()
		return &t, nil
	}
	c := &call{id: s.nonce + "-" + strconv.Itoa(seq), key: key, stepID: stepID, req: req, done: make(chan struct{})}
	s.queue = append(s.queue, c)
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		// The generate still runs and is journaled; a retry of the same
		// request in a later attempt is answered from it.
		return nil, context.Cause(ctx)
	}
	if c.err != nil {
		return nil, c.err
	}
	if c.res.Error != "" {
		ce := &callError{msg: c.res.Error, code: c.res.Code}
		if ce.code.Fatal() {
			s.mu.Lock()
			if s.fatal == nil {
				s.fatal = ce
			}
			s.mu.Unlock()
		}
		return nil, ce
	}
	var gr operations.GenerateResult
	if g := operations.Generate.Result(c.res); g != nil {
		gr = *g
	}
	t := Trace{ID: s.ID + ":" + strconv.Itoa(seq), Seq: seq, StepID: stepID, OpID: c.opID, CallID: c.id,
		Time: time.Now().UTC(), Request: req, Result: gr}
	s.mu.Lock()
	s.trace = append(s.trace, t)
	s.mu.Unlock()
	return &t, nil
}

// callError is a call whose generate failed (the model's error, after its
// retries), as its result says, with the result's failure code.
type callError struct {
	msg  string
	code operations.Code
}

func (e *callError) Error() string { return e.msg }

// Take waits for calls and returns those queued, moving them to the
// waiting set; closed is true once the session is closed and nothing is
// queued.
func (s *Session) Take(ctx context.Context) (calls []operations.GatewayCall, closed bool, err error) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			for _, c := range s.queue {
				s.waiting[c.id] = c
				calls = append(calls, c.gatewayCall())
			}
			s.queue = nil
			s.mu.Unlock()
			return calls, false, nil
		}
		if s.closed || s.failed != nil {
			s.mu.Unlock()
			return nil, true, nil
		}
		s.mu.Unlock()
		select {
		case <-s.notify:
		case <-ctx.Done():
			return nil, false, context.Cause(ctx)
		}
	}
}

// Requeue puts calls that Take returned back at the head of the queue,
// in order: the gateway_wait op that took them was interrupted (a pause,
// a stop) before its result could be journaled, and the next one answers
// them.
func (s *Session) Requeue(calls []operations.GatewayCall) {
	s.mu.Lock()
	var back []*call
	for _, gc := range calls {
		if c := s.waiting[gc.ID]; c != nil {
			delete(s.waiting, gc.ID)
			back = append(back, c)
		}
	}
	closed := s.closed || s.failed != nil
	if !closed {
		s.queue = append(back, s.queue...)
	}
	err := s.failed
	s.mu.Unlock()
	if closed {
		if err == nil {
			err = ErrClosed
		}
		for _, c := range back {
			c.err = err
			close(c.done)
		}
		return
	}
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Answered keeps the answers of gateway_wait op opID until
// DeliverAnswered: they may reach their callers only once the commit
// that journals them is done.
func (s *Session) Answered(opID string, calls []operations.GatewayCall) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answered[opID] = calls
}

// DeliverAnswered hands the answers Answered kept for op opID to their
// callers and reports whether it kept any (after a restart it holds none:
// the journal has them). Call it only once the op's result is journaled.
func (s *Session) DeliverAnswered(opID string) bool {
	s.mu.Lock()
	calls, ok := s.answered[opID]
	delete(s.answered, opID)
	s.mu.Unlock()
	for i := range calls {
		c := &calls[i]
		s.Deliver(c.ID, opID, c.Request, operations.Result{Kind: operations.KindGenerate, Error: c.Error, Code: c.Code, Data: c.Result})
	}
	return ok
}

// Deliver hands a journaled answer to the call it answers (by the call's
// id). An answer no call waits for (an answer of an earlier attempt,
// journaled after its caller was gone) is kept for replay.
func (s *Session) Deliver(callID, opID string, req operations.GenerateRequest, res operations.Result) {
	s.mu.Lock()
	c := s.waiting[callID]
	delete(s.waiting, callID)
	if g := operations.Generate.Result(res); c == nil && res.Error == "" && g != nil {
		s.recordLocked(Recorded{OpID: opID, CallID: callID, Request: req, Result: *g})
	}
	s.mu.Unlock()
	if c != nil {
		c.opID, c.res = opID, res
		close(c.done)
	}
}

// Fail answers every waiting and later call with err (the run reached a
// limit, or its session run ended).
func (s *Session) Fail(err error) {
	s.mu.Lock()
	if s.failed == nil {
		s.failed = err
	}
	pending := s.drainLocked()
	s.mu.Unlock()
	for _, c := range pending {
		c.err = err
		close(c.done)
	}
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

func (s *Session) drainLocked() []*call {
	out := s.queue
	for _, c := range s.waiting {
		out = append(out, c)
	}
	s.queue, s.waiting = nil, map[string]*call{}
	return out
}

// Close ends the session's calls: calls not yet taken fail with
// ErrClosed, later ones too, and Take reports closed. Calls already taken
// keep waiting for their generate (Deliver), so Close never loses a paid
// answer. The session stays registered (its run's wait op may not have
// found it yet) until Release. Close is idempotent.
func (s *Session) Close() {
	s.mu.Lock()
	s.closed = true
	queued := s.queue
	s.queue = nil
	s.mu.Unlock()
	for _, c := range queued {
		c.err = ErrClosed
		close(c.done)
	}
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Release closes the session and unregisters it: its token opens nothing
// any more. Call it once the session run has ended. It is idempotent.
func (s *Session) Release() {
	s.Close()
	s.gw.remove(s)
}

// Trace returns the session's calls in the order they were made.
func (s *Session) Trace() []Trace {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]Trace(nil), s.trace...)
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}

// resolveModel picks the model of a call: the one it names when the
// session allows it, else the default.
func (s *Session) resolveModel(name string) string {
	if s.models[name] {
		return name
	}
	return s.model
}
