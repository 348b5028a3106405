package workflows

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
)

// Causes of a run context's cancellation.
var (
	errCancelled = errors.New("cancelled by request")
	errStore     = errors.New("store failure")
)

// maxVarsBytes caps a run's vars; vars live in the head, which every phase
// commit rewrites, so big data belongs in entries.
const maxVarsBytes = 256 << 10

// maxErrorBytes caps the error text kept in a head.
const maxErrorBytes = 16 << 10

// carried is an op result waiting to share the next commit.
type carried struct {
	op    state.Op
	event state.Event
}

// runner drives one run. Its fields are owned by the drive goroutine,
// except ctx/cancel/done which are safe for concurrent use.
type runner struct {
	e        *Executor
	id       string // the run's id; immutable, read by other goroutines
	wf       *phases.Workflow
	spec     state.Spec
	settings *configs.RunSettings
	head     state.Run
	ops      []state.Op // ops of head.Step; nil until loaded
	resumed  bool
	// absorbed are entries recorded from the current step's results (log,
	// action, observation, score, submit); the next commit appends them.
	absorbed []phases.Entry
	// carry is the journal record of the op whose result completed the
	// step, with its event: it is committed in the same transaction as
	// what follows (the next phase's output, or the run's end), so a step
	// costs one fsync, not two. Nil when every result was committed alone.
	carry *carried
	// outstanding counts the current step's ops still running.
	outstanding atomic.Int32
	// live is what holds the run now (a stalled commit, waiting ops); it
	// is read by other goroutines (Executor.Live) and has its own lock.
	live liveState
	tick time.Time // when head.Usage.Seconds was last brought up to date
	// begun says the loop ran once (tick set, work dir made).
	begun bool
	// snap is the run's last work-dir manifest (see snapshot.go); loaded
	// from disk on the first snapshot after a resume (snapLoaded).
	// snapChain is where its next manifest's delta goes. snapStored is
	// what the run has added to the snapshot store (see snapBudget),
	// snapStopped says its budget is spent and it takes no more
	// snapshots.
	snap        *manifest
	snapChain   snapChain
	snapLoaded  bool
	snapStored  int64
	snapStopped bool
	// notes are "warning" events (about snapshots) waiting to share the
	// run's next commit, after the carried result's event.
	notes []state.Event

	// parking guards parked, timer, unhook and answers. parked is set
	// while the run is parked (see park and parkForAnswer), timer only
	// while it waits for a delay; results and woken carry the step's
	// results across a delay's park. answers are answers to the step's
	// questions handed over by Answer, not yet journaled.
	parking sync.Mutex
	parked  bool
	timer   *time.Timer
	unhook  func() bool
	results []operations.Result
	woken   bool
	answers map[string]*answer

	// unload says why the run stopped being driven (cluster mode: told
	// to the dispatcher); set by the drive goroutine before run returns.
	unload Unload

	// lease is what the run knows of its lease by this node's clock
	// (cluster mode: see lease.go); it has its own lock.
	lease runLease

	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
}

