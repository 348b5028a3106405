package python

import (
	"context"
	"errors"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/internal/pyinterp"
	"github.com/flockrun/flock/internal/shell"
	"github.com/flockrun/flock/operations"
)

// Options configure a Handler (its interpreters' pool). Zero fields take
// pyinterp's defaults; run settings, when present, win over OutputLimit
// and DefaultTimeout.
type Options = pyinterp.Options

// DefaultInterruptGrace is how long a timed-out cell may take to stop
// after its interrupt before the interpreter is killed, when
// Options.InterruptGrace is zero.
const DefaultInterruptGrace = pyinterp.DefaultInterruptGrace

// Handler runs the python operation: one persistent interpreter per run.
// It is safe for concurrent use; calls on one run are serialized.
type Handler struct {
	opts Options
	py   *pyinterp.Pool
}

// New returns a Handler. It starts nothing: interpreters start on a run's
// first call.
func New(opts Options) *Handler {
	return &Handler{opts: opts, py: pyinterp.NewPool(opts)}
}

// Handle runs the request's code in the run's interpreter, starting one if
// needed. Code errors, timeouts and interpreter deaths during a cell are
// reported in the PythonResult; failures to run at all (no interpreter,
// cancelled, closed) in Result.Error.
func (h *Handler) Handle(ctx context.Context, env handlers.Env, req operations.Request) operations.Result {
	p := operations.Python.Params(req)
	if p == nil {
		return operations.Failed(req, "python: not a python request")
	}
	c := pyinterp.Cell{Owner: env.RunID, Code: p.Code, WorkDir: env.WorkDir, MayStart: env.MayStart,
		Timeout: cellTimeout(p.TimeoutS, env.Settings)}
	if s := env.Settings; s != nil {
		c.OutputLimit, c.Interpreter, c.Isolation = s.Bash.OutputLimit, s.Python.Interpreter, s.Isolation
	}
	res, err := h.py.Run(ctx, c)
	switch {
	case errors.Is(err, pyinterp.ErrCancelled):
		return operations.Failed(req, "cancelled")
	case err != nil:
		return operations.Failed(req, "python: %v", err)
	}
	return operations.Result{Kind: operations.KindPython, Meta: req.Meta, Data: res}
}

// CloseRun kills the run's interpreter, aborting a call in flight (it
// returns an error result). Unknown runs are ignored.
func (h *Handler) CloseRun(_ context.Context, runID string) {
	h.py.CloseOwner(runID)
}

// Close kills every interpreter; later calls fail. It always returns nil.
func (h *Handler) Close() error {
	return h.py.Close()
}

var (
	_ handlers.Handler   = (*Handler)(nil)
	_ handlers.RunCloser = (*Handler)(nil)
	_ handlers.Closer    = (*Handler)(nil)
)

// cellTimeout is the request's timeout_s, else settings.python.timeout_s,
// as a duration bounded like bash's (30 days, so that a huge value does
// not wrap); 0 leaves the interpreter's default.
func cellTimeout(requestS float64, settings *configs.RunSettings) time.Duration {
	var setS float64
	if settings != nil {
		setS = settings.Python.TimeoutS
	}
	return shell.Timeout(requestS, setS)
}
