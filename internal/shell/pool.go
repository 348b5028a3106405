package shell

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/isolation"
	"github.com/flockrun/flock/operations"
)

// DefaultSession is the session used when a command names none.
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

// Options configures a Pool. The zero value is ready to use.
type Options struct {
	// DefaultTimeout applies to commands that give no timeout. Default
	// 600 s (configs.DefaultBashTimeoutS).
	DefaultTimeout time.Duration
	// OutputLimit caps each stream, in bytes, for commands that give no
	// limit. Default 100000 (configs.DefaultBashOutputLimit).
	OutputLimit int
	// Env adds KEY=VALUE entries to every shell's environment, after the
	// base set of the server's (isolation.Environ) and the fixed entries;
	// later entries win. Do not put secrets here: commands (and so models)
	// can read them.
	Env []string
	// Wrap, when set, rewrites the shell's argv before it is started, e.g.
	// to run it under bwrap. It gets the bash argv and the work dir and
	// returns the argv to exec. The wrapper must keep stdin, stdout,
	// stderr (the pty) and fd 3 (the stderr pipe), and must let the shell
	// read the per-session command file (under /dev/shm or os.TempDir()).
	// Interrupting relies on the wrapper and the shell staying in the
	// process group started by the pool; killing reaches every descendant
	// either way (see Process tree in the package doc).
	Wrap func(argv []string, workDir string) []string
	// Hidden lists paths a bwrap sandbox makes invisible: the server's data
	// directory. Work directories inside it stay visible to their own
	// shells.
	Hidden []string
	// Isolation is the operator's policy; the zero value is
	// isolation.PolicyAuto: shells run under bwrap wherever it can run,
	// unless a command's Isolation asks for more (see
	// isolation.Policy.Resolve).
	Isolation isolation.Policy
}

// Command is one command for a pool's shell.
type Command struct {
	// Owner and Session name the shell: one per (owner, session), Session
	// "" being DefaultSession. The owner is a run, or a sandbox session.
	Owner, Session string
	// Text is the command, which may span lines.
	Text string
	// Timeout bounds the command; 0 means Options.DefaultTimeout.
	Timeout time.Duration
	// OutputLimit caps each stream in bytes; 0 means Options.OutputLimit.
	OutputLimit int
	// WorkDir is where a new shell starts (created if missing).
	WorkDir string
	// Isolation is what the owner asks for (a run's settings.isolation),
	// resolved against Options.Isolation when a shell starts.
	Isolation configs.Isolation
	// MayStart, when set, is asked before the command starts (after any
	// command of the same session it waited for); an error cancels it.
	MayStart func() error
}

// Pool runs commands in persistent shells, one per (owner, session). It is
// safe for concurrent use: commands of one session run one at a time,
// different sessions and owners in parallel.
type Pool struct {
	opts Options

	mu       sync.Mutex
	sessions map[sessionKey]*session // guarded by mu
	closed   bool                    // guarded by mu
}

// NewPool returns a Pool. It starts nothing: shells start with the first
// command of each session.
func NewPool(opts Options) *Pool {
	return &Pool{opts: opts, sessions: make(map[sessionKey]*session)}
}

// Run runs c in its shell, starting the shell if needed. A command that
// ran, whatever its exit status, yields a result and no error. A timeout
// yields TimedOut, exit code 124 and the output captured until then; the
// shell is killed and the next command gets a new one in the same cwd
// (exported variables, functions and aliases are lost). A done ctx does
// the same and returns ErrCancelled with the partial result. A session
// closed under the command returns ErrSessionClosed; a shell that cannot
// start, an ErrStart.
func (p *Pool) Run(ctx context.Context, c Command) (*operations.BashResult, error) {
	name := c.Session
	if name == "" {
		name = DefaultSession
	}
	s, err := p.session(sessionKey{owner: c.Owner, name: name})
	if err != nil {
		return nil, err
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = p.opts.DefaultTimeout
	}
	if timeout <= 0 {
		timeout = Seconds(configs.DefaultBashTimeoutS)
	}
	limit := c.OutputLimit
	if limit <= 0 {
		limit = p.opts.OutputLimit
	}
	if limit <= 0 {
		limit = configs.DefaultBashOutputLimit
	}
	return s.run(ctx, &params{
		command: c.Text,
		timeout: timeout,
		limit:   limit,
		workDir: c.WorkDir,
		spawn: func(workDir, cmdDir string) ([]string, []string, error) {
			return p.spawnArgs(c.Isolation, workDir, cmdDir)
		},
		mayStart: c.MayStart,
	})
}

