package spawn

import (
	"context"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/internal/pathelem"
	"github.com/flockrun/flock/operations"
	"path/filepath"
)

func init() {
	handlers.Register(handlers.Info{ID: "flock.spawn", Kinds: []operations.Kind{operations.KindSpawn},
		New: func() handlers.Handler { return &Handler{} }})
}

// Handler runs spawn operations. Its zero value refuses them until
// provisioned with the executor's handlers.Runs.
type Handler struct {
	runs handlers.Runs
}

// New returns a Handler starting children through runs.
func New(runs handlers.Runs) *Handler { return &Handler{runs: runs} }

// Provision takes the run starter (the executor) from deps.
func (h *Handler) Provision(_ context.Context, deps handlers.Deps) error {
	h.runs = deps.Runs
	return nil
}

// Handle implements handlers.Handler.
func (h *Handler) Handle(ctx context.Context, env handlers.Env, req operations.Request) operations.Result {
	sp := operations.Spawn.Params(req)
	if sp.Workflow == "" {
		return operations.Failed(req, "spawn: workflow is required")
	}
	if h.runs == nil {
		return operations.Failed(req, "spawn: this server cannot start child runs")
	}
	dir := sanitize(sp.Name)
	c := handlers.Child{ParentID: env.RunID, OpID: env.OpID, Workflow: sp.Workflow,
		Settings: sp.Settings, Task: sp.Task, ParentWorkDir: env.WorkDir}
	if dir != "" {
		c.WorkDir = filepath.Join(env.WorkDir, "children", dir)
	}
	child, err := h.runs.StartChild(ctx, c)
	if err != nil {
		return operations.Failed(req, "spawn %s: %v", sp.Workflow, err)
	}
	end, err := h.runs.WaitChild(ctx, child.ID)
	if err != nil {
		return operations.Failed(req, "spawn %s: waiting for child %s: %v", sp.Workflow, child.ID, err)
	}
	return operations.Result{Kind: req.Kind, Meta: req.Meta, Data: result(end)}
}

// result is a child's end as spawn reports it.
func result(end handlers.RunHead) *operations.SpawnResult {
	return &operations.SpawnResult{
		RunID:     end.ID,
		Status:    end.Status,
		Result:    end.Result,
		EndReason: end.EndReason,
		Error:     end.Error,
		Usage:     end.Usage,
		WorkDir:   end.WorkDir,
	}
}

// sanitize keeps a child name usable as one path element.
func sanitize(name string) string {
	s := pathelem.Safe(name)
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

var (
	_ handlers.Handler     = (*Handler)(nil)
	_ handlers.Provisioner = (*Handler)(nil)
)