func (e *Executor) newRunner(head state.Run, spec state.Spec, rs *configs.RunSettings, wf *phases.Workflow) *runner {
	ctx, cancel := context.WithCancelCause(e.baseCtx)
	return &runner{e: e, id: head.ID, wf: wf, spec: spec, settings: rs, head: head,
		ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// run drives r on the calling goroutine until the run ends, the executor
// stops or the run parks. The executor's WaitGroup counts r from launch
// until run returns with the run no longer driven; a parked run keeps its
// count, and the goroutine that wakes it calls run again.
func (r *runner) run() {
	if r.drive() {
		return
	}
	r.cancel(nil)
	r.e.unregister(r)
	r.e.release(r.id) // after the run's last commit, before done
	if r.unload.Reason == UnloadLost || r.unload.Reason == UnloadFailed {
		// Another node takes the run up from the store: nothing of it
		// stays here (its shells and interpreters are closed).
		r.e.closeRunResources(context.WithoutCancel(r.ctx), r.id)
	}
	if d := r.e.cfg.Dispatcher; d != nil {
		d.Unloaded(r.id, r.unload)
	}
	close(r.done)
	r.e.wg.Done()
}

// drive runs the loop until the run ends or the executor stops, and
// reports false then; or until the run waits for its head's WakeAt, when
// it parks the run and reports true (see park).
func (r *runner) drive() (parked bool) {
	results, woken := r.results, r.woken
	r.results, r.woken = nil, false
	if !r.begun {
		r.begun = true
		r.tick = r.e.now()
		if err := os.MkdirAll(r.head.WorkDir, 0o755); err != nil {
			r.finish(state.StatusFailed, state.ReasonPhaseError, fmt.Sprintf("create work dir: %v", err))
			return false
		}
	}
	for {
		if !woken {
			if r.ctx.Err() != nil {
				r.interrupted(context.Cause(r.ctx))
				return false
			}
			var err error
			results, err = r.collect()
			if errors.Is(err, errAwait) {
				// A person answers the rest: park with no goroutine
				// until an answer (or the context's end) wakes the run.
				r.commitCarry()
				r.announceQuestions()
				parked, again := r.parkForAnswer()
				if parked {
					return true
				}
				if again {
					continue
				}
				r.interrupted(context.Cause(r.ctx))
				return false
			}
			if errors.Is(err, errLeaseLapsed) {
				// The step's operations were stopped: wait until the
				// store confirms the lease (their finished results are
				// kept; the others run again) or says it is lost.
				if err := r.awaitLease(); err != nil {
					r.interrupted(err)
					return false
				}
				continue
			}
			if err != nil {
				r.interrupted(err)
				return false
			}
			r.snapshot()
			r.absorb(results)
			if reason := r.overLimit(); reason != "" {
				r.finish(state.StatusFailed, reason, fmt.Sprintf("usage limit reached (%s)", reason))
				return false
			}
			if r.head.Next == "" {
				r.finishPending()
				return false
			}
		}
		woken = false
		if d := r.untilWake(); d > 0 {
			if r.e.dispatched() && d > r.e.cfg.HandoffDelay && r.ctx.Err() == nil {
				// Cluster mode: a long wait holds no lease; the
				// dispatcher enqueues the run again when it is due.
				r.handoff()
				return false
			}
			if r.park(d, results) {
				return true
			}
			r.interrupted(context.Cause(r.ctx))
			return false
		}
		out, err := r.call(results)
		if errors.Is(err, errStore) {
			r.interrupted(err)
			return false
		}
		if err != nil {
			r.finish(state.StatusFailed, state.ReasonPhaseError, err.Error())
			return false
		}
		if err := r.commitPhase(out); err != nil {
			if errors.Is(err, errStore) || r.ctx.Err() != nil {
				r.interrupted(err)
				return false
			}
			r.finish(state.StatusFailed, state.ReasonPhaseError, err.Error())
			return false
		}
	}
}

// untilWake is how long the run still waits for its head's WakeAt.
func (r *runner) untilWake() time.Duration {
	if r.head.WakeAt == nil {
		return 0
	}
	return r.head.WakeAt.Sub(r.e.now())
}

// park leaves the run waiting d for its WakeAt with no goroutine: a
// runtime timer (time.AfterFunc) wakes it then, and the end of its context
// (Cancel, Pause, a lost lease, Stop) wakes it at once; whichever comes
// first calls run on its own goroutine, which resumes the loop with the
// step's results (the step is not collected or absorbed again). The run
// stays registered, leased and counted by the executor's WaitGroup while
// parked. park reports false, parking nothing, if the context is done.
func (r *runner) park(d time.Duration, results []operations.Result) bool {
	r.parking.Lock()
	defer r.parking.Unlock()
	if r.ctx.Err() != nil {
		return false
	}
	r.results, r.woken = results, true
	r.parked = true
	r.timer = time.AfterFunc(d, r.wake)
	r.unhook = context.AfterFunc(r.ctx, r.wake)
	return true
}

// wake drives a parked run again, once: the timer and the context's end
// may both call it.
func (r *runner) wake() {
	r.parking.Lock()
	if !r.parked {
		r.parking.Unlock()
		return
	}
	r.parked = false
	if r.timer != nil {
		r.timer.Stop()
	}
	r.unhook()
	r.timer, r.unhook = nil, nil
	r.parking.Unlock()
	r.run()
}

// interrupted handles a stop, a cancel or a store failure.
func (r *runner) interrupted(err error) {
	switch cause := context.Cause(r.ctx); {
	case errors.Is(cause, errCancelled):
		r.finish(state.StatusCancelled, state.ReasonCancelled, "")
	case errors.Is(cause, ErrPaused):
		r.pause()
	case errors.Is(cause, errLeaseLost), errors.Is(err, errLeaseLost), errors.Is(err, state.ErrFenced):
		// Another owner drives the run now: write nothing more.
		r.e.log.Warn("run taken over: another node drives it now; this one lets it go", "run", r.id, "err", err)
		r.e.broker.forget(r.id)
		r.unload = Unload{Reason: UnloadLost}
	case errors.Is(cause, ErrStopped), errors.Is(cause, context.Canceled):
		// Leave the run as it is in the store; the next Start resumes it.
		// A finished result waiting for the next commit is kept.
		r.commitCarry()
		r.e.broker.forget(r.head.ID)
		r.unload = Unload{Reason: UnloadStopped}
	default:
		r.e.storeFailed("run interrupted", r.head.ID, err)
		r.e.broker.forget(r.head.ID)
		r.unload = unloadFor(cause, err)
	}
}

// storeFailed logs that this executor stops driving run id after a store
// error (what says it), and where the run goes on: alone, at the next
// start (an error: nothing drives it until then); in cluster mode the
// dispatcher releases it to the cluster, where a node takes it over soon
// (a warning).
func (e *Executor) storeFailed(what, id string, err error) {
	if e.cfg.Dispatcher != nil {
		e.log.Warn(what+"; the run is released to the cluster and a node takes it over", "run", id, "err", err)
		return
	}
	e.log.Error(what+"; the run resumes on the next start", "run", id, "err", err)
}

// pause records the run as paused; Resume drives it again. Operations that
// were interrupted run again then.
func (r *runner) pause() {
	now := r.e.now().UTC()
	h := r.head
	h.Usage.Seconds = r.seconds()
	h.Status = state.StatusPaused
	h.UpdatedAt = now
	c := &state.Commit{RunID: h.ID, Run: &h,
		Events: []state.Event{{Time: now, Type: state.EventRun, Status: record.RunEvent(state.StatusPaused), Message: "paused"}}}
	r.takeCarry(c)
	if err := r.commit(c); err != nil {
		r.e.storeFailed("commit pause", h.ID, err)
		r.unload = unloadFor(nil, err)
	} else {
		r.head = h
		r.e.broker.publish(h.ID, c.Events)
		r.unload = Unload{Reason: UnloadSettled}
	}
	r.e.broker.forget(h.ID)
}

// collect runs the ops of the current step that have no result yet and
// returns all results in request order.
func (r *runner) collect() ([]operations.Result, error) {
	if r.head.NumOps == 0 {
		return nil, nil
	}
	if r.ops == nil {
		ops, err := r.e.store.StepOps(r.ctx, r.head.ID, r.head.Step)
		if err != nil {
			return nil, fmt.Errorf("%w: load ops: %w", errStore, err)
		}
		if len(ops) != r.head.NumOps {
			return nil, fmt.Errorf("%w: step %d of run %s has %d ops journaled, head says %d", errStore, r.head.Step, r.head.ID, len(ops), r.head.NumOps)
		}
		r.ops = ops
	}
	results := make([]operations.Result, len(r.ops))
	errs := make([]error, len(r.ops))
	done := make(chan int, len(r.ops))
	running := 0
	var asks []int // ops a person answers: never dispatched
	for i := range r.ops {
		if r.ops[i].Status == state.OpDone && r.ops[i].Result != nil {
			continue
		}
		if r.e.asker(r.ops[i].Request.Kind) != nil {
			asks = append(asks, i)
			continue
		}
		running++
	}
	r.outstanding.Store(int32(running))
	sctx, endStep := r.stepContext()
	for i := range r.ops {
		if r.ops[i].Status == state.OpDone && r.ops[i].Result != nil {
			results[i] = *r.ops[i].Result
			continue
		}
		if r.e.asker(r.ops[i].Request.Kind) != nil {
			continue
		}
		go func(i int) {
			results[i], errs[i] = r.dispatch(sctx, i)
			done <- i
		}(i)
	}
	for ; running > 0; running-- {
		<-done
	}
	endStep()
	if cause := context.Cause(r.ctx); cause != nil && !errors.Is(cause, errCancelled) {
		return nil, cause
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if r.ctx.Err() != nil {
		return nil, context.Cause(r.ctx)
	}
	waiting := false
	for _, i := range asks {
		res, ok, err := r.takeAnswer(i)
		if err != nil {
			r.cancel(err)
			return nil, err
		}
		if !ok {
			waiting = true
			continue
		}
		results[i] = res
	}
	if waiting {
		return nil, errAwait
	}
	return results, nil
}

// dispatch runs op i under the step's context sctx, journals its result
// and publishes its event. In cluster mode the op starts only while the
// run's lease holds with time to spare by this node's clock; otherwise, or
// when the lease lapses while it runs (sctx ends with errLeaseLapsed), it
// fails with errLeaseLapsed and nothing is journaled.
func (r *runner) dispatch(sctx context.Context, i int) (operations.Result, error) {
	op := r.ops[i]
	kind := op.Request.Kind
	if sem := r.e.sems[kind]; sem != nil {
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
		case <-sctx.Done():
			if errors.Is(context.Cause(sctx), errLeaseLapsed) && r.ctx.Err() == nil {
				return operations.Result{}, errLeaseLapsed
			}
			return operations.Failed(op.Request, "cancelled before start"), nil
		}
	}
	if !r.leased() {
		r.lapse()
		return operations.Result{}, errLeaseLapsed
	}
	ctx := sctx
	if lim := r.ownLimits().Seconds; lim > 0 {
		left := time.Duration((lim - r.seconds()) * float64(time.Second))
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, max(left, 0))
		defer cancel()
	}
	start := r.e.now().UTC()
	r.e.broker.live(r.head.ID, state.Event{Time: start, Type: state.EventOp, Status: state.EventStarted, Phase: op.Phase,
		Step: op.Step, OpID: op.ID, Kind: string(kind)})
	res, err := r.handle(ctx, op)
	if cause := context.Cause(r.ctx); cause != nil && !errors.Is(cause, errCancelled) {
		// Interrupted by a stop: the op runs again after the restart.
		return res, nil
	}
	if errors.Is(context.Cause(sctx), errLeaseLapsed) {
		// Stopped because the lease may have lapsed: its result (if it
		// finished meanwhile) is not journaled, and it runs again once
		// the lease is confirmed, as another attempt (it may have had
		// effects).
		r.ops[i].Attempts++
		return res, errLeaseLapsed
	}
	if err != nil {
		// A read of the run's log failed: nothing is journaled and the
		// run is interrupted as by a failed commit.
		err = fmt.Errorf("op %s: %w", op.ID, err)
		r.cancel(err)
		return res, err
	}
	end := r.e.now().UTC()
	r.e.cfg.Observer.OpFinished(kind, res.Error == "", end.Sub(start))
	op.Status = state.OpDone
	op.Result = &res
	op.Attempts++
	if r.resumed && op.Attempts == 1 {
		op.Attempts = 2 // it may have run before the crash
	}
	op.StartedAt, op.FinishedAt = &start, &end
	status := state.EventOK
	if res.Error != "" {
		status = state.EventError
	}
	replay := ""
	switch ef := res.Effects(op.Request, operations.RunUsage{}); {
	case ef.Usage.ReplayHits > 0:
		replay = operations.ReplayHit
	case ef.Usage.ReplayMisses > 0:
		replay = operations.ReplayMiss
	}
	data, _ := json.Marshal(struct {
		DurationMS int64           `json:"duration_ms"`
		Error      string          `json:"error,omitempty"`
		Code       operations.Code `json:"code,omitempty"`
		Replay     string          `json:"replay,omitempty"`
	}{end.Sub(start).Milliseconds(), res.Error, res.Code, replay})
	ev := state.Event{Time: end, Type: state.EventOp, Status: status, Phase: op.Phase, Step: op.Step,
		OpID: op.ID, Kind: string(kind), Data: data}
	if r.outstanding.Add(-1) == 0 {
		// The step's last result: it shares the next commit (the next
		// phase's output, written right after that phase is called, or the
		// run's end), so one fsync serves both. Until then it is exactly
		// as durable as a result whose own fsync has not finished.
		r.ops[i] = op
		r.carry = &carried{op: op, event: ev}
		return res, nil
	}
	c := &state.Commit{RunID: r.head.ID, Ops: []state.Op{op}, Events: []state.Event{ev}}
	// Journal even if the run was cancelled meanwhile: the result is real.
	if err := r.commit(c); err != nil {
		err = fmt.Errorf("%w: journal op %s: %w", errStore, op.ID, err)
		r.cancel(err)
		return res, err
	}
	r.ops[i] = op
	r.e.broker.publish(r.head.ID, c.Events)
	return res, nil
}

// handle calls the op's handler, turning panics into error results.
// A non-nil error (wrapping errStore) means the handler's read of the
// run's log failed; res must then not be journaled.
func (r *runner) handle(ctx context.Context, op state.Op) (res operations.Result, err error) {
	req := op.Request
	h := r.e.hs.Handler(req.Kind)
	if h == nil {
		return operations.Failed(req, "no handler for operation kind %q on this server", req.Kind), nil
	}
	defer func() {
		if p := recover(); p != nil {
			r.e.logPanic("operation handler", p, debug.Stack(), "run", r.id, "op", op.ID, "kind", req.Kind)
			res = operations.Failed(req, "%s handler panicked: %s", req.Kind, panicLine(p))
		}
	}()
	v := r.view()
	env := handlers.Env{
		RunID:    r.head.ID,
		OpID:     op.ID,
		WorkDir:  r.head.WorkDir,
		Task:     r.spec.Task,
		Settings: r.settings,
		Usage:    r.usage,
		State:    v,
		Waiting:  r.waiting(op.ID),
		MayStart: r.mayStart,
	}
	res = h.Handle(ctx, env, req)
	if err := v.Err(); err != nil {
		// The handler read the log and a read failed: its result may
		// rest on a missing entry, so it is not journaled.
		return res, err
	}
	r.live.setWait(op.ID, "", time.Time{}) // a wait the handler left open ends with the op
	if res.Kind == "" {
		res.Kind = req.Kind
	}
	if res.Meta == nil {
		res.Meta = req.Meta
	}
	if ctx.Err() != nil && res.Error == "" && r.ctx.Err() == nil && r.ownLimits().Seconds > 0 {
		res.Error = "time limit reached"
	}
	return res, nil
}

// usage reports the run's usage so far; safe to call from handlers while
// the step's ops run (the drive goroutine does not write the head then).
func (r *runner) usage() (operations.RunUsage, operations.RunLimits) {
	u := r.head.Usage
	u.Seconds = r.seconds()
	return u, r.head.Limits
}

func (r *runner) seconds() float64 {
	return r.head.Usage.Seconds + r.e.now().Sub(r.tick).Seconds()
}

// absorb applies the step's results' effects (operations.Effects) in
// request order: usage, the run's result, entries to record. It has no
// code for any kind: each result's payload declares its own effects.
func (r *runner) absorb(results []operations.Result) {
	r.absorbed = r.absorbed[:0]
	for i, res := range results {
		if i >= len(r.ops) {
			break
		}
		u := r.head.Usage
		u.Seconds = r.seconds()
		ef := res.Effects(r.ops[i].Request, u)
		r.head.Usage.Tokens += ef.Usage.Tokens
		r.head.Usage.Actions += ef.Usage.Actions
		r.head.Usage.Cost += ef.Usage.Cost
		r.head.Usage.ReplayHits += ef.Usage.ReplayHits
		r.head.Usage.ReplayMisses += ef.Usage.ReplayMisses
		if ef.Result != nil {
			r.head.Result = ef.Result
		}
		for _, rec := range ef.Entries {
			r.record(rec.Type, rec.Data)
		}
	}
}

func (r *runner) record(typ string, v any) {
	e, err := phases.NewEntry(typ, v)
	if err != nil {
		r.e.log.Error("record entry", "run", r.head.ID, "type", typ, "err", err)
		return
	}
	r.absorbed = append(r.absorbed, e)
}

// appendEntries numbers entries after the head's log and stamps them.
func appendEntries(h *state.Run, phase string, in []phases.Entry) []phases.Entry {
	out := make([]phases.Entry, len(in))
	for i, en := range in {
		h.Entries++
		en.Seq, en.Phase, en.Step = h.Entries, phase, h.Step
		out[i] = en
	}
	return out
}

// ownLimits are the limits the engine holds the run to: none for a
// workflow that shares its limits out to its children (SharesLimits).
func (r *runner) ownLimits() operations.RunLimits {
	if r.wf.SharesLimits {
		return operations.RunLimits{}
	}
	return r.head.Limits
}

// overLimit returns the end reason of the first exceeded limit, or "".
func (r *runner) overLimit() string {
	l, u := r.ownLimits(), r.head.Usage
	switch {
	case l.Tokens > 0 && u.Tokens >= l.Tokens:
		return state.ReasonLimitTokens
	case l.Actions > 0 && u.Actions >= l.Actions:
		return state.ReasonLimitActions
	case l.Cost > 0 && u.Cost >= l.Cost:
		return state.ReasonLimitCost
	case l.Seconds > 0 && r.seconds() >= l.Seconds:
		return state.ReasonLimitTime
	}
	return ""
}

// call runs the next phase, recovering panics. An error wrapping errStore
// means a read of the run's log failed during the call: the output is
// discarded, whatever the phase returned.
func (r *runner) call(results []operations.Result) (out phases.Output, err error) {
	name := r.head.Next
	spec, ok := r.wf.Phase(name)
	if !ok {
		return out, fmt.Errorf("workflow %s has no phase %q", r.wf.Name, name)
	}
	v := r.view()
	in := phases.Input{
		Run: phases.RunInfo{
			ID:       r.head.ID,
			ParentID: r.head.ParentID,
			Workflow: r.head.Workflow,
			Phase:    name,
			Step:     r.head.Step + 1,
			Task:     r.spec.Task,
			Settings: r.spec.Settings,
			Now:      r.e.now().UTC(),
			WorkDir:  r.head.WorkDir,
		},
		State:   v,
		Results: results,
	}
	defer func() {
		if p := recover(); p != nil {
			r.e.logPanic("phase", p, debug.Stack(), "run", r.id, "phase", name)
			err = fmt.Errorf("phase %s panicked: %s", name, panicLine(p))
		}
		if verr := v.Err(); verr != nil {
			// Checked first: a phase that read a zero entry may have
			// failed or panicked because of it.
			out, err = phases.Output{}, fmt.Errorf("phase %s: %w", name, verr)
		}
	}()
	out, err = spec.Run(in)
	if err != nil {
		return out, fmt.Errorf("phase %s: %w", name, err)
	}
	return out, nil
}

// commitPhase journals a phase's output and makes it the current step.
func (r *runner) commitPhase(out phases.Output) error {
	called := r.head.Next
	if !r.wf.Allows(called, out.Next) {
		return fmt.Errorf("%w: phase %s returned next %q; declared: %v", ErrUndeclaredNext, called, out.Next, declared(r.wf, called))
	}
	for i, req := range out.Ops {
		if err := req.Validate(); err != nil {
			return fmt.Errorf("phase %s: op %d: %w", called, i, err)
		}
	}
	now := r.e.now().UTC()
	h := r.head
	h.Usage.Seconds = r.seconds()
	h.Step++
	h.Phase = called
	h.Next = out.Next
	h.NumOps = len(out.Ops)
	h.UpdatedAt = now
	h.WakeAt = nil
	if out.Delay > 0 {
		w := now.Add(out.Delay)
		h.WakeAt = &w
	}
	h.PendingEnd = nil
	if out.Next == "" && out.End != nil {
		h.PendingEnd = &state.PendingEnd{Failed: out.End.Failed, Reason: out.End.Reason, Error: out.End.Error, Result: out.End.Result}
	}
	if len(out.Set) > 0 {
		vars := make(map[string]json.RawMessage, len(h.Vars)+len(out.Set))
		for k, v := range h.Vars {
			vars[k] = v
		}
		for k, v := range out.Set {
			if v == nil || string(v) == "null" {
				delete(vars, k)
				continue
			}
			if !json.Valid(v) {
				return fmt.Errorf("phase %s: var %q is not valid JSON", called, k)
			}
			vars[k] = v
		}
		size := 0
		for k, v := range vars {
			size += len(k) + len(v)
		}
		if size > maxVarsBytes {
			return fmt.Errorf("phase %s: vars total %d bytes, over the %d-byte cap; append entries for large data", called, size, maxVarsBytes)
		}
		h.Vars = vars
	}
	for i, en := range out.Append {
		if en.Type == "" {
			return fmt.Errorf("phase %s: appended entry %d has no type", called, i)
		}
		if !json.Valid(en.Data) {
			return fmt.Errorf("phase %s: appended %s entry is not valid JSON", called, en.Type)
		}
	}
	entries := appendEntries(&h, r.head.Phase, r.absorbed)
	entries = append(entries, appendEntries(&h, called, out.Append)...)
	ops := make([]state.Op, len(out.Ops))
	kinds := make([]string, len(out.Ops))
	for i, req := range out.Ops {
		ops[i] = state.Op{ID: state.OpID(h.ID, h.Step, i), RunID: h.ID, Step: h.Step, Index: i, Phase: called,
			Status: state.OpPending, Request: req, CreatedAt: now}
		kinds[i] = string(req.Kind)
	}
	data, _ := json.Marshal(stepData{Next: out.Next, Ops: kinds, Entries: len(entries), Set: out.Set,
		Usage: &h.Usage, End: h.PendingEnd})
	c := &state.Commit{RunID: h.ID, Run: &h, Entries: entries, Ops: ops,
		Events: []state.Event{{Time: now, Type: state.EventPhase, Status: state.EventCommitted, Phase: called, Step: h.Step, Data: data}}}
	r.takeCarry(c)
	if err := r.commit(c); err != nil {
		return fmt.Errorf("%w: commit phase %s: %w", errStore, called, err)
	}
	r.tick = r.e.now()
	r.e.cache.appended(h.ID, r.head.Entries, entries)
	r.head = h
	r.e.cfg.Observer.PhaseCommitted(h.Workflow, called)
	if r.e.cfg.Steps != nil {
		r.e.cfg.Steps.StepCommitted(h.ID, h.Step, called, now)
	}
	r.ops = ops
	r.absorbed = r.absorbed[:0]
	r.resumed = false
	r.e.broker.publish(h.ID, c.Events)
	return nil
}

func declared(wf *phases.Workflow, name string) []string {
	if p, ok := wf.Phase(name); ok {
		return p.Next
	}
	return nil
}

// takeCarry moves the carried result, if any, and the waiting notes into
// c, ahead of c's own records (the result's event first, then the notes,
// so events stay in the order things happened).
func (r *runner) takeCarry(c *state.Commit) {
	var first []state.Event
	if r.carry != nil {
		c.Ops = append([]state.Op{r.carry.op}, c.Ops...)
		first = append(first, r.carry.event)
		r.carry = nil
	}
	if len(first)+len(r.notes) == 0 {
		return
	}
	c.Events = append(append(first, r.notes...), c.Events...)
	r.notes = nil
}

// commitCarry journals the carried result on its own (best effort: on
// failure the op runs again after the restart).
func (r *runner) commitCarry() {
	if r.carry == nil {
		return
	}
	c := &state.Commit{RunID: r.head.ID}
	r.takeCarry(c)
	if err := r.commit(c); err != nil {
		r.e.log.Warn("journal a finished result at stop; it runs again after the restart", "run", r.head.ID, "err", err)
		return
	}
	r.e.broker.publish(r.head.ID, c.Events)
}

// finishPending ends the run as its last phase asked.
func (r *runner) finishPending() {
	pe := r.head.PendingEnd
	if pe == nil {
		r.finish(state.StatusSucceeded, state.ReasonCompleted, "")
		return
	}
	if pe.Result != nil {
		r.head.Result = pe.Result
	}
	status, reason := state.StatusSucceeded, pe.Reason
	if pe.Failed {
		status = state.StatusFailed
	}
	if reason == "" {
		reason = state.ReasonCompleted
	}
	msg := ""
	if pe.Failed {
		msg = cmp.Or(pe.Error, reason)
	}
	r.finish(status, reason, msg)
}

// finish commits the run's end and releases its resources.
func (r *runner) finish(status state.Status, reason, msg string) {
	now := r.e.now().UTC()
	h := r.head
	h.Usage.Seconds = r.seconds()
	h.Status = status
	h.EndReason = reason
	if len(msg) > maxErrorBytes {
		msg = msg[:maxErrorBytes] + "\n[truncated]"
	}
	if status != state.StatusSucceeded {
		h.Error = msg
	}
	h.PendingEnd = nil
	h.WakeAt = nil
	h.UpdatedAt = now
	h.EndedAt = &now
	entries := appendEntries(&h, h.Phase, r.absorbed)
	end := state.Event{Time: now, Type: state.EventRun, Status: record.RunEvent(status), Message: reason}
	if h.Error != "" && h.Error != reason {
		// The final event says why, as the head does: a client of the
		// event stream needs no second read.
		end.Data, _ = json.Marshal(struct {
			Error string `json:"error"`
		}{h.Error})
	}
	c := &state.Commit{RunID: h.ID, Run: &h, Entries: entries, Events: []state.Event{end}}
	r.takeCarry(c)
	if err := r.commit(c); err != nil {
		r.e.storeFailed("commit run end", h.ID, err)
		r.e.broker.forget(h.ID)
		r.unload = unloadFor(nil, err)
		return
	}
	r.unload = Unload{Reason: UnloadSettled}
	r.head = h
	r.e.cache.drop(h.ID)
	r.e.cfg.Observer.RunEnded(h.Workflow, status)
	r.e.log.Info("run ended", "run", h.ID, "workflow", h.Workflow, "status", status, "reason", reason, "steps", h.Step)
	if r.e.cfg.Steps != nil {
		r.e.cfg.Steps.RunClosed(h.ID, now)
	}
	r.e.broker.publish(h.ID, c.Events)
	r.e.broker.end(h.ID)
	// Without the run's cancellation: a cancelled run still releases what
	// its handlers hold.
	r.e.closeRunResources(context.WithoutCancel(r.ctx), h.ID)
}

// logPanic records a recovered panic in the server log: the value at error
// level, the stack at debug. A run's error carries only panicLine: a stack
// (build paths, goroutines) is for the operator, not for the run's
// readers (CLI, API, viewer).
func (e *Executor) logPanic(what string, p any, stack []byte, attrs ...any) {
	e.log.Error(what+" panicked", append(attrs, "panic", panicLine(p))...)
	e.log.Debug(what+" panic stack", append(attrs, "stack", truncateStack(stack))...)
}

// panicLine is a panic's value on one line.
func panicLine(p any) string {
	s := strings.Join(strings.Fields(fmt.Sprint(p)), " ")
	if len(s) > 500 {
		s = s[:500] + "..."
	}
	return s
}

func truncateStack(b []byte) string {
	const limit = 8 << 10
	if len(b) > limit {
		return string(b[:limit]) + "\n[stack truncated]"
	}
	return string(b)
}
