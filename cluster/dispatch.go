package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/flockrun/flock/state"
	jsstore "github.com/flockrun/flock/state/jetstream"
	"github.com/flockrun/flock/workflows"
)

// Names of the dispatch stream, its consumer and subjects.
const (
	// ClaimStream is the work-queue stream of run claims.
	ClaimStream = "FLOCK_CLAIMS"
	// ClaimConsumer is the durable pull consumer every node pulls from.
	ClaimConsumer = "flock-drivers"
	claimPrefix   = "flock.claims."
	controlPrefix = "flock.ctl."
	eventPrefix   = "flock.events."
)

// Defaults of DispatchConfig.
const (
	DefaultAckWait       = 3 * time.Second
	DefaultMaxDeliver    = 50
	DefaultMaxAckPending = 100_000
	DefaultSweepInterval = 10 * time.Second
)

// JetStream's error codes for a publish whose expected last subject
// sequence does not hold: here, the run already has a claim queued
// (10071), or another publish of a claim for the run is in flight in a
// clustered stream (10164).
const (
	errWrongLastSequence         = 10071
	errWrongLastSequenceInFlight = 10164
)

// DispatchConfig configures a Dispatcher.
type DispatchConfig struct {
	// Conn is the connection to the NATS cluster (required).
	Conn *nats.Conn
	// Store is the shared run store (required): the sweep lists its
	// unfinished runs.
	Store state.Reader
	// Node names this node in logs.
	Node string
	// Replicas of the claim stream and consumer: 3 in a cluster, 1 on a
	// single node (default 1).
	Replicas int
	// AckWait is how long a node may go silent before its claims are
	// delivered to another node (default DefaultAckWait). The driving
	// node acknowledges progress every AckWait/3; the executor's lease
	// TTL should equal it, so that a dead node's runs are taken over
	// within AckWait plus a moment.
	AckWait time.Duration
	// MaxDeliver bounds the deliveries of one claim (default
	// DefaultMaxDeliver); a claim delivered that often is terminated and
	// the sweep queues the run again if it is still unfinished.
	MaxDeliver int
	// MaxAckPending caps the claims held at once across the cluster; it
	// must exceed the peak number of live runs (default
	// DefaultMaxAckPending).
	MaxAckPending int
	// SweepInterval is how often the node queues the unfinished runs that
	// no node holds and that are due (a wake whose timer died with its
	// node, a run whose claim was lost). Default DefaultSweepInterval.
	SweepInterval time.Duration
	// Logger logs claims taken over and failures.
	Logger *slog.Logger
}

// Dispatcher hands runs to the nodes of a cluster through a JetStream
// work queue (see the package doc). It implements workflows.Dispatcher,
// workflows.Controller and workflows.EventPublisher.
type Dispatcher struct {
	cfg DispatchConfig
	nc  *nats.Conn
	js  jetstream.JetStream
	log *slog.Logger

	ex     *workflows.Executor // set by Start
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // message handlers, the ack ticker, the sweep, wake timers

	// starting is Start's goroutine, which binds the consumer and begins
	// to consume; stopStart stops it.
	starting  sync.WaitGroup
	stopStart context.CancelFunc
	cc        jetstream.ConsumeContext // set by Start's goroutine; guarded by mu

	// Counters, for tests and benchmarks.
	delivered   atomic.Int64 // claims received
	redelivered atomic.Int64 // claims received more than once (takeovers)

	mu     sync.Mutex
	held   map[string]*held       // runs driven here by id; guarded by mu
	timers map[string]*time.Timer // wakes of parked runs; guarded by mu
	closed bool                   // guarded by mu
}

// held is the claim of a run driven here.
type held struct {
	msg jetstream.Msg
	// ctl is the run's control subject, subscribed before the executor
	// takes the run up, so that a node that asks after the take-up is
	// answered by this one (nil if the subscription failed).
	ctl *nats.Subscription
	// taking is closed once the executor's Drive of the run returned: a
	// control request that arrives while the run is being taken up waits
	// for it instead of hearing "not driven".
	taking chan struct{}
}

