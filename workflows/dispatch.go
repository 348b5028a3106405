package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
)

// DefaultHandoffDelay is Config.HandoffDelay's default.
const DefaultHandoffDelay = 10 * time.Second

// Dispatcher hands runs to the executors of a cluster (package cluster).
// With Config.Dispatcher set, an executor drives only the runs handed to
// it (Drive): Start resumes nothing by itself, StartRun and Resume record
// the run in the store and Enqueue it, and every run that stops being
// driven here is reported to Unloaded, so that the dispatcher can settle
// its claim (acknowledge it, hand it on, or wake it later).
type Dispatcher interface {
	// Enqueue asks that some executor of the cluster drive run id (its
	// Drive), at once, or not before wake when wake is later than now.
	// Enqueueing a run that is already queued is not an error. The run is
	// written before Enqueue is called; a Dispatcher must eventually queue
	// a running run that no executor drives and no claim holds (a sweep),
	// since a failed Enqueue is only logged.
	Enqueue(ctx context.Context, id string, wake time.Time) error
	// Unloaded is told, on the run's goroutine, that this executor no
	// longer drives run id, after its lease was released. It must not
	// block.
	Unloaded(id string, u Unload)
}

// Controller is implemented by a Dispatcher that can reach the executor
// driving a run elsewhere. Cancel, Pause and Answer of a run this executor
// does not drive ask it first; handled false means no executor drives the
// run (it is queued, or parked), and the store is then written directly.
type Controller interface {
	Control(ctx context.Context, id string, req ControlRequest) (handled bool, err error)
}

// ControlRequest is a control request for a run driven elsewhere.
type ControlRequest struct {
	Action Action `json:"action"`
	// Op and Answer are ActionAnswer's question and answer.
	Op     string          `json:"op,omitempty"`
	Answer json.RawMessage `json:"answer,omitempty"`
}

// EventPublisher is implemented by a Dispatcher that forwards the events
// of the runs driven here to other nodes: every stored event in Seq order
// and every live-only one (Seq 0), on the broker's lock. It must not block.
type EventPublisher interface {
	PublishEvent(run string, ev state.Event)
}

// Action is a control request for a run.
type Action string

// Actions of Controller.Control and Executor.Control.
const (
	ActionCancel Action = "cancel"
	ActionPause  Action = "pause"
	ActionAnswer Action = "answer"
)

// UnloadReason says why a run stopped being driven here.
type UnloadReason int

// Reasons of an Unload.
const (
	// UnloadSettled: the run ended or was paused; nothing is left to do
	// until someone resumes it.
	UnloadSettled UnloadReason = iota
	// UnloadParked: the run waits for Unload.WakeAt, longer than
	// Config.HandoffDelay; it holds no lease and must be enqueued again
	// when that time comes.
	UnloadParked
	// UnloadStopped: the executor stopped; another executor should take
	// the run at once.
	UnloadStopped
	// UnloadLost: another owner wrote the run (fenced) or took its lease;
	// that owner drives it now.
	UnloadLost
	// UnloadFailed: the store failed; the run should be tried again soon.
	UnloadFailed
)

// String names r for logs.
func (r UnloadReason) String() string {
	switch r {
	case UnloadSettled:
		return "settled"
	case UnloadParked:
		return "parked"
	case UnloadStopped:
		return "stopped"
	case UnloadLost:
		return "lost"
	case UnloadFailed:
		return "failed"
	}
	return fmt.Sprintf("UnloadReason(%d)", int(r))
}

// Unload says why and until when a run stopped being driven here.
type Unload struct {
	Reason UnloadReason
	// WakeAt is when a parked run is due (UnloadParked only).
	WakeAt time.Time
}

