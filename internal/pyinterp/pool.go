package pyinterp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/elide"
	"github.com/flockrun/flock/isolation"
	"github.com/flockrun/flock/operations"
)

// Defaults for Options.
const (
	DefaultOutputLimit    = configs.DefaultBashOutputLimit
	DefaultTimeout        = configs.DefaultPythonTimeoutS * time.Second
	DefaultInterruptGrace = time.Second
	DefaultStartTimeout   = 30 * time.Second
)

// Options configure a Pool. Zero fields take the defaults above; a cell's
// own OutputLimit and Timeout, when set, win over them.
type Options struct {
	// OutputLimit caps a cell's output in bytes (head and tail kept) when
	// the cell sets no limit. Default 100000.
	OutputLimit int
	// DefaultTimeout applies when the cell sets no timeout. Default 600 s.
	DefaultTimeout time.Duration
	// InterruptGrace is how long a timed-out cell may take to stop after
	// the interrupt before the interpreter is killed. Default 1 s.
	InterruptGrace time.Duration
	// StartTimeout bounds starting an interpreter and reading its hello.
	// Default 30 s.
	StartTimeout time.Duration
	// Wrap, when set, rewrites the interpreter's command line, e.g. to run
	// it in a sandbox; it replaces the isolation.Wrap the cell's Isolation
	// and the policy resolve to. It
	// must keep file descriptors 0-4 and the environment. Whatever it
	// starts is killed with the interpreter (see the package doc).
	Wrap func(argv []string, workDir string) []string
	// Hidden are paths made invisible inside a bwrap sandbox (the server's
	// data directory) when Wrap is nil.
	Hidden []string
	// Isolation is the operator's policy; the zero value is
	// isolation.PolicyAuto: interpreters run under bwrap wherever it can
	// run, unless a cell's Isolation asks for more (see
	// isolation.Policy.Resolve).
	Isolation isolation.Policy
	// Env adds "KEY=value" entries to the interpreter's environment, after
	// the base set of the server's (isolation.Environ; later entries win).
	Env []string
}

// Cell is one piece of code for an owner's interpreter.
type Cell struct {
	// Owner names the interpreter: one per owner, a run for the python
	// operation, a sandbox session for the sandbox's code backend.
	Owner string
	// Code is the Python source; the value of a final expression is shown.
	Code string
	// Timeout bounds the cell; 0 means Options.DefaultTimeout.
	Timeout time.Duration
	// OutputLimit caps the output in bytes; 0 means Options.OutputLimit.
	OutputLimit int
	// WorkDir is where a new interpreter starts (created if missing).
	WorkDir string
	// Interpreter is the python binary a new interpreter runs ("": python3
	// found as the package doc says).
	Interpreter string
	// Isolation is what the owner asks for (a run's settings.isolation),
	// resolved against Options.Isolation when an interpreter starts.
	Isolation configs.Isolation
	// MayStart, when set, is asked before the cell starts (after any cell
	// of the same owner it waited for); an error cancels it.
	MayStart func() error
}

// Pool runs cells in persistent interpreters, one per owner. It is safe
// for concurrent use; the cells of one owner are serialized.
type Pool struct {
	opts Options

	// mu guards the fields below. It is never held together with a
	// session's mu.
	mu      sync.Mutex
	owners  map[string]*session // by owner
	interps map[string]string   // resolved interpreter by configured value
	closed  bool
}