// NewDispatcher returns a dispatcher; Provision creates its stream and
// Start begins pulling claims.
func NewDispatcher(cfg DispatchConfig) (*Dispatcher, error) {
	if cfg.Conn == nil {
		return nil, fmt.Errorf("%w: NATS connection: required", ErrConfig)
	}
	if cfg.Store == nil {
		return nil, fmt.Errorf("%w: store: required", ErrConfig)
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	if cfg.Replicas < 0 || cfg.Replicas > 5 {
		return nil, fmt.Errorf("%w: replicas %d: want 1 to 5", ErrConfig, cfg.Replicas)
	}
	if cfg.AckWait == 0 {
		cfg.AckWait = DefaultAckWait
	}
	if cfg.AckWait < 300*time.Millisecond {
		return nil, fmt.Errorf("%w: ack wait %s: at least 300ms", ErrConfig, cfg.AckWait)
	}
	if cfg.MaxDeliver == 0 {
		cfg.MaxDeliver = DefaultMaxDeliver
	}
	if cfg.MaxAckPending == 0 {
		cfg.MaxAckPending = DefaultMaxAckPending
	}
	if cfg.SweepInterval == 0 {
		cfg.SweepInterval = DefaultSweepInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	js, err := jetstream.New(cfg.Conn)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	d := &Dispatcher{cfg: cfg, nc: cfg.Conn, js: js, log: cfg.Logger,
		held: make(map[string]*held), timers: make(map[string]*time.Timer)}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	return d, nil
}

// Provision makes sure the claim stream and its consumer exist as this
// node wants them, creating or updating what is missing or configured
// otherwise (AckWait, MaxDeliver, MaxAckPending, replicas), retrying
// until ctx ends while the cluster elects its leaders. Where everything is
// there already it only reads it.
func (d *Dispatcher) Provision(ctx context.Context) error {
	return retry(ctx, func(ctx context.Context) error {
		_, err := d.provisionOnce(ctx, d.consumerConfig())
		if err != nil {
			d.cfg.Logger.Debug("provision the claim queue", "node", d.cfg.Node, "err", err)
		}
		return err
	})
}

// consumerConfig is the claim consumer's configuration.
func (d *Dispatcher) consumerConfig() jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       ClaimConsumer,
		Description:   "flock: the nodes that drive runs",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       d.cfg.AckWait,
		MaxDeliver:    d.cfg.MaxDeliver,
		MaxAckPending: d.cfg.MaxAckPending,
		FilterSubject: claimPrefix + ">",
		Replicas:      d.cfg.Replicas,
	}
}

// provisionOnce is one try of Provision; it returns the consumer.
func (d *Dispatcher) provisionOnce(ctx context.Context, ccfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	st, err := d.js.Stream(ctx, ClaimStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) || (err == nil && st.CachedInfo().Config.Replicas != d.cfg.Replicas) {
		_, err = d.js.CreateOrUpdateStream(ctx, claimStreamConfig(d.cfg.Replicas))
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", ClaimStream, err)
	}
	c, err := d.js.Consumer(ctx, ClaimStream, ClaimConsumer)
	if err == nil {
		have := c.CachedInfo().Config
		if have.AckWait == ccfg.AckWait && have.MaxDeliver == ccfg.MaxDeliver &&
			have.MaxAckPending == ccfg.MaxAckPending && have.Replicas == ccfg.Replicas {
			return c, nil
		}
	} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("consumer %s: %w", ClaimConsumer, err)
	}
	if c, err = d.js.CreateOrUpdateConsumer(ctx, ClaimStream, ccfg); err != nil {
		return nil, fmt.Errorf("create consumer %s: %w", ClaimConsumer, err)
	}
	return c, nil
}

// retry calls f until it succeeds or ctx ends, each try bounded to 5 s.
func retry(ctx context.Context, f func(context.Context) error) error {
	return retryEvery(ctx, 5*time.Second, 250*time.Millisecond, f)
}