// Drive claims run id and drives it here. The dispatcher calls it for each
// claim it receives. It returns nil when the run is being driven here
// (including when it already was), an error wrapping state.ErrLeaseHeld
// when another owner holds its lease, ErrEnded when the run has ended,
// ErrPaused when it is paused, state.ErrNotFound for an unknown run. A
// run whose WakeAt is further away than Config.HandoffDelay is loaded,
// found not due and unloaded again at once (UnloadParked).
func (e *Executor) Drive(ctx context.Context, id string) error {
	e.mu.Lock()
	stopped := e.stopped || !e.started
	_, driven := e.runs[id]
	e.mu.Unlock()
	if stopped {
		return ErrStopped
	}
	if driven {
		return nil
	}
	head, err := e.store.Run(ctx, id)
	if err != nil {
		return err
	}
	switch {
	case head.Status.Terminal():
		return fmt.Errorf("%w: run %s is %s", ErrEnded, id, head.Status)
	case head.Status == state.StatusPaused:
		return fmt.Errorf("%w: run %s", ErrPaused, id)
	}
	if _, err := e.claim(ctx, id); err != nil {
		return err
	}
	// Read the head again under the lease: the one read before may be
	// older than what the previous owner wrote last.
	if head, err = e.store.Run(ctx, id); err != nil {
		e.release(id)
		return err
	}
	if head.Status != state.StatusRunning {
		e.release(id)
		if head.Status == state.StatusPaused {
			return fmt.Errorf("%w: run %s", ErrPaused, id)
		}
		return fmt.Errorf("%w: run %s is %s", ErrEnded, id, head.Status)
	}
	if head, err = e.takeUp(ctx, head); err != nil {
		e.release(id)
		return err
	}
	return e.resume(ctx, head)
}

// takeUp writes this node into run head.ID's head as its driver
// (Run.Driver, DrivenSince), fenced by the head just read. From then on
// every commit of a node that drove the run before fails with
// state.ErrFenced, even one that does not know yet that its lease is gone.
func (e *Executor) takeUp(ctx context.Context, head state.Run) (state.Run, error) {
	now := e.now().UTC()
	head.Driver, head.DrivenSince = e.node(), &now
	c := &state.Commit{RunID: head.ID, ExpectRevision: head.Revision, Run: &head}
	if err := e.store.Commit(ctx, c); err != nil {
		return state.Run{}, fmt.Errorf("take up run %s: %w", head.ID, err)
	}
	return head, nil
}

// node names this executor in the heads of the runs it drives.
func (e *Executor) node() string {
	if e.cfg.Node != "" {
		return e.cfg.Node
	}
	return e.cfg.Owner
}

// Control cancels, pauses or answers run id if this executor drives it,
// as Cancel, Pause and Answer do; it returns ErrNotDriven, doing nothing,
// if it does not. The dispatcher calls it for control requests from other
// nodes.
func (e *Executor) Control(ctx context.Context, id string, req ControlRequest) error {
	e.mu.Lock()
	_, driven := e.runs[id]
	e.mu.Unlock()
	if !driven {
		return fmt.Errorf("%w: run %s", ErrNotDriven, id)
	}
	switch req.Action {
	case ActionCancel:
		return e.cancel(ctx, id, false)
	case ActionPause:
		return e.pause(ctx, id, false)
	case ActionAnswer:
		return e.answer(ctx, id, req.Op, req.Answer, false)
	}
	return fmt.Errorf("%w: unknown control action %q", ErrBadRequest, req.Action)
}

// remote asks the executor that drives run id elsewhere to act on it.
func (e *Executor) remote(ctx context.Context, id string, req ControlRequest) (bool, error) {
	c, ok := e.cfg.Dispatcher.(Controller)
	if !ok {
		return false, nil
	}
	return c.Control(ctx, id, req)
}

