package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Action is one tool call: the tool name (resolved as in wire §4), its
// params and its timeout (0: server.default_timeout).
type Action struct {
	Action  string
	Params  map[string]any
	Timeout time.Duration
}

// Execute runs one action for c and answers its envelope. A stateless tool
// runs without a session; a stateful one on c's session of its resource type
// (calls on one session run one at a time, and the session's TTL is
// refreshed), or on a temporary session created for the call and destroyed
// after it (meta.temporary_session). A required parameter missing is 4003;
// a call past its timeout is 5006 and its session stays usable.
func (s *Service) Execute(ctx context.Context, c Caller, a Action) Envelope {
	return s.execute(ctx, c, a, c.trace())
}

func (s *Service) execute(ctx context.Context, c Caller, a Action, trace string) Envelope {
	start := time.Now()
	meta := Meta{Tool: a.Action, TraceID: trace}
	done := func(env Envelope) Envelope {
		env.Meta.ExecutionTimeMS = msSince(start)
		return env
	}
	t, rerr := s.resolve(a.Action)
	if rerr != nil {
		meta.Tool = EchoString(a.Action, 200, nil)
		return done(fail(rerr.Code, rerr.Message, rerr.Data, meta))
	}
	meta.Tool, meta.ResourceType = t.Name, t.backend.name
	if a.Params == nil {
		a.Params = map[string]any{}
	}
	for _, p := range t.required {
		if v, ok := a.Params[p]; !ok || v == nil {
			return done(fail(CodeMissingRequiredField, "Missing required parameter: "+p, map[string]any{"parameter": p}, meta))
		}
	}
	// The worker's slot is held until the tool's Run returns, a timed-out
	// one included: what it started still runs.
	release, err := s.acquireWorker(ctx, c)
	if err != nil {
		return done(fail(CodeUnexpectedError, err.Error(), nil, meta))
	}
	handed := false
	defer func() {
		if !handed {
			release()
		}
	}()
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = s.cfg.Server.DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Close ends the calls still running.
	defer context.AfterFunc(s.stopCtx, cancel)()
	if err := s.warm(ctx, t.backend); err != nil {
		if ctx.Err() != nil {
			return done(timedOut(timeout, meta))
		}
		return done(fail(CodeBackendNotInitialized, "Backend "+t.backend.name+" is not warmed up: "+err.Error(), nil, meta))
	}
	call := &Call{WorkerID: c.Worker, Params: a.Params}
	if t.Stateless {
		handed = true
		return done(s.run(ctx, t, call, timeout, meta, release))
	}
	key := c.key(t.backend.name)
	if e := s.lockSession(key); e != nil {
		id := e.s.ID
		meta.SessionID = &id
		call.Session = &e.s
		s.touch(e)
		handed = true
		env := s.run(ctx, t, call, timeout, meta, func() { s.unlockSession(e); release() })
		s.touch(e)
		return done(env)
	}
	// A temporary session of this call alone: never in the table, so no
	// other call can find it (AgentFlow's temporary-session race).
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return done(fail(CodeUnexpectedError, ErrClosed.Error(), nil, meta))
	}
	e := s.newEntryLocked(key, "", start)
	s.mu.Unlock()
	e.auto = true
	e.mu.Lock()
	id := e.s.ID
	meta.SessionID, meta.TemporarySession = &id, true
	if err := s.setUp(ctx, e, nil); err != nil {
		e.mu.Unlock()
		return done(fail(CodeResourceNotInitialized, "Session creation failed: "+err.Error(), nil, meta))
	}
	call.Session = &e.s
	handed = true
	env := s.run(ctx, t, call, timeout, meta, func() { e.mu.Unlock(); release() })
	// run has released e.mu; destroy once the run is really over.
	s.destroyEntry(context.WithoutCancel(ctx), e)
	return done(env)
}

