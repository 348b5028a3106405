package bash

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/isolation"
	"github.com/flockrun/flock/operations"
)

// DefaultSession is the session used when a request names none.
const DefaultSession = "main"

// fixedEnv is set in every shell to keep tools quiet and non-interactive.
var fixedEnv = []string{
	"TERM=dumb",
	"PAGER=cat",
	"GIT_PAGER=cat",
	"TQDM_DISABLE=1",
	"PS1=",
	"PS2=",
	"PROMPT_COMMAND=",
}

// Options configures a Handler. The zero value is ready to use.
type Options struct {
	// DefaultTimeout applies to commands whose request and run settings give
	// no timeout. Default 600 s (configs.DefaultBashTimeoutS).
	DefaultTimeout time.Duration
	// OutputLimit caps each stream, in bytes, when the run's settings do
	// not. Default 100000 (configs.DefaultBashOutputLimit).
	OutputLimit int
	// Env adds KEY=VALUE entries to every shell's environment, after the
	// base set of the server's (isolation.Environ) and the fixed entries;
	// later entries win. Do not put secrets here: commands (and so models)
	// can read them.
	Env []string
	// Wrap, when set, rewrites the shell's argv before it is started, e.g.
	// to run it under bwrap. It gets the bash argv and the run's work dir
	// and returns the argv to exec. The wrapper must keep stdin, stdout,
	// stderr (the pty) and fd 3 (the stderr pipe), and must let the shell
	// read the per-session command file (under /dev/shm or os.TempDir()).
	// Interrupting relies on the wrapper and the shell staying in the
	// process group started by the handler; killing reaches every
	// descendant either way (see Process tree in the package doc).
	Wrap func(argv []string, workDir string) []string
	// Hidden lists paths a bwrap sandbox makes invisible: the server's data
	// directory. Runs' own work directories inside it stay visible to
	// themselves.
	Hidden []string
	// Isolation is the operator's policy; the zero value is
	// isolation.PolicyAuto: shells run under bwrap wherever it can run,
	// unless the run's settings.isolation asks for more (see
	// isolation.Policy.Resolve).
	Isolation isolation.Policy
}

// Handler runs bash operations in persistent shells, one per (run,
// session). It is safe for concurrent use: commands of one session run one
// at a time, different sessions and runs in parallel.
type Handler struct {
	opts Options

	mu       sync.Mutex
	sessions map[sessionKey]*session // guarded by mu
	closed   bool                    // guarded by mu
}

// New returns a Handler. It starts nothing: shells start with the first
// command of each session.
func New(opts Options) *Handler {
	return &Handler{opts: opts, sessions: make(map[sessionKey]*session)}
}

// Handle runs req.Bash.Command in the (env.RunID, req.Bash.Session) shell.
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
	name := p.Session
	if name == "" {
		name = DefaultSession
	}
	s, err := h.session(sessionKey{run: env.RunID, name: name})
	if err != nil {
		return operations.Failed(req, "%v", err)
	}
	res, err := s.run(ctx, &params{
		command: p.Command,
		timeout: h.timeout(env.Settings, p.TimeoutS),
		limit:   h.limit(env.Settings),
		workDir: env.WorkDir,
		spawn: func(workDir, cmdDir string) ([]string, []string, error) {
			return h.spawnArgs(isolationOf(env.Settings), workDir, cmdDir)
		},
		mayStart: env.MayStart,
	})
	out := operations.Result{Kind: req.Kind, Meta: req.Meta, Data: res}
	if err != nil {
		out.Error = err.Error()
	}
	return out
}

// session returns the session for key, creating it.
func (h *Handler) session(key sessionKey) (*session, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	s, ok := h.sessions[key]
	if !ok {
		s = newSession()
		h.sessions[key] = s
	}
	return s, nil
}