// retryFenced runs a routed control action (cancel, pause, answer) again
// when its write to the store was fenced. In cluster mode a run no node
// answers for is written directly, fenced by the head it read; a node that
// takes the run up in between changes that head, and now drives it: asked
// again, it answers. Bounded: 20 tries, 20 ms more between each.
func (e *Executor) retryFenced(ctx context.Context, action func() error) error {
	for i := 1; ; i++ {
		err := action()
		if !errors.Is(err, state.ErrFenced) || !e.dispatched() || i == 20 {
			return err
		}
		t := time.NewTimer(time.Duration(i) * 20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// unavailableWait bounds how long a request (a start, a cancel, a pause,
// a resume, an answer) waits for a store that does not answer
// (state.ErrUnavailable): a cluster elects new leaders within about 10 s,
// and a client is then answered as if nothing happened, not told to try
// again.
const unavailableWait = 15 * time.Second

// whileUnavailable calls f until it does not fail with
// state.ErrUnavailable, for at most unavailableWait or until ctx ends,
// pausing 100 ms to 1 s between tries. f must be safe to repeat (a
// commit carrying a Commit.ID, a claim).
func (e *Executor) whileUnavailable(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(unavailableWait)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		err := f()
		if !errors.Is(err, state.ErrUnavailable) || time.Now().Add(wait).After(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-e.baseCtx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// whileApplied is whileUnavailable for an action that may have applied
// before a later read of it failed (a cancel that stopped the run, then
// could not list its children): a try after one that failed with
// state.ErrUnavailable, refused with an error applied says is the mark
// of the action done (a cancel finding the run cancelled), succeeds.
func (e *Executor) whileApplied(ctx context.Context, f func() error, applied func(error) bool) error {
	again := false
	return e.whileUnavailable(ctx, func() error {
		err := f()
		if again && err != nil && applied(err) {
			return nil
		}
		again = true
		return err
	})
}

// enqueue hands run id to the dispatcher, due at wake.
//
// It is called once the run is written (started, resumed, forked): the
// run exists whatever happens here, so a failed enqueue (the claim stream
// electing a leader) is not the caller's failure. A client told "500"
// would start the run again, a second run. The run stays running with no
// claim, which the dispatcher's sweep queues (Dispatcher); the failure is
// logged.
func (e *Executor) enqueue(ctx context.Context, id string, wake time.Time) {
	if err := e.cfg.Dispatcher.Enqueue(ctx, id, wake); err != nil {
		e.log.Warn("enqueue run; the dispatcher's sweep queues it later", "run", id, "err", err)
	}
}

// dispatched reports whether the executor runs in cluster mode.
func (e *Executor) dispatched() bool { return e.cfg.Dispatcher != nil }

// handoff unloads a run whose WakeAt is further away than HandoffDelay:
// the finished result it carries is journaled, and the dispatcher enqueues
// the run again when it is due. If that commit fails, the run is
// interrupted as by any failed commit.
func (r *runner) handoff() {
	if r.carry != nil {
		c := &state.Commit{RunID: r.head.ID}
		r.takeCarry(c)
		if err := r.commit(c); err != nil {
			r.interrupted(fmt.Errorf("%w: journal op result before handoff: %w", errStore, err))
			return
		}
		r.e.broker.publish(r.head.ID, c.Events)
	}
	r.e.broker.forget(r.head.ID)
	r.unload = Unload{Reason: UnloadParked, WakeAt: *r.head.WakeAt}
}

// unloadFor maps the cause of an interruption to an Unload.
func unloadFor(cause, err error) Unload {
	switch {
	case errors.Is(cause, errLeaseLost), errors.Is(err, errLeaseLost), errors.Is(err, state.ErrFenced):
		return Unload{Reason: UnloadLost}
	case errors.Is(cause, ErrStopped):
		return Unload{Reason: UnloadStopped}
	}
	return Unload{Reason: UnloadFailed}
}

// pauseStored marks a running run that no executor drives (cluster mode:
// queued or parked) as paused in the store. The commit is fenced by head,
// which the caller read before it asked the nodes whether one drives the
// run: a node that took the run up since (and may have been out of reach
// when asked) changed the head, so the commit fails with state.ErrFenced
// and the caller asks again.
func (e *Executor) pauseStored(ctx context.Context, head state.Run) error {
	id := head.ID
	now := e.now().UTC()
	head.Status = state.StatusPaused
	head.UpdatedAt = now
	c := &state.Commit{RunID: id, ExpectRevision: head.Revision, Run: &head,
		Events: []state.Event{{Time: now, Type: state.EventRun, Status: record.RunEvent(state.StatusPaused), Message: "paused"}}}
	if err := e.store.Commit(ctx, c); err != nil {
		return fmt.Errorf("pause run %s: %w", id, err)
	}
	if p := publisherOf(e.cfg.Dispatcher); p != nil {
		p.PublishEvent(id, c.Events[0])
	}
	return nil
}

// publisherOf returns d's EventPublisher, or nil.
func publisherOf(d Dispatcher) EventPublisher {
	p, _ := d.(EventPublisher)
	return p
}
