package shell

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/flockrun/flock/operations"
)

// Exit codes reported when the shell did not report one.
const (
	// TimeoutExitCode is the exit_code of a timed-out command, as with
	// coreutils timeout(1).
	TimeoutExitCode = 124
	// CancelExitCode is the exit_code of a command whose context ended
	// (128+SIGINT).
	CancelExitCode = 130
	// ClosedExitCode is the exit_code of a command whose session was closed
	// under it (128+SIGKILL).
	ClosedExitCode = 137
)

// sessionKey names a shell: one per (owner, session name).
type sessionKey struct {
	owner, name string
}

// session is one named shell of an owner. The bash process behind it is
// started lazily and replaced after a kill.
type session struct {
	done      chan struct{} // closed by close; running commands then stop
	closeOnce sync.Once

	mu  sync.Mutex // serializes commands; guards the fields below
	sh  *shell     // the live shell, nil before the first command and after a kill
	cwd string     // the shell's last reported $PWD; a restarted shell cds here
}

func newSession() *session {
	return &session{done: make(chan struct{})}
}

// params is what one command needs, resolved by the pool.
type params struct {
	command string
	timeout time.Duration
	limit   int
	workDir string
	// spawn returns the argv and environment of a new shell whose command
	// file lives in cmdDir.
	spawn func(workDir, cmdDir string) (argv, env []string, err error)
	// mayStart is Command.MayStart (nil: always).
	mayStart func() error
}

// run runs one command, starting the shell if needed. On a timeout, a
// cancellation or a closed session it kills the shell (the next command
// starts a new one in the last known cwd) and returns the output captured
// so far. The error is ErrCancelled, ErrSessionClosed or an ErrStart.
func (s *session) run(ctx context.Context, p *params) (*operations.BashResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.done:
		return nil, ErrSessionClosed
	default:
	}
	// The command may have waited for the one before: it starts only if
	// the run may still start work here.
	if err := ctx.Err(); err != nil {
		return &operations.BashResult{ExitCode: CancelExitCode}, ErrCancelled
	}
	if p.mayStart != nil {
		if err := p.mayStart(); err != nil {
			return &operations.BashResult{ExitCode: CancelExitCode}, fmt.Errorf("%w: not started: %w", ErrCancelled, err)
		}
	}
	if s.sh == nil {
		if err := s.startLocked(ctx, p); err != nil {
			return nil, err
		}
	}
	sh := s.sh
	tok := newToken()
	c := newCollector(tok, p.limit)
	if err := sh.send(p.command, tok); err != nil {
		s.killLocked(nil)
		return nil, err
	}
	timer := time.NewTimer(p.timeout)
	defer timer.Stop()

	res := &operations.BashResult{}
	var err error
	switch sh.wait(ctx, s.done, timer.C, c) {
	case completed:
		res.ExitCode = c.outSc.M.Code
	case exited:
		s.killLocked(c)
		res.ExitCode = sh.status
	case timedOut:
		sh.interrupt(s.done, tok, c)
		s.killLocked(c)
		res.TimedOut, res.ExitCode = true, TimeoutExitCode
	case cancelled:
		sh.interrupt(s.done, tok, c)
		s.killLocked(c)
		res.ExitCode, err = CancelExitCode, ErrCancelled
	case closed:
		s.killLocked(c)
		res.ExitCode, err = ClosedExitCode, ErrSessionClosed
	}
	if c.outSc.Done && c.outSc.OK && c.outSc.M.Cwd != "" {
		s.cwd = c.outSc.M.Cwd
	}
	var cutOut, cutErr bool
	res.Stdout, cutOut = c.out.Result(p.limit)
	res.Stderr, cutErr = c.err.Result(p.limit)
	res.Truncated = cutOut || cutErr
	return res, err
}

// startLocked starts a shell in p.workDir, moves it to the session's last
// cwd and waits for its ready marker. s.mu must be held.
func (s *session) startLocked(ctx context.Context, p *params) error {
	if err := os.MkdirAll(p.workDir, 0o755); err != nil {
		return fmt.Errorf("%w: work dir: %w", ErrStart, err)
	}
	dir, err := newCommandDir()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStart, err)
	}
	argv, env, err := p.spawn(p.workDir, dir)
	if err == nil && len(argv) == 0 {
		err = errors.New("empty argv")
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("%w: %w", ErrStart, err)
	}
	sh, err := startShell(argv, p.workDir, dir, env)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStart, err)
	}
	tok := newToken()
	if _, err := sh.ptmx.Write([]byte(initLine(tok, s.cwd))); err != nil {
		sh.kill(nil)
		return fmt.Errorf("%w: write init: %w", ErrStart, err)
	}
	c := newCollector(tok, 2048)
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	switch sh.wait(ctx, s.done, timer.C, c) {
	case completed:
		s.sh = sh
		if c.outSc.OK && c.outSc.M.Cwd != "" {
			s.cwd = c.outSc.M.Cwd
		}
		return nil
	case exited:
		sh.kill(c)
		out, _ := c.out.Result(2048)
		errOut, _ := c.err.Result(2048)
		return fmt.Errorf("%w: %s exited with status %d: %q %q", ErrStart, argv[0], sh.status, out, errOut)
	case timedOut:
		sh.kill(nil)
		return fmt.Errorf("%w: not ready after %s", ErrStart, startTimeout)
	case cancelled:
		sh.kill(nil)
		return ErrCancelled
	default:
		sh.kill(nil)
		return ErrSessionClosed
	}
}

// killLocked kills the live shell, collecting its remaining output into c
// when c is not nil. s.mu must be held.
func (s *session) killLocked(c *collector) {
	if s.sh != nil {
		s.sh.kill(c)
		s.sh = nil
	}
}

// close kills the session's shell, interrupting a running command, and
// waits until that command has returned. It is idempotent.
func (s *session) close() {
	s.closeOnce.Do(func() { close(s.done) })
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked(nil)
}
