package workflows

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/flockrun/flock/handlers"
)

// children is the executor as the handlers' run starter (handlers.Runs),
// handed to them in handlers.Deps at Start.
type children struct{ e *Executor }

// StartChild starts the child run of c.OpID under the id ChildID derives,
// or returns the one started before a crash.
func (c children) StartChild(ctx context.Context, ch handlers.Child) (handlers.RunHead, error) {
	id := ChildID(ch.OpID)
	dir := ch.WorkDir
	if dir == "" {
		dir = filepath.Join(ch.ParentWorkDir, "children", id)
	}
	r, err := c.e.StartRun(ctx, StartRequest{Workflow: ch.Workflow, Settings: ch.Settings, Task: ch.Task,
		ParentID: ch.ParentID, ID: id, WorkDir: dir})
	return runHead(r), err
}

// WaitChild waits for the child; when ctx ends for a reason other than
// the executor stopping or the parent pausing, it cancels the child (both
// resume after a restart otherwise).
func (c children) WaitChild(ctx context.Context, id string) (handlers.RunHead, error) {
	end, err := c.e.Wait(ctx, id)
	if err != nil {
		if cause := context.Cause(ctx); ctx.Err() != nil && !errors.Is(cause, ErrStopped) && !errors.Is(cause, ErrPaused) {
			_ = c.e.Cancel(context.WithoutCancel(ctx), id)
		}
	}
	return runHead(end), err
}

var _ handlers.Runs = children{}