// run calls t.Run and answers at the latest when ctx ends. Its goroutine
// outlives a call that timed out until Run returns, holding the session's
// lock (unlock, when not nil, releases the session the caller locked; it
// is called when the run ends), so the session's next call waits for it.
func (s *Service) run(ctx context.Context, t *toolEntry, call *Call, timeout time.Duration, meta Meta, unlock func()) Envelope {
	type outcome struct {
		data any
		err  error
	}
	ch := make(chan outcome, 1)
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		if unlock != nil {
			defer unlock()
		}
		var o outcome
		func() {
			defer func() {
				if r := recover(); r != nil {
					o = outcome{err: fmt.Errorf("tool %s panicked: %v", t.Name, r)}
				}
			}()
			o.data, o.err = t.Run(ctx, call)
		}()
		ch <- o
	}()
	var o outcome
	select {
	case o = <-ch:
	case <-ctx.Done():
		select {
		case o = <-ch:
		default:
			o.err = ctx.Err()
		}
	}
	if o.err == nil {
		return ok(o.data, meta)
	}
	var te *Error
	if errors.As(o.err, &te) {
		msg := te.Message
		if msg == "" {
			msg = "error"
		}
		return fail(te.Code, msg, te.Data, meta)
	}
	if errors.Is(o.err, context.DeadlineExceeded) && ctx.Err() != nil {
		return timedOut(timeout, meta)
	}
	if errors.Is(o.err, context.Canceled) && ctx.Err() != nil {
		return fail(CodeUnexpectedError, "call cancelled", nil, meta)
	}
	return fail(CodeExecutionError, o.err.Error(), nil, meta)
}

func timedOut(timeout time.Duration, meta Meta) Envelope {
	secs := strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64)
	return fail(CodeTimeout, "Tool execution timed out after "+secs+"s", map[string]any{"timeout": timeout.Seconds()}, meta)
}

// BatchResult is the data of a batch's envelope.
type BatchResult struct {
	Results      []Envelope `json:"results"`
	Total        int        `json:"total"`
	Executed     int        `json:"executed"`
	SuccessCount int        `json:"success_count"`
}

// Batch runs actions for c: in order, stopping after the first failure when
// stopOnError, or concurrently when parallel (stopOnError is then ignored,
// as in AgentFlow), at most server.max_batch_parallel at a time (and, as
// every call, at most server.max_worker_parallel of the worker's at once);
// results keep the request's order. The envelope's code is 0 when every
// action ran and succeeded (an empty batch too), 5009 when none succeeded,
// 5010 otherwise.
func (s *Service) Batch(ctx context.Context, c Caller, actions []Action, parallel, stopOnError bool) Envelope {
	start, trace := time.Now(), c.trace()
	var results []Envelope
	if parallel {
		results = make([]Envelope, len(actions))
		var next atomic.Int64
		var wg sync.WaitGroup
		for range min(len(actions), s.cfg.Server.MaxBatchParallel) {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < len(actions); i = int(next.Add(1) - 1) {
					results[i] = s.execute(ctx, c, actions[i], trace)
				}
			})
		}
		wg.Wait()
	} else {
		for _, a := range actions {
			env := s.execute(ctx, c, a, trace)
			results = append(results, env)
			if env.Code != 0 && stopOnError {
				break
			}
		}
	}
	if results == nil {
		results = []Envelope{}
	}
	r := BatchResult{Results: results, Total: len(actions), Executed: len(results)}
	for _, e := range results {
		if e.Code == 0 {
			r.SuccessCount++
		}
	}
	meta := Meta{Tool: "batch:execute", ResourceType: "batch", TraceID: trace, ExecutionTimeMS: msSince(start)}
	switch failed := r.Executed - r.SuccessCount; {
	case failed == 0 && r.Executed == r.Total:
		return ok(r, meta)
	case r.SuccessCount == 0 && r.Total > 0:
		return fail(CodeAllRequestsFailed, "All actions failed", r, meta)
	default:
		return fail(CodePartialFailure, fmt.Sprintf("%d out of %d actions failed", failed, r.Executed), r, meta)
	}
}

// workerSlots bounds the calls of one worker running at once.
type workerSlots struct {
	ch   chan struct{} // one token per call running
	refs int           // calls holding or waiting for a token; guarded by Service.mu
}

// acquireWorker waits for one of c's worker's server.max_worker_parallel
// slots (until ctx ends or the service closes) and returns its release.
func (s *Service) acquireWorker(ctx context.Context, c Caller) (func(), error) {
	key := [2]string{c.Caller, c.Worker}
	s.mu.Lock()
	w := s.workers[key]
	if w == nil {
		w = &workerSlots{ch: make(chan struct{}, s.cfg.Server.MaxWorkerParallel)}
		s.workers[key] = w
	}
	w.refs++
	s.mu.Unlock()
	drop := func() {
		s.mu.Lock()
		if w.refs--; w.refs == 0 {
			delete(s.workers, key)
		}
		s.mu.Unlock()
	}
	select {
	case w.ch <- struct{}{}:
		return func() { <-w.ch; drop() }, nil
	case <-ctx.Done():
		drop()
		return nil, fmt.Errorf("waiting for one of the worker's %d call slots (server.max_worker_parallel): %w", cap(w.ch), ctx.Err())
	case <-s.stop:
		drop()
		return nil, ErrClosed
	}
}