// NewPool returns a Pool. It starts nothing: interpreters start on an
// owner's first cell.
func NewPool(opts Options) *Pool {
	if opts.OutputLimit <= 0 {
		opts.OutputLimit = DefaultOutputLimit
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	if opts.InterruptGrace <= 0 {
		opts.InterruptGrace = DefaultInterruptGrace
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	return &Pool{opts: opts, owners: map[string]*session{}, interps: map[string]string{}}
}

// session is one owner's interpreter slot.
type session struct {
	// sem is held (a value sent) by the one call using the session.
	sem chan struct{}

	mu     sync.Mutex
	ip     *interp            // guarded by mu; replaced only by the sem holder
	cancel context.CancelFunc // guarded by mu; the in-flight call's
	closed bool               // guarded by mu
}

// Run runs c in its owner's interpreter, starting one if needed. Code
// errors, timeouts and interpreter deaths during a cell are reported in
// the result; a cell that did not run returns an error: ErrCancelled when
// ctx ended, ErrClosed when the owner or the pool was closed, an error
// wrapping MayStart's when the owner may not start work, or why no
// interpreter could start.
func (p *Pool) Run(ctx context.Context, c Cell) (*operations.PythonResult, error) {
	s, err := p.session(c.Owner)
	if err != nil {
		return nil, err
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ErrCancelled
	}
	defer func() { <-s.sem }()
	// The cell may have waited for the one before: it starts only if the
	// owner may still start work here.
	if ctx.Err() != nil {
		return nil, ErrCancelled
	}
	if c.MayStart != nil {
		if err := c.MayStart(); err != nil {
			return nil, fmt.Errorf("not started: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	closed := s.closed
	s.cancel = cancel
	s.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	res, err := p.call(ctx, s, c)
	s.mu.Lock()
	s.cancel = nil
	closed = s.closed
	s.mu.Unlock()
	switch {
	case closed && err != nil:
		return nil, ErrClosed
	case ctx.Err() != nil && err != nil:
		return nil, ErrCancelled
	case err != nil:
		return nil, err
	}
	return res, nil
}

// session returns the owner's session, creating it.
func (p *Pool) session(owner string) (*session, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	s := p.owners[owner]
	if s == nil {
		s = &session{sem: make(chan struct{}, 1)}
		p.owners[owner] = s
	}
	return s, nil
}

// call runs one cell; the caller holds s.sem. An error means the cell did
// not run (or was cancelled); everything else is in the result.
func (p *Pool) call(ctx context.Context, s *session, c Cell) (*operations.PythonResult, error) {
	ip, err := p.ensure(ctx, s, c)
	if err != nil {
		return nil, err
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = p.opts.DefaultTimeout
	}
	limit := c.OutputLimit
	if limit <= 0 {
		limit = p.opts.OutputLimit
	}
	if err := ip.out.Truncate(0); err != nil {
		p.drop(s, ip)
		return nil, fmt.Errorf("reset output: %w", err)
	}
	ip.nextID++
	id := ip.nextID
	start := time.Now()
	if err := ip.send(request{Op: "exec", ID: id, Code: c.Code}, start.Add(timeout)); err != nil {
		ip.kill()
		derr := ip.deathError("while receiving the cell", err)
		p.drop(s, ip)
		return nil, derr
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var graceC <-chan time.Time
	interrupted := false
	for {
		select {
		case rep, ok := <-ip.replies:
			if !ok {
				ip.kill()
				return p.died(s, ip, limit, ip.deathError("while running the cell", ip.readErr)), nil
			}
			if rep.ID != id {
				continue // a late reply to an earlier cell
			}
			out, cut, err := readOutput(ip.out, limit)
			if err != nil {
				return nil, fmt.Errorf("read output: %w", err)
			}
			res := &operations.PythonResult{Output: out, Error: rep.Error, Truncated: cut}
			if interrupted {
				// A timeout ends every process the interpreter started,
				// in this cell or earlier ones; the interpreter is kept.
				kept := "the interpreter and its globals are kept"
				if err := ip.proc.KillDescendants(ip.hello.PID); err != nil {
					ip.kill()
					p.drop(s, ip)
					kept = fmt.Sprintf("the processes it started could not be stopped (%v), so the interpreter "+
						"was killed; it restarts with fresh globals on the next call", err)
				}
				if rep.Interrupted {
					res.TimedOut = true
					res.Error = joinLines(res.Error, fmt.Sprintf(
						"timed out after %s: the cell was interrupted; %s", seconds(timeout), kept))
				}
			}
			res.Error, _ = elide.Middle(res.Error, limit)
			return res, nil
		case <-ip.exited:
			ip.kill()
			return p.died(s, ip, limit, ip.deathError("while running the cell", nil)), nil
		case <-timer.C:
			interrupted = true
			grace := time.NewTimer(p.opts.InterruptGrace)
			defer grace.Stop()
			graceC = grace.C
			if err := ip.send(request{Op: "interrupt", ID: id}, time.Now().Add(p.opts.InterruptGrace)); err != nil {
				graceC = closedTime
			}
		case <-graceC:
			ip.kill()
			out, cut, _ := readOutput(ip.out, limit)
			p.drop(s, ip)
			return &operations.PythonResult{
				Output:    out,
				Truncated: cut,
				TimedOut:  true,
				Error: fmt.Sprintf("timed out after %s: the cell did not stop within %s of an interrupt, "+
					"so the interpreter was killed; it restarts with fresh globals on the next call",
					seconds(timeout), seconds(p.opts.InterruptGrace)),
			}, nil
		case <-ctx.Done():
			p.drop(s, ip)
			return nil, ctx.Err()
		}
	}
}

// closedTime is a channel that is always ready.
var closedTime = func() <-chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}()

// died builds the result for an interpreter that ended during a cell (the
// cell called os._exit, crashed it, or closed the protocol fds) and drops
// it. ip must have been killed.
func (p *Pool) died(s *session, ip *interp, limit int, cause error) *operations.PythonResult {
	out, cut, _ := readOutput(ip.out, limit)
	p.drop(s, ip)
	msg, _ := elide.Middle(cause.Error()+"; globals lost, a new interpreter starts on the next call", limit)
	return &operations.PythonResult{Output: out, Truncated: cut, Error: msg}
}

// ensure returns the session's live interpreter, starting one if needed.
// The caller holds s.sem.
func (p *Pool) ensure(ctx context.Context, s *session, c Cell) (*interp, error) {
	s.mu.Lock()
	ip := s.ip
	s.mu.Unlock()
	if ip != nil && ip.alive() {
		return ip, nil
	}
	if ip != nil {
		p.drop(s, ip)
	}
	ip, err := p.start(ctx, c)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.ip = ip
	}
	s.mu.Unlock()
	if closed {
		ip.release()
		return nil, ErrClosed
	}
	return ip, nil
}

// drop releases ip and clears it from the session. The caller holds s.sem.
func (p *Pool) drop(s *session, ip *interp) {
	s.mu.Lock()
	if s.ip == ip {
		s.ip = nil
	}
	s.mu.Unlock()
	ip.release()
}

// start resolves the interpreter and isolation and starts a driver in the
// cell's work directory (created if missing).
func (p *Pool) start(ctx context.Context, c Cell) (*interp, error) {
	if c.WorkDir == "" {
		return nil, errors.New("no work directory")
	}
	workDir, err := filepath.Abs(c.WorkDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, fmt.Errorf("create work directory: %w", err)
	}
	var iso configs.Isolation
	py, err := p.interpreter(ctx, c.Interpreter)
	if err != nil {
		return nil, err
	}
	argv := []string{py, "-c", driverSource}
	if p.opts.Wrap != nil {
		argv = p.opts.Wrap(argv, workDir)
	} else {
		if iso, err = p.opts.Isolation.Resolve(c.Isolation); err != nil {
			return nil, fmt.Errorf("isolation: %w", err)
		}
		if argv, err = isolation.Wrap(iso, workDir, p.opts.Hidden, argv); err != nil {
			return nil, err
		}
	}
	if len(argv) == 0 {
		return nil, errors.New("wrap returned an empty command")
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.StartTimeout)
	defer cancel()
	return startInterp(ctx, argv, workDir, baseEnv(iso, p.opts.Env))
}

// CloseOwner kills the owner's interpreter, aborting a cell in flight (it
// returns ErrClosed). Unknown owners are ignored.
func (p *Pool) CloseOwner(owner string) {
	p.mu.Lock()
	s := p.owners[owner]
	delete(p.owners, owner)
	p.mu.Unlock()
	if s != nil {
		s.close()
	}
}

// Close kills every interpreter; later cells fail with ErrClosed. It
// always returns nil.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	owners := p.owners
	p.owners = map[string]*session{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range owners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.close()
		}()
	}
	wg.Wait()
	return nil
}

// close marks the session closed, cancels the call in flight, waits for it
// to return and releases the interpreter.
func (s *session) close() {
	s.mu.Lock()
	s.closed = true
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()
	s.sem <- struct{}{}
	s.mu.Lock()
	ip := s.ip
	s.ip = nil
	s.mu.Unlock()
	if ip != nil {
		ip.release()
	}
	<-s.sem
}

func joinLines(a, b string) string {
	if a == "" {
		return b
	}
	if !strings.HasSuffix(a, "\n") {
		a += "\n"
	}
	return a + b
}

func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'g', -1, 64) + "s"
}
