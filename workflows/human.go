package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/state"
)

// errAwait is what collect returns when the step's results are in except
// those of operations a person answers (handlers.Asker) that have no
// answer yet: the run parks until one arrives.
var errAwait = errors.New("waiting for an answer")

// Question is an operation of a run's current step waiting for a person:
// a human question or an intervention.
type Question struct {
	OpID    string
	Kind    operations.Kind
	Text    string
	Choices []string
	Scale   *operations.Scale
	// Action is the action an intervention waits to approve or replace.
	Action  json.RawMessage
	AskedAt time.Time
}

// answer is an answer handed to a driven run, waiting to be journaled by
// its drive goroutine; done receives the outcome once.
type answer struct {
	res  operations.Result
	done chan error
}

// asker returns the handler of kind if a person answers it.
func (e *Executor) asker(kind operations.Kind) handlers.Asker {
	a, _ := e.hs.Handler(kind).(handlers.Asker)
	return a
}

// Questions lists the operations of run id's current step that wait for
// a person, in request order; none once the run has ended.
func (e *Executor) Questions(ctx context.Context, id string) ([]Question, error) {
	return e.QuestionsIn(ctx, e.store, id)
}

// QuestionsIn is Questions reading the run from r (a cluster node's HTTP
// API reads from replicas while the store elects leaders).
func (e *Executor) QuestionsIn(ctx context.Context, r state.Reader, id string) ([]Question, error) {
	head, err := r.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	if head.Status.Terminal() || head.NumOps == 0 {
		return nil, nil
	}
	ops, err := r.StepOps(ctx, id, head.Step)
	if err != nil {
		return nil, err
	}
	var out []Question
	for _, op := range ops {
		a := e.asker(op.Request.Kind)
		if a == nil || op.Status == state.OpDone {
			continue
		}
		q, err := a.Question(op.Request)
		if err != nil {
			return nil, fmt.Errorf("op %s: %w", op.ID, err)
		}
		out = append(out, Question{OpID: op.ID, Kind: op.Request.Kind, Text: q.Text, Choices: q.Choices,
			Scale: q.Scale, Action: q.Action, AskedAt: op.CreatedAt})
	}
	return out, nil
}

// Answer answers the question op of run id (an op id as listed by
// Questions). The answer becomes the op's journaled result, and the run,
// parked while it waited, goes on. Answer returns once the result is
// journaled. Errors: ErrNoQuestion (wrapping state.ErrNotFound semantics:
// unknown run or op, or an op no person answers), ErrAnswered (answered
// before), ErrEnded, ErrBadRequest (an answer that does not fit the
// question, naming why).
func (e *Executor) Answer(ctx context.Context, id, op string, ans json.RawMessage) error {
	return e.whileUnavailable(ctx, func() error {
		return e.retryFenced(ctx, func() error { return e.answer(ctx, id, op, ans, true) })
	})
}

// answer is Answer; routed says a run driven by another node (cluster
// mode) may be answered there.
func (e *Executor) answer(ctx context.Context, id, op string, ans json.RawMessage, routed bool) error {
	head, err := e.store.Run(ctx, id)
	if err != nil {
		return err
	}
	run, step, index, perr := state.ParseOpID(op)
	if perr != nil || run != id {
		return fmt.Errorf("%w: run %s has no operation %q", ErrNoQuestion, id, op)
	}
	ops, err := e.store.StepOps(ctx, id, step)
	if err != nil {
		return err
	}
	if index < 0 || index >= len(ops) {
		return fmt.Errorf("%w: run %s has no operation %q", ErrNoQuestion, id, op)
	}
	o := ops[index]
	a := e.asker(o.Request.Kind)
	if a == nil {
		return fmt.Errorf("%w: operation %s is a %s operation, not a question", ErrNoQuestion, op, o.Request.Kind)
	}
	if o.Status == state.OpDone {
		return fmt.Errorf("%w: operation %s was answered already", ErrAnswered, op)
	}
	if head.Status.Terminal() {
		return fmt.Errorf("%w: run %s is %s", ErrEnded, id, head.Status)
	}
	if step != head.Step {
		return fmt.Errorf("%w: operation %s belongs to step %d; the run is at step %d", ErrNoQuestion, op, step, head.Step)
	}
	res, err := a.Answer(o.Request, ans, e.now())
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	e.mu.Lock()
	r := e.runs[id]
	e.mu.Unlock()
	if r != nil {
		return r.deliver(ctx, op, res)
	}
	if routed && e.dispatched() && head.Status == state.StatusRunning {
		// Cluster mode: the node that drives the run waits for it.
		if handled, err := e.remote(ctx, id, ControlRequest{Action: ActionAnswer, Op: op, Answer: ans}); handled {
			return err
		}
	}
	// Not driven here (paused): journal the answer; the run reads it when
	// it is resumed.
	o, ev := answered(o, res, e.now().UTC())
	return e.store.Commit(ctx, &state.Commit{RunID: id, ExpectRevision: head.Revision, Ops: []state.Op{o},
		Events: []state.Event{ev}})
}

