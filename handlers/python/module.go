package python

import (
	"context"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/internal/pyinterp"
	"github.com/flockrun/flock/operations"
)

func init() {
	handlers.Register(handlers.Info{ID: "flock.python", Kinds: []operations.Kind{operations.KindPython},
		New: func() handlers.Handler { return New(Options{}) }})
}

// Provision takes the operator's isolation policy and hides the server's
// data directory from isolated interpreters. It runs before the handler's
// first call, so the pool it replaces has started no interpreter.
func (h *Handler) Provision(_ context.Context, deps handlers.Deps) error {
	h.opts.Hidden = deps.Hidden()
	p, err := deps.Isolation()
	h.opts.Isolation = p
	h.py = pyinterp.NewPool(h.opts)
	return err
}

var (
	_ handlers.Provisioner = (*Handler)(nil)
	_ handlers.Closer      = (*Handler)(nil)
)
