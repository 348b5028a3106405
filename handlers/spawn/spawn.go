package spawn

import (
	"context"
	"errors"
	"path/filepath"
	"strings"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// Runs is what spawn needs from the executor.
type Runs interface {
	StartRun(ctx context.Context, req workflows.StartRequest) (state.Run, error)
	Wait(ctx context.Context, id string) (state.Run, error)
	Cancel(ctx context.Context, id string) error
}

// Handler runs spawn operations.
type Handler struct {
	runs Runs
}

// New returns a Handler starting children through runs.
func New(runs Runs) *Handler { return &Handler{runs: runs} }

// Handle implements handlers.Handler.
func (h *Handler) Handle(ctx context.Context, env handlers.Env, req operations.Request) operations.Result {
	sp := req.Spawn
	if sp.Workflow == "" {
		return operations.Failed(req, "spawn: workflow is required")
	}
	id := workflows.ChildID(env.OpID)
	dir := sanitize(sp.Name)
	if dir == "" {
		dir = id
	}
	child, err := h.runs.StartRun(ctx, workflows.StartRequest{
		Workflow: sp.Workflow,
		Settings: sp.Settings,
		Task:     sp.Task,
		ParentID: env.RunID,
		ID:       id,
		WorkDir:  filepath.Join(env.WorkDir, "children", dir),
	})
	if err != nil {
		return operations.Failed(req, "spawn %s: %v", sp.Workflow, err)
	}
	end, err := h.runs.Wait(ctx, child.ID)
	if err != nil {
		if cause := context.Cause(ctx); ctx.Err() != nil && !errors.Is(cause, workflows.ErrStopped) && !errors.Is(cause, workflows.ErrPaused) {
			_ = h.runs.Cancel(context.WithoutCancel(ctx), child.ID)
		}
		return operations.Failed(req, "spawn %s: waiting for child %s: %v", sp.Workflow, child.ID, err)
	}
	return operations.Result{Kind: req.Kind, Meta: req.Meta, Spawn: &operations.SpawnResult{
		RunID:     end.ID,
		Status:    string(end.Status),
		Result:    end.Result,
		EndReason: end.EndReason,
		Error:     end.Error,
		Usage:     end.Usage,
		WorkDir:   end.WorkDir,
	}}
}

// sanitize keeps a child name usable as one path element.
func sanitize(name string) string {
	var b strings.Builder
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	s := strings.Trim(b.String(), ".")
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

var (
	_ handlers.Handler = (*Handler)(nil)
	_ Runs             = (*workflows.Executor)(nil)
)