// Intervene answers the intervention the run id waits for with ans
// ({"action": {...}} to replace the action, {"approve": true} to let it
// run). ErrEnded when the run has ended; ErrNotWaiting when it waits for
// no intervention.
func (e *Executor) Intervene(ctx context.Context, id string, ans json.RawMessage) error {
	head, err := e.store.Run(ctx, id)
	if err != nil {
		return err
	}
	if head.Status.Terminal() {
		// Not "start it with intervention: true": it may have been, and
		// no setting makes an ended run wait.
		return fmt.Errorf("%w: run %s has ended (%s); it waits for no action", ErrEnded, id, head.Status)
	}
	qs, err := e.Questions(ctx, id)
	if err != nil {
		return err
	}
	for _, q := range qs {
		if q.Kind == operations.KindIntervention {
			return e.Answer(ctx, id, q.OpID, ans)
		}
	}
	return fmt.Errorf("%w: run %s is not waiting for an intervention (start it with intervention: true)", ErrNotWaiting, id)
}

// answered returns op done at now with the answer res, and the event that
// journals it.
func answered(op state.Op, res operations.Result, now time.Time) (state.Op, state.Event) {
	op.Status, op.Result, op.Attempts, op.StartedAt, op.FinishedAt = state.OpDone, &res, 1, &op.CreatedAt, &now
	data, _ := json.Marshal(struct {
		DurationMS int64 `json:"duration_ms"`
	}{now.Sub(op.CreatedAt).Milliseconds()})
	return op, state.Event{Time: now, Type: state.EventOp, Status: state.EventOK, Phase: op.Phase, Step: op.Step, OpID: op.ID,
		Kind: string(op.Request.Kind), Message: "answered", Data: data}
}

// deliver hands an answer to the run's drive goroutine, waking it if it is
// parked for one, and waits until the answer is journaled.
func (r *runner) deliver(ctx context.Context, op string, res operations.Result) error {
	a := &answer{res: res, done: make(chan error, 1)}
	r.parking.Lock()
	if _, dup := r.answers[op]; dup {
		r.parking.Unlock()
		return fmt.Errorf("%w: operation %s was answered already", ErrAnswered, op)
	}
	if r.answers == nil {
		r.answers = map[string]*answer{}
	}
	r.answers[op] = a
	wake := r.parked
	r.parking.Unlock()
	if wake {
		// The run's goroutine, counted by the executor's WaitGroup since
		// it parked; wake runs the loop on it.
		go r.wake()
	}
	select {
	case err := <-a.done:
		return err
	case <-r.done:
		select {
		case err := <-a.done:
			return err
		default:
		}
		return fmt.Errorf("%w: run %s stopped before the answer was journaled", ErrEnded, r.id)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// takeAnswer journals the answer to op i if one arrived, and returns
// its result; ok is false while none has.
func (r *runner) takeAnswer(i int) (operations.Result, bool, error) {
	op := r.ops[i]
	r.parking.Lock()
	a := r.answers[op.ID]
	r.parking.Unlock()
	if a == nil {
		return operations.Result{}, false, nil
	}
	res := a.res
	op, ev := answered(op, res, r.e.now().UTC())
	c := &state.Commit{RunID: r.head.ID, Ops: []state.Op{op}, Events: []state.Event{ev}}
	err := r.commit(c)
	r.parking.Lock()
	delete(r.answers, op.ID)
	r.parking.Unlock()
	if err != nil {
		a.done <- fmt.Errorf("journal the answer: %w", err)
		return operations.Result{}, false, fmt.Errorf("%w: journal answer %s: %w", errStore, op.ID, err)
	}
	r.ops[i] = op
	r.e.broker.publish(r.head.ID, c.Events)
	a.done <- nil
	return res, true, nil
}

// announceQuestions tells the run's live subscribers which of its step's
// operations wait for a person (a live-only "op" event with status
// "waiting" per question, as for rate-limit waits); GET
// /runs/{id}/human lists them at any time.
func (r *runner) announceQuestions() {
	now := r.e.now().UTC()
	for _, op := range r.ops {
		a := r.e.asker(op.Request.Kind)
		if a == nil || op.Status == state.OpDone {
			continue
		}
		q, err := a.Question(op.Request)
		if err != nil {
			continue
		}
		r.e.broker.notice(r.head.ID, state.Event{Time: now, Type: state.EventOp, Status: state.EventWaiting, Phase: op.Phase, Step: op.Step,
			OpID: op.ID, Kind: string(op.Request.Kind), Message: "waiting for an answer: " + q.Text})
	}
}

// parkForAnswer leaves the run waiting, with no goroutine and no timer,
// for an answer to one of its step's questions: deliver wakes it, and so
// does the end of its context (Cancel, Pause, Stop). It reports parked
// false, parking nothing, when an answer is already there (again: collect
// once more) or the context is done (again false).
func (r *runner) parkForAnswer() (parked, again bool) {
	r.parking.Lock()
	defer r.parking.Unlock()
	if r.ctx.Err() != nil {
		return false, false
	}
	if len(r.answers) > 0 {
		return false, true
	}
	r.results, r.woken = nil, false
	r.parked = true
	r.unhook = context.AfterFunc(r.ctx, r.wake)
	return true, false
}