// retryEvery calls f until it succeeds or ctx ends, each try bounded to
// try, pausing pause between tries.
func retryEvery(ctx context.Context, try, pause time.Duration, f func(context.Context) error) error {
	var last error
	for {
		tctx, cancel := context.WithTimeout(ctx, try)
		err := f(tctx)
		cancel()
		if err == nil {
			return nil
		}
		last = err
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: %w", ErrNotReady, last)
		case <-t.C:
		}
	}
}

// Start pulls claims and drives them on ex until Close. ex must have been
// built with d as its Config.Dispatcher and started. It returns at once:
// a goroutine provisions the claim stream and its consumer as Provision
// does (an update of their configuration included), asking every second
// while they do not answer (a restarted node whose streams elect new
// leaders), and then pulls claims.
func (d *Dispatcher) Start(ex *workflows.Executor) error {
	if ex == nil {
		return fmt.Errorf("%w: start the dispatcher: no executor", ErrConfig)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ex != nil || d.closed {
		return fmt.Errorf("%w: start the dispatcher: started or closed already", ErrConfig)
	}
	d.ex = ex
	ctx, cancel := context.WithCancel(d.ctx)
	d.stopStart = cancel
	d.starting.Add(1)
	go func() {
		defer d.starting.Done()
		d.consume(ctx)
	}()
	return nil
}

// consume binds the claim consumer (provisioning it) and begins to pull
// claims, trying again until it succeeds or ctx ends.
func (d *Dispatcher) consume(ctx context.Context) {
	ccfg := d.consumerConfig()
	// Few buffered claims per node, so that claims spread over the nodes
	// that pull and none waits in a buffer past its AckWait. Pull requests
	// expire after AckWait, so that a pull lost with a dead node (the
	// consumer's leader) is made again at once: a takeover then waits
	// for AckWait, not for the 30 s default expiry.
	expiry := max(d.cfg.AckWait, time.Second)
	err := retryEvery(ctx, time.Second, 100*time.Millisecond, func(ctx context.Context) error {
		cons, err := d.provisionOnce(ctx, ccfg)
		if err != nil {
			d.log.Debug("claim consumer not bound yet", "node", d.cfg.Node, "err", err)
			return err
		}
		cc, err := cons.Consume(d.receive, jetstream.PullMaxMessages(4),
			jetstream.PullExpiry(expiry), jetstream.PullHeartbeat(max(expiry/4, 500*time.Millisecond)),
			jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
				d.log.Debug("claim consumer", "node", d.cfg.Node, "err", err)
			}))
		if err != nil {
			d.log.Warn("consume claims", "node", d.cfg.Node, "err", err)
			return fmt.Errorf("consume claims: %w", err)
		}
		d.mu.Lock()
		d.cc = cc
		d.mu.Unlock()
		return nil
	})
	if err != nil {
		return // closed before the consumer answered
	}
	d.log.Debug("pulling claims", "node", d.cfg.Node)
	d.wg.Add(2)
	go func() {
		defer d.wg.Done()
		d.progress()
	}()
	go func() {
		defer d.wg.Done()
		d.sweep()
	}()
}

// Close stops pulling claims and waits for the dispatcher's goroutines.
// Call it after the executor stopped (whose unloaded runs Nak their claims
// for another node), before closing the connection.
func (d *Dispatcher) Close() {
	d.mu.Lock()
	d.closed = true
	for id, t := range d.timers {
		if t.Stop() {
			d.wg.Done()
		}
		delete(d.timers, id)
	}
	stop := d.stopStart
	d.mu.Unlock()
	if stop != nil {
		stop()
		d.starting.Wait()
	}
	d.mu.Lock()
	cc := d.cc
	d.mu.Unlock()
	if cc != nil {
		cc.Stop()
		<-cc.Closed()
	}
	d.cancel()
	d.wg.Wait()
}

// Check reports whether the claim stream and its consumer still exist
// and answer (their leaders give their info): an error wrapping
// state.ErrUnavailable while they do not answer (electing a leader).
func (d *Dispatcher) Check(ctx context.Context) error {
	if _, err := d.js.Consumer(ctx, ClaimStream, ClaimConsumer); err != nil {
		return fmt.Errorf("stream %s, consumer %s: %w", ClaimStream, ClaimConsumer, jsstore.Unavailable(err))
	}
	return nil
}

