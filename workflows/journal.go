package workflows

import (
	"context"
	"iter"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/state"
)

// journal is the store as the handlers' journal port (handlers.Journal),
// handed to them in handlers.Deps at Start: they read heads and ops
// without importing the store.
type journal struct{ store state.Reader }

// Run reads the head of run id.
func (j journal) Run(ctx context.Context, id string) (handlers.RunHead, error) {
	r, err := j.store.Run(ctx, id)
	if err != nil {
		return handlers.RunHead{}, err
	}
	return runHead(r), nil
}

// Ops yields every op of run id in step order.
func (j journal) Ops(ctx context.Context, id string) iter.Seq2[handlers.JournalOp, error] {
	return func(yield func(handlers.JournalOp, error) bool) {
		for op, err := range state.AllOps(ctx, j.store, id) {
			if err != nil {
				yield(handlers.JournalOp{}, err)
				return
			}
			if !yield(journalOp(op), nil) {
				return
			}
		}
	}
}

// StepOps reads the ops of one step of run id.
func (j journal) StepOps(ctx context.Context, id string, step uint64) ([]handlers.JournalOp, error) {
	ops, err := j.store.StepOps(ctx, id, step)
	if err != nil {
		return nil, err
	}
	out := make([]handlers.JournalOp, len(ops))
	for i, op := range ops {
		out[i] = journalOp(op)
	}
	return out, nil
}

// journalOp is what a handler sees of op.
func journalOp(op state.Op) handlers.JournalOp {
	return handlers.JournalOp{ID: op.ID, Step: op.Step, Done: op.Status == state.OpDone,
		Request: op.Request, Result: op.Result}
}

// runHead is what a handler sees of r.
func runHead(r state.Run) handlers.RunHead {
	return handlers.RunHead{ID: r.ID, Workflow: r.Workflow, ParentID: r.ParentID, Status: r.Status,
		Step: r.Step, EndReason: r.EndReason, Result: r.Result, Error: r.Error,
		Usage: r.Usage, Limits: r.Limits, WorkDir: r.WorkDir}
}

var _ handlers.Journal = journal{}