// timeout resolves a command's timeout: the request's, else the run's
// settings, else Options.DefaultTimeout, else 600 s.
func (h *Handler) timeout(settings *configs.RunSettings, reqS float64) time.Duration {
	switch {
	case reqS > 0:
		return seconds(reqS)
	case settings != nil && settings.Bash.TimeoutS > 0:
		return seconds(settings.Bash.TimeoutS)
	case h.opts.DefaultTimeout > 0:
		return h.opts.DefaultTimeout
	}
	return seconds(configs.DefaultBashTimeoutS)
}

// maxTimeout bounds timeouts so that huge values do not overflow.
const maxTimeout = 30 * 24 * time.Hour

func seconds(s float64) time.Duration {
	if s >= maxTimeout.Seconds() {
		return maxTimeout
	}
	return time.Duration(s * float64(time.Second))
}

// limit resolves the per-stream output cap: the run's settings, else
// Options.OutputLimit, else 100000.
func (h *Handler) limit(settings *configs.RunSettings) int {
	switch {
	case settings != nil && settings.Bash.OutputLimit > 0:
		return settings.Bash.OutputLimit
	case h.opts.OutputLimit > 0:
		return h.opts.OutputLimit
	}
	return configs.DefaultBashOutputLimit
}

// spawnArgs returns the argv and environment of a new shell for workDir:
// Options.Wrap when set, else the isolation the policy and the run's
// settings resolve to (bwrap with the command directory bound read-only
// and Options.Hidden invisible).
func (h *Handler) spawnArgs(run configs.Isolation, workDir, cmdDir string) (argv, env []string, err error) {
	argv = []string{"bash", "--noprofile", "--norc", "--noediting"}
	if h.opts.Wrap != nil {
		return h.opts.Wrap(argv, workDir), h.shellEnv(configs.Isolation{}), nil
	}
	iso, err := h.opts.Isolation.Resolve(run)
	if err != nil {
		return nil, nil, fmt.Errorf("isolation: %w", err)
	}
	argv, err = isolation.WrapReadOnly(iso, workDir, h.opts.Hidden, []string{cmdDir}, argv)
	if err != nil {
		return nil, nil, fmt.Errorf("isolation: %w", err)
	}
	return argv, h.shellEnv(iso), nil
}

func isolationOf(s *configs.RunSettings) configs.Isolation {
	if s == nil {
		return configs.Isolation{}
	}
	return s.Isolation
}

// shellEnv builds a shell's environment: the base set of the server's
// (isolation.Environ), the fixed entries, then Options.Env.
func (h *Handler) shellEnv(iso configs.Isolation) []string {
	return isolation.Environ(iso, append(append([]string(nil), fixedEnv...), h.opts.Env...)...)
}

// CloseRun kills the run's shells, interrupting running commands (they
// return ErrSessionClosed). Runs it never saw are fine.
func (h *Handler) CloseRun(_ context.Context, runID string) {
	h.mu.Lock()
	var victims []*session
	for k, s := range h.sessions {
		if k.run == runID {
			victims = append(victims, s)
			delete(h.sessions, k)
		}
	}
	h.mu.Unlock()
	closeAll(victims)
}

// Close kills every shell and makes later commands fail with ErrClosed.
// It waits until running commands have returned. It is idempotent.
func (h *Handler) Close() error {
	h.mu.Lock()
	h.closed = true
	victims := make([]*session, 0, len(h.sessions))
	for _, s := range h.sessions {
		victims = append(victims, s)
	}
	clear(h.sessions)
	h.mu.Unlock()
	closeAll(victims)
	return nil
}

// closeAll closes sessions in parallel and waits for all of them.
func closeAll(ss []*session) {
	var wg sync.WaitGroup
	for _, s := range ss {
		wg.Go(s.close)
	}
	wg.Wait()
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
	if session == "" {
		session = DefaultSession
	}
	h.mu.Lock()
	s, ok := h.sessions[sessionKey{run: runID, name: session}]
	h.mu.Unlock()
	if !ok {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cwd
}