// Stats counts the claims this node received and, of them, those
// delivered more than once (taken over from a node that died or let go).
func (d *Dispatcher) Stats() (delivered, redelivered int64) {
	return d.delivered.Load(), d.redelivered.Load()
}

// Held returns the number of claims this node holds (runs it drives).
func (d *Dispatcher) Held() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.held)
}

// receive is the consumer's callback: each claim is handled on its own
// goroutine, owned by d.
func (d *Dispatcher) receive(msg jetstream.Msg) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		_ = msg.Nak()
		return
	}
	d.wg.Add(1)
	d.mu.Unlock()
	go func() {
		defer d.wg.Done()
		d.handle(msg)
	}()
}

// handle drives the run a claim names, or settles the claim.
func (d *Dispatcher) handle(msg jetstream.Msg) {
	id, ok := runOf(msg.Subject(), claimPrefix)
	if !ok {
		d.log.Error("claim with a bad subject; dropped", "subject", msg.Subject())
		_ = msg.Term()
		return
	}
	d.delivered.Add(1)
	delivered := uint64(1)
	if meta, err := msg.Metadata(); err == nil {
		delivered = meta.NumDelivered
	}
	if delivered > 1 {
		d.redelivered.Add(1)
	}
	d.mu.Lock()
	if old := d.held[id]; old != nil {
		// Delivered again to the node that holds it: the new delivery
		// is the one to acknowledge.
		old.msg = msg
		d.mu.Unlock()
		return
	}
	h := &held{msg: msg, taking: make(chan struct{})}
	d.held[id] = h
	d.mu.Unlock()
	defer close(h.taking)
	d.subscribeControl(id, h)

	// A node that died held the run's store lease as long as the claim;
	// the lease lapses within about the same AckWait, so try for a
	// little longer before handing the claim back.
	deadline := time.Now().Add(d.cfg.AckWait + time.Second)
	for {
		// Each try is bounded: while JetStream elects a new leader for a
		// stream whose leader died, reads sent to the old one are never
		// answered, and a short try retried soon resumes the run sooner
		// after the election than one that waits out the client's 5 s.
		ctx, cancel := context.WithTimeout(d.ctx, max(3*time.Second, 2*d.cfg.AckWait))
		err := d.ex.Drive(ctx, id)
		cancel()
		switch {
		case err == nil:
			if delivered > 1 {
				d.log.Info("run taken over", "node", d.cfg.Node, "run", id, "delivery", delivered)
			}
			return
		case errors.Is(err, state.ErrLeaseHeld) && time.Now().Before(deadline) && d.ctx.Err() == nil:
			_ = msg.InProgress()
			t := time.NewTimer(100 * time.Millisecond)
			select {
			case <-t.C:
			case <-d.ctx.Done():
				t.Stop()
			}
			continue
		}
		d.drop(id, msg)
		switch {
		case errors.Is(err, workflows.ErrEnded), errors.Is(err, workflows.ErrPaused):
			_ = msg.Ack()
		case errors.Is(err, workflows.ErrStopped), d.ctx.Err() != nil:
			_ = msg.Nak()
		case delivered >= uint64(d.cfg.MaxDeliver):
			d.log.Error("claim delivered too often; terminated (the sweep queues the run again while it is unfinished)",
				"node", d.cfg.Node, "run", id, "deliveries", delivered, "err", err)
			_ = msg.Term()
		case errors.Is(err, state.ErrLeaseHeld):
			_ = msg.NakWithDelay(d.cfg.AckWait)
		default:
			d.log.Warn("run not driven; its claim is retried", "node", d.cfg.Node, "run", id, "err", err)
			_ = msg.NakWithDelay(250 * time.Millisecond)
		}
		return
	}
}

