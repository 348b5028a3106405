package bash

import (
	"context"
	"fmt"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/internal/shell"
	"github.com/flockrun/flock/operations"
)

func init() {
	handlers.Register(handlers.Info{ID: "flock.bash", Kinds: []operations.Kind{operations.KindBash},
		New: func() handlers.Handler { return New(Options{}) }})
}

// Provision takes the operator's isolation policy and hides the server's
// data directory from isolated shells. It runs before the handler's first
// command, so the pool it replaces has started no shell.
func (h *Handler) Provision(_ context.Context, deps handlers.Deps) error {
	h.opts.Hidden = deps.Hidden()
	p, err := deps.Isolation()
	h.opts.Isolation = p
	h.shell = shell.NewPool(h.opts)
	return err
}

// ValidateRun refuses a run whose settings.isolation the operator's policy
// cannot give (bwrap on a host where it cannot run) or does not allow
// (none under a policy that isolates), for bash and python alike.
func (h *Handler) ValidateRun(_ context.Context, run handlers.RunCheck) error {
	if run.Settings == nil {
		return nil
	}
	if _, err := h.opts.Isolation.Resolve(run.Settings.Isolation); err != nil {
		return fmt.Errorf("isolation.kind: %w", err)
	}
	return nil
}

var (
	_ handlers.Provisioner  = (*Handler)(nil)
	_ handlers.RunValidator = (*Handler)(nil)
	_ handlers.Closer       = (*Handler)(nil)
)
