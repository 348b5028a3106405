package bash

import (
	"context"
	"fmt"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/isolation"
	"github.com/flockrun/flock/operations"
)

func init() {
	handlers.Register(handlers.Info{ID: "flock.bash", Kinds: []operations.Kind{operations.KindBash},
		New: func() handlers.Handler { return New(Options{}) }})
}

// Provision hides the server's data directory from isolated shells.
func (h *Handler) Provision(_ context.Context, deps handlers.Deps) error {
	h.opts.Hidden = deps.Hidden()
	return nil
}

// ValidateRun refuses a run asking for bwrap isolation on a host where
// bwrap cannot run (isolation.Available), for bash and python alike.
func (h *Handler) ValidateRun(_ context.Context, run handlers.RunCheck) error {
	if run.Settings != nil && run.Settings.Isolation.Kind == isolation.KindBwrap {
		if err := isolation.Available(); err != nil {
			return fmt.Errorf("isolation.kind: %w", err)
		}
	}
	return nil
}

// Cleanup kills every shell (Close).
func (h *Handler) Cleanup() error { return h.Close() }

var (
	_ handlers.Provisioner  = (*Handler)(nil)
	_ handlers.RunValidator = (*Handler)(nil)
	_ handlers.Cleaner      = (*Handler)(nil)
)