// session returns the session for key, creating it.
func (p *Pool) session(key sessionKey) (*session, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	s, ok := p.sessions[key]
	if !ok {
		s = newSession()
		p.sessions[key] = s
	}
	return s, nil
}

// maxTimeout bounds timeouts so that huge values do not overflow.
const maxTimeout = 30 * 24 * time.Hour

// Seconds converts a timeout in seconds, as requests give it, to a
// duration, bounded by 30 days so that huge values do not overflow.
func Seconds(s float64) time.Duration {
	if s >= maxTimeout.Seconds() {
		return maxTimeout
	}
	return time.Duration(s * float64(time.Second))
}

// Timeout is a request's timeout in seconds when it gives one (> 0), else
// the run's setting (> 0), as a duration bounded as Seconds bounds it; 0
// when neither gives one (the pool's or interpreter's default applies).
func Timeout(requestS, settingS float64) time.Duration {
	switch {
	case requestS > 0:
		return Seconds(requestS)
	case settingS > 0:
		return Seconds(settingS)
	}
	return 0
}

// spawnArgs returns the argv and environment of a new shell for workDir:
// Options.Wrap when set, else the isolation the policy and the owner's
// request resolve to (bwrap with the command directory bound read-only
// and Options.Hidden invisible).
func (p *Pool) spawnArgs(run configs.Isolation, workDir, cmdDir string) (argv, env []string, err error) {
	argv = []string{"bash", "--noprofile", "--norc", "--noediting"}
	if p.opts.Wrap != nil {
		return p.opts.Wrap(argv, workDir), p.shellEnv(configs.Isolation{}), nil
	}
	iso, err := p.opts.Isolation.Resolve(run)
	if err != nil {
		return nil, nil, fmt.Errorf("isolation: %w", err)
	}
	argv, err = isolation.WrapReadOnly(iso, workDir, p.opts.Hidden, []string{cmdDir}, argv)
	if err != nil {
		return nil, nil, fmt.Errorf("isolation: %w", err)
	}
	return argv, p.shellEnv(iso), nil
}

// shellEnv builds a shell's environment: the base set of the server's
// (isolation.Environ), the fixed entries, then Options.Env.
func (p *Pool) shellEnv(iso configs.Isolation) []string {
	return isolation.Environ(iso, append(append([]string(nil), fixedEnv...), p.opts.Env...)...)
}

// CloseOwner kills the owner's shells, interrupting running commands
// (they return ErrSessionClosed). Owners it never saw are fine.
func (p *Pool) CloseOwner(owner string) {
	p.mu.Lock()
	var victims []*session
	for k, s := range p.sessions {
		if k.owner == owner {
			victims = append(victims, s)
			delete(p.sessions, k)
		}
	}
	p.mu.Unlock()
	closeAll(victims)
}

// Close kills every shell and makes later commands fail with ErrClosed.
// It waits until running commands have returned. It is idempotent.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	victims := make([]*session, 0, len(p.sessions))
	for _, s := range p.sessions {
		victims = append(victims, s)
	}
	clear(p.sessions)
	p.mu.Unlock()
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

// Cwd returns the working directory the (owner, session) shell reported
// after its last command, "" when it has run none. It waits for a command
// running in that shell.
func (p *Pool) Cwd(owner, session string) string {
	if session == "" {
		session = DefaultSession
	}
	p.mu.Lock()
	s, ok := p.sessions[sessionKey{owner: owner, name: session}]
	p.mu.Unlock()
	if !ok {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cwd
}
