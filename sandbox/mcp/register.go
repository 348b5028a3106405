package mcp

import (
	"context"
	"errors"
	"fmt"

	"github.com/flockrun/flock/sandbox"
)

func init() {
	sandbox.RegisterBackend(sandbox.BackendInfo{Name: "mcp", New: func() sandbox.Backend { return &Backend{} }})
}

// Provision parses resources.mcp.config and lists every server's tools (see the package
// doc, # Tools).
func (b *Backend) Provision(ctx context.Context, env sandbox.Env) error {
	return b.provisionWith(ctx, env.Decode, env.DataDir, env.Logger)
}

// Tools returns one session tool per discovered MCP tool, sorted by server then by the
// server's order.
func (b *Backend) Tools() []sandbox.Tool {
	tools := make([]sandbox.Tool, 0, len(b.tools))
	for _, spec := range b.tools {
		tools = append(tools, sandbox.Tool{
			Name:        spec.Name,
			Description: spec.Description,
			Parameters:  spec.Parameters,
			Run: func(ctx context.Context, c *sandbox.Call) (any, error) {
				return b.run(ctx, spec, c)
			},
		})
	}
	return tools
}

func (b *Backend) run(ctx context.Context, spec ToolSpec, c *sandbox.Call) (any, error) {
	if c.Session == nil {
		return nil, sandbox.Errorf(sandbox.CodeResourceNotInitialized, "%s needs an mcp session", spec.Name)
	}
	st, ok := c.Session.State.(*sessionState)
	if !ok || st == nil {
		return nil, sandbox.Errorf(sandbox.CodeResourceNotInitialized, "session %s has no mcp servers", c.Session.ID)
	}
	res, err := st.call(ctx, spec, c.Params)
	if err != nil {
		return nil, toolError(err, res)
	}
	return res, nil
}

// toolError maps the backend's errors to AgentFlow codes (see the package doc).
func toolError(err error, res *Result) error {
	switch {
	case errors.Is(err, ErrToolFailed):
		return &sandbox.Error{Code: sandbox.CodeExecutionError, Message: err.Error(), Data: res}
	case errors.Is(err, context.DeadlineExceeded):
		return sandbox.Errorf(sandbox.CodeTimeout, "%v", err)
	case errors.Is(err, ErrNotEnabled):
		return sandbox.Errorf(sandbox.CodeBackendNotInitialized, "%v", err)
	case errors.Is(err, ErrClosed):
		return sandbox.Errorf(sandbox.CodeResourceNotInitialized, "%v", err)
	case errors.Is(err, ErrServerGone), errors.Is(err, ErrCall):
		return sandbox.Errorf(sandbox.CodeDependencyFailure, "%v", err)
	}
	return err
}

// Initialize starts the session's servers in its workspace; the session's State is
// their handles. A server that fails to start is 5011 naming it; a bad session_config
// is 4000.
func (b *Backend) Initialize(ctx context.Context, s *sandbox.Session, cfg map[string]any) (any, error) {
	st, err := b.start(ctx, s.Workspace, cfg)
	if err != nil {
		if errors.Is(err, ErrServerStart) {
			return nil, sandbox.Errorf(sandbox.CodeBackendNotInitialized, "%v", err)
		}
		return nil, sandbox.Errorf(sandbox.CodeInvalidInput, "%v", err)
	}
	b.track(st, true)
	return st, nil
}

// Cleanup stops the session's servers and kills their process groups.
func (b *Backend) Cleanup(_ context.Context, s *sandbox.Session) error {
	st, ok := s.State.(*sessionState)
	if !ok || st == nil {
		return nil
	}
	b.track(st, false)
	if err := st.stop(); err != nil {
		return fmt.Errorf("mcp session %s: %w", s.ID, err)
	}
	return nil
}

// Shutdown stops the servers of every session not cleaned up yet.
func (b *Backend) Shutdown(context.Context) error {
	b.mu.Lock()
	live := b.live
	b.live = nil
	b.mu.Unlock()
	var errs []error
	for st := range live {
		errs = append(errs, st.stop())
	}
	return errors.Join(errs...)
}

func (b *Backend) track(st *sessionState, add bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !add {
		delete(b.live, st)
		return
	}
	if b.live == nil {
		b.live = map[*sessionState]struct{}{}
	}
	b.live[st] = struct{}{}
}

// Interface guards.
var (
	_ sandbox.Backend     = (*Backend)(nil)
	_ sandbox.Provisioner = (*Backend)(nil)
	_ sandbox.Initializer = (*Backend)(nil)
	_ sandbox.Cleaner     = (*Backend)(nil)
	_ sandbox.Shutdowner  = (*Backend)(nil)
)
