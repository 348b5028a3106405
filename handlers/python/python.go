package python

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
	"github.com/flockrun/flock/handlers"
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

// Options configure a Handler. Zero fields take the defaults above; run
// settings, when present, win over OutputLimit and DefaultTimeout.
type Options struct {
	// OutputLimit caps a cell's output in bytes (head and tail kept) when
	// the run's settings.bash.output_limit is unset. Default 100000.
	OutputLimit int
	// DefaultTimeout applies when neither the request nor the run's
	// settings.python.timeout_s set one. Default 600 s.
	DefaultTimeout time.Duration
	// InterruptGrace is how long a timed-out cell may take to stop after
	// the interrupt before the interpreter is killed. Default 1 s.
	InterruptGrace time.Duration
	// StartTimeout bounds starting an interpreter and reading its hello.
	// Default 30 s.
	StartTimeout time.Duration
	// Wrap, when set, rewrites the interpreter's command line, e.g. to run
	// it in a sandbox; it replaces the settings-driven isolation.Wrap. It
	// must keep file descriptors 0-4 and the environment. Whatever it
	// starts is killed with the interpreter (see the package doc).
	Wrap func(argv []string, workDir string) []string
	// Hidden are paths made invisible inside a bwrap sandbox (the server's
	// data directory) when Wrap is nil.
	Hidden []string
	// Isolation is the operator's policy; the zero value is
	// isolation.PolicyAuto: interpreters run under bwrap wherever it can
	// run, unless the run's settings.isolation asks for more (see
	// isolation.Policy.Resolve).
	Isolation isolation.Policy
	// Env adds "KEY=value" entries to the interpreter's environment, after
	// the base set of the server's (isolation.Environ; later entries win).
	Env []string
}

// Handler runs the python operation: one persistent interpreter per run.
// It is safe for concurrent use; calls on one run are serialized.
type Handler struct {
	opts Options

	// mu guards the fields below. It is never held together with a
	// session's mu.
	mu      sync.Mutex
	runs    map[string]*session // by run ID
	interps map[string]string   // resolved interpreter by configured value
	closed  bool
}

// New returns a Handler. It starts nothing: interpreters start on a run's
// first call.
func New(opts Options) *Handler {
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
	return &Handler{opts: opts, runs: map[string]*session{}, interps: map[string]string{}}
}

