package files

import (
	"context"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/record"
)

func init() {
	handlers.Register(handlers.Info{ID: "flock.files", Kinds: []operations.Kind{operations.KindReadFile, operations.KindWriteFile},
		New: func() handlers.Handler { return New(nil) }})
}

// ServerAccess returns the Access of a server configured by cfg: its data
// and runs directories, read roots and write roots, plus the run trees'
// grants (nil: none).
func ServerAccess(cfg configs.Server, grants func(id string) *record.Grants) (*Access, error) {
	return NewAccess(AccessOptions{DataDir: cfg.DataDir, RunsDir: cfg.RunsDir(),
		ReadRoots: cfg.ReadRoots, WriteRoots: cfg.WriteRoots, Grants: grants})
}

// Provision confines file operations by the server's access rules (see
// ServerAccess). A server without a data directory keeps runs to their
// work directories.
func (h *Handler) Provision(_ context.Context, deps handlers.Deps) error {
	if deps.Server.DataDir == "" {
		return nil
	}
	a, err := ServerAccess(deps.Server, deps.Grants)
	if err != nil {
		return err
	}
	h.access = a
	return nil
}

var _ handlers.Provisioner = (*Handler)(nil)
