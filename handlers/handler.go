package handlers

import (
	"context"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
)

// Env describes the run an operation belongs to.
type Env struct {
	RunID string
	// OpID is "<run>/<step>/<index>", stable across resumes.
	OpID    string
	WorkDir string
	Task    string
	// Settings are the run's parsed common settings (defaults applied).
	Settings *configs.RunSettings
	// Usage reports the run's usage and limits at the moment of the call.
	Usage func() (operations.RunUsage, operations.RunLimits)
	// State is the run's state as of the start of the current step.
	State phases.State
}

// Handler runs one kind of operation.
type Handler interface {
	Handle(ctx context.Context, env Env, req operations.Request) operations.Result
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, env Env, req operations.Request) operations.Result

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, env Env, req operations.Request) operations.Result {
	return f(ctx, env, req)
}

// RunCloser is implemented by handlers that keep per-run resources.
type RunCloser interface {
	// CloseRun releases the run's resources. It is called once the run ends
	// or is unloaded, and must tolerate runs it never saw.
	CloseRun(runID string)
}

// Closer is implemented by handlers that hold process-wide resources.
type Closer interface {
	Close() error
}

var _ Handler = HandlerFunc(nil)