// session is one run's interpreter slot.
type session struct {
	// sem is held (a value sent) by the one call using the session.
	sem chan struct{}

	mu     sync.Mutex
	ip     *interp            // guarded by mu; replaced only by the sem holder
	cancel context.CancelFunc // guarded by mu; the in-flight call's
	closed bool               // guarded by mu
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
	s, err := h.session(env.RunID)
	if err != nil {
		return operations.Failed(req, "python: %v", err)
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return operations.Failed(req, "cancelled")
	}
	defer func() { <-s.sem }()
	// The call may have waited for the one before: it starts only if the
	// run may still start work here.
	if ctx.Err() != nil {
		return operations.Failed(req, "cancelled")
	}
	if env.MayStart != nil {
		if err := env.MayStart(); err != nil {
			return operations.Failed(req, "python: not started: %v", err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	closed := s.closed
	s.cancel = cancel
	s.mu.Unlock()
	if closed {
		return operations.Failed(req, "python: %v", ErrClosed)
	}
	res, err := h.call(ctx, s, env, p)
	s.mu.Lock()
	s.cancel = nil
	closed = s.closed
	s.mu.Unlock()
	switch {
	case closed && err != nil:
		return operations.Failed(req, "python: %v", ErrClosed)
	case ctx.Err() != nil && err != nil:
		return operations.Failed(req, "cancelled")
	case err != nil:
		return operations.Failed(req, "python: %v", err)
	}
	return operations.Result{Kind: operations.KindPython, Meta: req.Meta, Data: res}
}

// session returns the run's session, creating it.
func (h *Handler) session(runID string) (*session, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errors.New("handler closed")
	}
	s := h.runs[runID]
	if s == nil {
		s = &session{sem: make(chan struct{}, 1)}
		h.runs[runID] = s
	}
	return s, nil
}

// call runs one cell; the caller holds s.sem. An error means the cell did
// not run (or was cancelled); everything else is in the result.
func (h *Handler) call(ctx context.Context, s *session, env handlers.Env, req *operations.PythonRequest) (*operations.PythonResult, error) {
	ip, err := h.ensure(ctx, s, env)
	if err != nil {
		return nil, err
	}
	timeout := h.timeout(env, req)
	limit := h.limit(env)
	if err := ip.out.Truncate(0); err != nil {
		h.drop(s, ip)
		return nil, fmt.Errorf("reset output: %w", err)
	}
	ip.nextID++
	id := ip.nextID
	start := time.Now()
	if err := ip.send(request{Op: "exec", ID: id, Code: req.Code}, start.Add(timeout)); err != nil {
		ip.kill()
		derr := ip.deathError("while receiving the cell", err)
		h.drop(s, ip)
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
				return h.died(s, ip, limit, ip.deathError("while running the cell", ip.readErr)), nil
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
					h.drop(s, ip)
					kept = fmt.Sprintf("the processes it started could not be stopped (%v), so the interpreter "+
						"was killed; it restarts with fresh globals on the next call", err)
				}
				if rep.Interrupted {
					res.TimedOut = true
					res.Error = joinLines(res.Error, fmt.Sprintf(
						"timed out after %s: the cell was interrupted; %s", seconds(timeout), kept))
				}
			}
			res.Error, _ = handlers.Truncate(res.Error, limit)
			return res, nil
		case <-ip.exited:
			ip.kill()
			return h.died(s, ip, limit, ip.deathError("while running the cell", nil)), nil
		case <-timer.C:
			interrupted = true
			grace := time.NewTimer(h.opts.InterruptGrace)
			defer grace.Stop()
			graceC = grace.C
			if err := ip.send(request{Op: "interrupt", ID: id}, time.Now().Add(h.opts.InterruptGrace)); err != nil {
				graceC = closedTime
			}
		case <-graceC:
			ip.kill()
			out, cut, _ := readOutput(ip.out, limit)
			h.drop(s, ip)
			return &operations.PythonResult{
				Output:    out,
				Truncated: cut,
				TimedOut:  true,
				Error: fmt.Sprintf("timed out after %s: the cell did not stop within %s of an interrupt, "+
					"so the interpreter was killed; it restarts with fresh globals on the next call",
					seconds(timeout), seconds(h.opts.InterruptGrace)),
			}, nil
		case <-ctx.Done():
			h.drop(s, ip)
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
func (h *Handler) died(s *session, ip *interp, limit int, cause error) *operations.PythonResult {
	out, cut, _ := readOutput(ip.out, limit)
	h.drop(s, ip)
	msg, _ := handlers.Truncate(cause.Error()+"; globals lost, a new interpreter starts on the next call", limit)
	return &operations.PythonResult{Output: out, Truncated: cut, Error: msg}
}

// ensure returns the session's live interpreter, starting one if needed.
// The caller holds s.sem.
func (h *Handler) ensure(ctx context.Context, s *session, env handlers.Env) (*interp, error) {
	s.mu.Lock()
	ip := s.ip
	s.mu.Unlock()
	if ip != nil && ip.alive() {
		return ip, nil
	}
	if ip != nil {
		h.drop(s, ip)
	}
	ip, err := h.start(ctx, env)
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
func (h *Handler) drop(s *session, ip *interp) {
	s.mu.Lock()
	if s.ip == ip {
		s.ip = nil
	}
	s.mu.Unlock()
	ip.release()
}

// start resolves the interpreter and isolation and starts a driver in the
// run's work directory (created if missing).
func (h *Handler) start(ctx context.Context, env handlers.Env) (*interp, error) {
	if env.WorkDir == "" {
		return nil, errors.New("no work directory")
	}
	workDir, err := filepath.Abs(env.WorkDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, fmt.Errorf("create work directory: %w", err)
	}
	var configured string
	var run, iso configs.Isolation
	if env.Settings != nil {
		configured = env.Settings.Python.Interpreter
		run = env.Settings.Isolation
	}
	py, err := h.interpreter(ctx, configured)
	if err != nil {
		return nil, err
	}
	argv := []string{py, "-c", driverSource}
	if h.opts.Wrap != nil {
		argv = h.opts.Wrap(argv, workDir)
	} else {
		if iso, err = h.opts.Isolation.Resolve(run); err != nil {
			return nil, fmt.Errorf("isolation: %w", err)
		}
		if argv, err = isolation.Wrap(iso, workDir, h.opts.Hidden, argv); err != nil {
			return nil, err
		}
	}
	if len(argv) == 0 {
		return nil, errors.New("wrap returned an empty command")
	}
	ctx, cancel := context.WithTimeout(ctx, h.opts.StartTimeout)
	defer cancel()
	return startInterp(ctx, argv, workDir, baseEnv(iso, h.opts.Env))
}

// timeout picks the cell's timeout: request, run settings, handler default.
func (h *Handler) timeout(env handlers.Env, req *operations.PythonRequest) time.Duration {
	switch {
	case req.TimeoutS > 0:
		return time.Duration(req.TimeoutS * float64(time.Second))
	case env.Settings != nil && env.Settings.Python.TimeoutS > 0:
		return time.Duration(env.Settings.Python.TimeoutS * float64(time.Second))
	}
	return h.opts.DefaultTimeout
}

// limit picks the output cap: run settings, then the handler default.
func (h *Handler) limit(env handlers.Env) int {
	if env.Settings != nil && env.Settings.Bash.OutputLimit > 0 {
		return env.Settings.Bash.OutputLimit
	}
	return h.opts.OutputLimit
}

// CloseRun kills the run's interpreter, aborting a call in flight (it
// returns an error result). Unknown runs are ignored.
func (h *Handler) CloseRun(_ context.Context, runID string) {
	h.mu.Lock()
	s := h.runs[runID]
	delete(h.runs, runID)
	h.mu.Unlock()
	if s != nil {
		s.close()
	}
}

// Close kills every interpreter; later calls fail. It always returns nil.
func (h *Handler) Close() error {
	h.mu.Lock()
	h.closed = true
	runs := h.runs
	h.runs = map[string]*session{}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range runs {
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

var (
	_ handlers.Handler   = (*Handler)(nil)
	_ handlers.RunCloser = (*Handler)(nil)
	_ handlers.Closer    = (*Handler)(nil)
)
