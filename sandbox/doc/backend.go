package doc

import (
	"context"
	"errors"

	"github.com/flockrun/flock/sandbox"
)

func init() {
	sandbox.RegisterBackend(sandbox.BackendInfo{Name: "doc", New: func() sandbox.Backend { return new(Backend) }})
}

// Backend is the sandbox backend "doc": its config section is apis.doc or
// resources.doc.config.
type Backend struct {
	engine *Engine
}

// Provision validates the config section.
func (b *Backend) Provision(ctx context.Context, env sandbox.Env) error {
	e, err := newEngine(env.Decode)
	if err != nil {
		return err
	}
	b.engine = e
	return nil
}

// WarmUp reads the documents folder.
func (b *Backend) WarmUp(ctx context.Context) error {
	if b.engine == nil {
		return errors.New("doc: not provisioned")
	}
	return b.engine.WarmUp(ctx)
}

// Tools returns doc:search and doc:read, both stateless.
func (b *Backend) Tools() []sandbox.Tool {
	if b.engine == nil {
		return nil
	}
	return b.engine.Tools()
}

var (
	_ sandbox.Backend     = (*Backend)(nil)
	_ sandbox.Provisioner = (*Backend)(nil)
	_ sandbox.WarmUpper   = (*Backend)(nil)
)