// subscribeControl subscribes run id's control subject for h, and flushes
// the subscription to the server, before the executor takes the run up:
// a node that reads the head this one writes then reaches this one.
func (d *Dispatcher) subscribeControl(id string, h *held) {
	sub, err := d.nc.Subscribe(controlPrefix+token(id), func(m *nats.Msg) { d.answer(id, m) })
	if err != nil {
		d.log.Warn("subscribe control subject; cancel and pause from other nodes act on the store", "run", id, "err", err)
		return
	}
	d.mu.Lock()
	h.ctl = sub
	d.mu.Unlock()
	// Only a head start: an asker that finds nobody writes the store
	// fenced by the head it read before asking, so a take-up in between
	// makes it ask again (workflows). A connection that is reconnecting
	// is not waited for.
	if err := d.nc.FlushTimeout(time.Second); err != nil {
		d.log.Debug("flush control subscription", "run", id, "err", err)
	}
}

// takeUpWait bounds how long a control request that arrives while its run
// is being taken up here waits for the take-up: after it, the asker hears
// "not driven" and writes the store, fenced as above.
const takeUpWait = 2 * time.Second

// takingUp returns the channel closed once the executor's take-up of run
// id returned, nil if this node holds no claim of it.
func (d *Dispatcher) takingUp(id string) chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if h := d.held[id]; h != nil {
		return h.taking
	}
	return nil
}

// drop forgets the claim of a run that is not driven here.
func (d *Dispatcher) drop(id string, msg jetstream.Msg) {
	d.mu.Lock()
	h := d.held[id]
	if h == nil || h.msg != msg {
		d.mu.Unlock()
		return
	}
	delete(d.held, id)
	d.mu.Unlock()
	if h.ctl != nil {
		_ = h.ctl.Unsubscribe()
	}
}

// Unloaded settles the claim of a run that stopped being driven here
// (workflows.Dispatcher).
func (d *Dispatcher) Unloaded(id string, u workflows.Unload) {
	d.mu.Lock()
	h := d.held[id]
	delete(d.held, id)
	d.mu.Unlock()
	if h == nil {
		return
	}
	if h.ctl != nil {
		_ = h.ctl.Unsubscribe()
	}
	switch u.Reason {
	case workflows.UnloadSettled:
		_ = h.msg.Ack()
	case workflows.UnloadParked:
		_ = h.msg.Ack()
		d.wakeAt(id, u.WakeAt)
	case workflows.UnloadStopped:
		_ = h.msg.Nak()
	case workflows.UnloadFailed:
		_ = h.msg.NakWithDelay(time.Second)
	case workflows.UnloadLost:
		// Another node holds the run (its claim was delivered there);
		// an acknowledgement from here could only confuse that.
	}
}

// Enqueue queues a claim for run id (workflows.Dispatcher): at once, or
// by a timer on this node at wake (the sweep covers a timer lost with its
// node). A run that already has a claim queued or held is left as it is.
func (d *Dispatcher) Enqueue(ctx context.Context, id string, wake time.Time) error {
	if !wake.IsZero() && time.Until(wake) > 0 {
		d.wakeAt(id, wake)
		return nil
	}
	_, err := d.js.Publish(ctx, claimPrefix+token(id), []byte(id),
		jetstream.WithExpectLastSequencePerSubject(0))
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == errWrongLastSequence || apiErr.ErrorCode == errWrongLastSequenceInFlight) {
		return nil // already queued or held, or being queued
	}
	if err != nil {
		return fmt.Errorf("publish claim: %w", err)
	}
	return nil
}

// wakeAt enqueues run id at t, by a timer owned by d.
func (d *Dispatcher) wakeAt(id string, t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	if old := d.timers[id]; old != nil && old.Stop() {
		d.wg.Done()
	}
	d.wg.Add(1)
	var tm *time.Timer
	tm = time.AfterFunc(time.Until(t), func() {
		defer d.wg.Done()
		d.mu.Lock()
		if d.timers[id] == tm {
			delete(d.timers, id)
		}
		d.mu.Unlock()
		ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
		defer cancel()
		if err := d.Enqueue(ctx, id, time.Time{}); err != nil {
			d.log.Warn("enqueue a woken run; the sweep retries", "run", id, "err", err)
		}
	})
	d.timers[id] = tm
}

