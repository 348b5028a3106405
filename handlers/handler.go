package handlers

import (
	"context"
	"encoding/json"
	"time"

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
	// Waiting, when not nil, tells the run that this operation is held by
	// something outside its control (a rate limit, a retry backoff) until
	// the given time: the run publishes an event and its head shows the
	// reason and the time while the wait lasts. A zero until ends the wait.
	// Handlers must call it before a wait of more than a second and end it
	// after; it is safe for concurrent use.
	Waiting func(reason string, until time.Time)
	// MayStart, when not nil, says whether the run may still start work
	// on this node: nil, or an error when it may not (in a cluster, the
	// run's lease may have lapsed while the process was stopped, and
	// another node may drive the run now). The executor checks it before
	// it calls Handle; a handler that starts work later than that — a
	// command queued behind another in the run's shell or interpreter, a
	// model request sent after a limiter wait or a retry's backoff —
	// calls it right before, and starts nothing on an error. It is safe
	// for concurrent use.
	MayStart func() error
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

// Asker is implemented by handlers of operations a person answers (the
// human and intervention kinds). The executor never dispatches such an
// operation: the run parks, holding no goroutine, until an answer arrives
// over the API (Executor.Answer), which Answer turns into the operation's
// result; that result is journaled like any other. Handle is not called.
type Asker interface {
	// Question describes the request for the person answering it.
	Question(req operations.Request) (Question, error)
	// Answer checks an answer (any JSON value) against the request and
	// returns the operation's result; an error names what is wrong with
	// the answer.
	Answer(req operations.Request, answer json.RawMessage, now time.Time) (operations.Result, error)
}

// Question is what a person is asked.
type Question struct {
	Text    string
	Choices []string
	Scale   *operations.Scale
	// Action is the action waiting for approval or replacement
	// (intervention), or nil.
	Action json.RawMessage
}

// RunCloser is implemented by handlers that keep per-run resources.
type RunCloser interface {
	// CloseRun releases the run's resources. It is called once the run ends
	// or is unloaded, and must tolerate runs it never saw. ctx carries the
	// run's values but is not cancelled with the run (a cancelled run
	// still releases what it holds); a handler that waits (destroying
	// remote sessions) bounds the wait itself.
	CloseRun(ctx context.Context, runID string)
}

// Closer is implemented by handlers that hold process-wide resources
// (shells, interpreters, connections). Close is called once when the
// server stops, and also after a failed or partial Provision, so it must
// tolerate a handler that was never set up. (A sandbox backend's Cleaner
// is another thing: it releases one session.)
type Closer interface {
	Close() error
}

var _ Handler = HandlerFunc(nil)
