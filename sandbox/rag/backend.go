package rag

import (
	"context"
	"errors"

	"github.com/flockrun/flock/sandbox"
)

func init() {
	sandbox.RegisterBackend(sandbox.BackendInfo{Name: "rag", New: func() sandbox.Backend { return new(Backend) }})
}

// Backend is the sandbox backend "rag": its config section is resources.rag.config
// or apis.rag, its index lives in the backend's data dir.
type Backend struct {
	engine *Engine
}

// Provision validates the config section.
func (b *Backend) Provision(ctx context.Context, env sandbox.Env) error {
	e, err := newEngine(env.Decode, env.DataDir, env.Logger)
	if err != nil {
		return err
	}
	b.engine = e
	return nil
}

// WarmUp opens (or builds) the index.
func (b *Backend) WarmUp(ctx context.Context) error {
	if b.engine == nil {
		return errors.New("rag: not provisioned")
	}
	return b.engine.WarmUp(ctx)
}

// Shutdown closes the index.
func (b *Backend) Shutdown(ctx context.Context) error {
	if b.engine == nil {
		return nil
	}
	return b.engine.Shutdown(ctx)
}

// Tools returns rag:search, rag:batch_search and rag:stats, all stateless.
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
	_ sandbox.Shutdowner  = (*Backend)(nil)
)
