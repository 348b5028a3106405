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
	e, err := NewEngine(env.Config)
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
	specs := b.engine.Tools()
	tools := make([]sandbox.Tool, len(specs))
	for i, s := range specs {
		run := s.Run
		tools[i] = sandbox.Tool{
			Name: s.Name, Description: s.Description, Parameters: s.Parameters, Stateless: true,
			Run: func(ctx context.Context, c *sandbox.Call) (any, error) { return run(ctx, c.Params) },
		}
	}
	return tools
}

var (
	_ sandbox.Backend     = (*Backend)(nil)
	_ sandbox.Provisioner = (*Backend)(nil)
	_ sandbox.WarmUpper   = (*Backend)(nil)
)