// progress tells JetStream, every AckWait/3, that the claims held here
// are in progress, so that they are not delivered to another node.
func (d *Dispatcher) progress() {
	t := time.NewTicker(d.cfg.AckWait / 3)
	defer t.Stop()
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-t.C:
		}
		d.mu.Lock()
		msgs := make([]jetstream.Msg, 0, len(d.held))
		for _, h := range d.held {
			msgs = append(msgs, h.msg)
		}
		d.mu.Unlock()
		for _, m := range msgs {
			_ = m.InProgress()
		}
	}
}

// sweep queues, every SweepInterval, the unfinished runs that are running,
// due, and not driven here; a run whose claim is queued or held elsewhere
// is left alone (Enqueue).
func (d *Dispatcher) sweep() {
	t := time.NewTicker(d.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-t.C:
		}
		heads, err := d.cfg.Store.Unfinished(d.ctx)
		if err != nil {
			d.log.Warn("sweep: list unfinished runs", "node", d.cfg.Node, "err", err)
			continue
		}
		now := time.Now()
		for _, h := range heads {
			if h.Status != state.StatusRunning || (h.WakeAt != nil && h.WakeAt.After(now)) {
				continue
			}
			d.mu.Lock()
			_, mine := d.held[h.ID]
			d.mu.Unlock()
			if mine {
				continue
			}
			if err := d.Enqueue(d.ctx, h.ID, time.Time{}); err != nil && d.ctx.Err() == nil {
				d.log.Warn("sweep: enqueue run", "node", d.cfg.Node, "run", h.ID, "err", err)
			}
		}
	}
}

