package bash

import (
	"context"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/internal/shell"
	"github.com/flockrun/flock/operations"
)

// DefaultSession is the session used when a request names none.
const DefaultSession = shell.DefaultSession

// Options configures a Handler (the shells' pool). The zero value is
// ready to use: commands time out after 600 s, streams are capped at
// 100000 bytes, shells run isolated under the policy isolation.PolicyAuto.
type Options = shell.Options

// Handler runs bash operations in persistent shells, one per (run,
// session). It is safe for concurrent use: commands of one session run one
// at a time, different sessions and runs in parallel.
type Handler struct {
	opts  Options
	shell *shell.Pool
}

// New returns a Handler. It starts nothing: shells start with the first
// command of each session.
func New(opts Options) *Handler {
	return &Handler{opts: opts, shell: shell.NewPool(opts)}
}

// Handle runs the request's command in the (env.RunID, session) shell.
// A command that ran, whatever its exit status, yields a result without
// Error. A timeout yields TimedOut, exit code 124 and the output captured
// until then; the shell is killed and the next command gets a new one in
// the same cwd (exported variables, functions and aliases are lost). A done
// ctx does the same and sets Error to "cancelled".
func (h *Handler) Handle(ctx context.Context, env handlers.Env, req operations.Request) operations.Result {
	p := operations.Bash.Params(req)
	if p == nil {
		return operations.Failed(req, "%v: want %s params", ErrBadRequest, operations.KindBash)
	}
	if env.WorkDir == "" {
		return operations.Failed(req, "%v: run %q has no work dir", ErrBadRequest, env.RunID)
	}
	c := shell.Command{
		Owner: env.RunID, Session: p.Session, Text: p.Command,
		Timeout: timeout(env.Settings, p.TimeoutS), WorkDir: env.WorkDir,
		MayStart: env.MayStart,
	}
	if s := env.Settings; s != nil {
		c.OutputLimit, c.Isolation = s.Bash.OutputLimit, s.Isolation
	}
	res, err := h.shell.Run(ctx, c)
	out := operations.Result{Kind: req.Kind, Meta: req.Meta, Data: res}
	if err != nil {
		out.Error = err.Error()
	}
	return out
}

// timeout resolves a command's timeout from the request and the run's
// settings; 0 leaves it to the pool (Options.DefaultTimeout, else 600 s).
func timeout(settings *configs.RunSettings, reqS float64) time.Duration {
	var setS float64
	if settings != nil {
		setS = settings.Bash.TimeoutS
	}
	return shell.Timeout(reqS, setS)
}

// CloseRun kills the run's shells, interrupting running commands (they
// return shell.ErrSessionClosed). Runs it never saw are fine.
func (h *Handler) CloseRun(_ context.Context, runID string) {
	h.shell.CloseOwner(runID)
}

// Close kills every shell and makes later commands fail with
// shell.ErrClosed. It waits until running commands have returned. It is
// idempotent.
func (h *Handler) Close() error {
	return h.shell.Close()
}

var (
	_ handlers.Handler   = (*Handler)(nil)
	_ handlers.RunCloser = (*Handler)(nil)
	_ handlers.Closer    = (*Handler)(nil)
)

// Cwd returns the working directory the (runID, session) shell reported
// after its last command, "" when it has run none. It waits for a command
// running in that shell.
func (h *Handler) Cwd(runID, session string) string {
	return h.shell.Cwd(runID, session)
}