// controlReply is the answer to a control request.
type controlReply struct {
	// Code is "" (done), "not_driven", "ended" or "error".
	Code  string `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
	// Live is what holds the run, the answer to an actionLive request.
	Live *workflows.Live `json:"live,omitempty"`
}

// actionLive asks the driving node what holds a run (Dispatcher.Live);
// it is answered by the dispatcher, not the executor's Control.
const actionLive workflows.Action = "live"

// answer serves a control request for run id driven here.
func (d *Dispatcher) answer(id string, m *nats.Msg) {
	ctx, cancel := context.WithTimeout(d.ctx, time.Minute)
	defer cancel()
	var rep controlReply
	var req workflows.ControlRequest
	err := json.Unmarshal(m.Data, &req)
	if err == nil && req.Action == actionLive {
		l := d.ex.Live(id)
		rep.Live = &l
		b, _ := json.Marshal(rep)
		_ = m.Respond(b)
		return
	}
	if err == nil {
		err = d.ex.Control(ctx, id, req)
		if errors.Is(err, workflows.ErrNotDriven) {
			// Being taken up here: answer once the executor drives
			// the run, or knows it will not.
			if taking := d.takingUp(id); taking != nil {
				t := time.NewTimer(takeUpWait)
				select {
				case <-taking:
					err = d.ex.Control(ctx, id, req)
				case <-t.C:
				case <-ctx.Done():
				}
				t.Stop()
			}
		}
	}
	rep.Code = ""
	for _, c := range controlCodes {
		if errors.Is(err, c.err) {
			rep.Code = c.code
			break
		}
	}
	if err != nil {
		if rep.Code == "" {
			rep.Code = "error"
		}
		rep.Error = err.Error()
	}
	b, _ := json.Marshal(rep)
	_ = m.Respond(b)
}

// controlCodes name the errors a control reply carries, so that the
// asking node returns the same sentinel as the driving one.
var controlCodes = []struct {
	code string
	err  error
}{
	{"not_driven", workflows.ErrNotDriven},
	{"ended", workflows.ErrEnded},
	{"answered", workflows.ErrAnswered},
	{"no_question", workflows.ErrNoQuestion},
	{"bad_request", workflows.ErrBadRequest},
}

// Control asks the node that drives run id to cancel, pause or answer it
// (workflows.Controller); handled is false when no node drives it.
func (d *Dispatcher) Control(ctx context.Context, id string, req workflows.ControlRequest) (bool, error) {
	a := req.Action
	data, err := json.Marshal(req)
	if err != nil {
		return true, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Minute)
		defer cancel()
	}
	m, asked, err := d.ask(ctx, a, controlPrefix+token(id), data)
	// After an ask that went unanswered (it may have applied), "not
	// driven" or "ended" may be its own doing: the caller reads the run
	// again (state.ErrUnavailable, which its control operations wait
	// out) instead of acting on the store or reporting an ended run.
	unsure := func() (bool, error) {
		return true, fmt.Errorf("%w: %s run %s: the node that drives it did not answer %d time(s), and then no longer drove it",
			state.ErrUnavailable, a, id, asked-1)
	}
	if errors.Is(err, nats.ErrNoResponders) {
		if asked > 1 {
			return unsure()
		}
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("%s run %s on the node that drives it: %w", a, id, err)
	}
	var rep controlReply
	if err := json.Unmarshal(m.Data, &rep); err != nil {
		return true, fmt.Errorf("%s run %s: bad reply from the node that drives it: %w", a, id, err)
	}
	switch {
	case rep.Code == "":
		return true, nil
	case asked > 1 && (rep.Code == "not_driven" || rep.Code == "ended"):
		return unsure()
	case rep.Code == "not_driven":
		return false, nil
	}
	for _, c := range controlCodes {
		if rep.Code == c.code {
			return true, fmt.Errorf("%w: %s", c.err, rep.Error)
		}
	}
	return true, fmt.Errorf("%s run %s on the node that drives it: %s", a, id, rep.Error)
}

// controlReask is how long a node waits for the answer to a cancel or a
// pause before it asks again: core NATS carries a request and its reply
// at most once (a reply was lost while a restarted NATS server rejoined
// the cluster, and the asker waited its whole minute), and both are safe
// to ask twice. An answer to a question is asked once.
const controlReask = 5 * time.Second

// ask sends a control request on subject until it is answered, ctx ends,
// or (for an answer to a question) once; it returns the reply and how
// many times it asked.
func (d *Dispatcher) ask(ctx context.Context, a workflows.Action, subject string, data []byte) (*nats.Msg, int, error) {
	for asked := 1; ; asked++ {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if a == workflows.ActionCancel || a == workflows.ActionPause {
			actx, cancel = context.WithTimeout(ctx, controlReask)
		}
		m, err := d.nc.RequestWithContext(actx, subject, data)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			d.log.Debug("control request not answered; asking again", "node", d.cfg.Node, "subject", subject, "asked", asked)
			continue
		}
		return m, asked, err
	}
}

// Live asks the node that drives run id what holds it (stalled commits,
// waits); nothing when no node drives it or the node does not answer
// before ctx ends.
func (d *Dispatcher) Live(ctx context.Context, id string) workflows.Live {
	data, _ := json.Marshal(workflows.ControlRequest{Action: actionLive})
	m, err := d.nc.RequestWithContext(ctx, controlPrefix+token(id), data)
	if err != nil {
		return workflows.Live{}
	}
	var rep controlReply
	if json.Unmarshal(m.Data, &rep) != nil || rep.Live == nil {
		return workflows.Live{}
	}
	return *rep.Live
}

// PublishEvent forwards an event of a run driven here to the nodes that
// stream it (workflows.EventPublisher). Delivery is best effort: a
// subscriber that misses one reads it from the store.
func (d *Dispatcher) PublishEvent(run string, ev state.Event) {
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	_ = d.nc.Publish(eventPrefix+token(run), b)
}

// token turns a run id into one subject token: run ids may hold dots
// (children's ids), which separate tokens; '~' is not allowed in run ids.
func token(id string) string { return strings.ReplaceAll(id, ".", "~") }

// runOf returns the run id of a subject prefix+token.
func runOf(subject, prefix string) (string, bool) {
	tok, ok := strings.CutPrefix(subject, prefix)
	if !ok || tok == "" || strings.Contains(tok, ".") {
		return "", false
	}
	return strings.ReplaceAll(tok, "~", "."), true
}

var (
	_ workflows.Dispatcher     = (*Dispatcher)(nil)
	_ workflows.Controller     = (*Dispatcher)(nil)
	_ workflows.EventPublisher = (*Dispatcher)(nil)
)
