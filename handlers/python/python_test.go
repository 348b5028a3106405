package python

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/isolation"
	"github.com/flockrun/flock/operations"
)

// The interpreters' own behaviour (cells, output, timeouts, deaths,
// closing, the processes a cell starts, isolation) is tested in package
// internal/pyinterp; these tests cover what the handler maps: a request
// and the run's settings to a cell of the run's interpreter, and a cell
// that did not run to Result.Error.

// newHandler returns a Handler closed at the end of the test, skipping the
// test when no python3 is installed.
func newHandler(t *testing.T) *Handler {
	t.Helper()
	h := New(Options{Isolation: isolation.PolicyNone})
	t.Cleanup(func() { h.Close() })
	if res := h.Handle(context.Background(), newEnv(t, "probe", nil), operations.NewPython("1", 0)); strings.Contains(res.Error, "no python3 interpreter") {
		t.Skip(res.Error)
	}
	return h
}

// newEnv returns an Env for a run with its own work directory.
func newEnv(t *testing.T, runID string, settings *configs.RunSettings) handlers.Env {
	t.Helper()
	return handlers.Env{RunID: runID, WorkDir: filepath.Join(t.TempDir(), "work"), Settings: settings}
}

// TestSettingsReachTheInterpreter: the run's settings give a cell its
// timeout (the request's timeout_s first), its output limit and its
// interpreter; each run has its own interpreter.
func TestSettingsReachTheInterpreter(t *testing.T) {
	h := newHandler(t)
	settings := &configs.RunSettings{Bash: configs.Bash{OutputLimit: 1000}, Python: configs.Python{TimeoutS: 0.3}}
	env := newEnv(t, "run1", settings)
	do := func(env handlers.Env, code string, timeoutS float64) *operations.PythonResult {
		t.Helper()
		res := h.Handle(context.Background(), env, operations.NewPython(code, timeoutS))
		if res.Error != "" || res.Kind != operations.KindPython || operations.Python.Result(res) == nil {
			t.Fatalf("%q: error %q, result %+v", code, res.Error, res)
		}
		return operations.Python.Result(res)
	}
	if got := do(env, "import time\ntime.sleep(30)", 0); !got.TimedOut {
		t.Fatalf("settings.python.timeout_s not applied: %+v", got)
	}
	if got := do(env, "import time\ntime.sleep(0.5)\nx = 1", 20); got.TimedOut {
		t.Fatalf("the request's timeout_s did not win: %+v", got)
	}
	if got := do(env, "print('a' * 100_000)", 0); !got.Truncated || len(got.Output) > 1100 {
		t.Fatalf("settings.bash.output_limit not applied: truncated %v, %d bytes", got.Truncated, len(got.Output))
	}
	if got := do(newEnv(t, "run2", nil), "print('x' in globals())", 0); got.Output != "False\n" {
		t.Fatalf("another run shares the interpreter: %q", got.Output)
	}
	missing := newEnv(t, "run3", &configs.RunSettings{Python: configs.Python{Interpreter: "/nonexistent/python3"}})
	if res := h.Handle(context.Background(), missing, operations.NewPython("1", 0)); !strings.HasPrefix(res.Error, "python: ") || !strings.Contains(res.Error, "no python3 interpreter") {
		t.Fatalf("settings.python.interpreter not applied: %q", res.Error)
	}
}

// TestCellsThatDidNotRun: a cancelled cell's Error is "cancelled", any
// other cell that did not run says "python: " and why.
func TestCellsThatDidNotRun(t *testing.T) {
	h := newHandler(t)
	env := newEnv(t, "run1", nil)
	if res := h.Handle(context.Background(), env, operations.Request{Kind: operations.KindPython}); res.Error != "python: not a python request" {
		t.Fatalf("no params: %q", res.Error)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if res := h.Handle(ctx, env, operations.NewPython("import time\ntime.sleep(60)", 0)); res.Error != "cancelled" {
		t.Fatalf("cancelled: %q", res.Error)
	}
	h.CloseRun(context.Background(), env.RunID)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if res := h.Handle(context.Background(), env, operations.NewPython("1", 0)); !strings.HasPrefix(res.Error, "python: ") || !strings.Contains(res.Error, "closed") {
		t.Fatalf("after Close: %q", res.Error)
	}
}

// TestHugeTimeouts: a timeout_s too large for a time.Duration (the
// request's or settings.python.timeout_s) is bounded at 30 days, as
// bash's is; it wrapped into a negative duration, which the interpreter
// took for "none given" and ran the cell with its 600 s default.
func TestHugeTimeouts(t *testing.T) {
	month := 30 * 24 * time.Hour
	for _, c := range []struct {
		request  float64
		settings *configs.RunSettings
		want     time.Duration
	}{
		{1e20, nil, month},
		{0, &configs.RunSettings{Python: configs.Python{TimeoutS: 1e300}}, month},
		{2.5, &configs.RunSettings{Python: configs.Python{TimeoutS: 1e300}}, 2500 * time.Millisecond},
		{0, &configs.RunSettings{Python: configs.Python{TimeoutS: 7}}, 7 * time.Second},
		{0, nil, 0},
	} {
		if got := cellTimeout(c.request, c.settings); got != c.want {
			t.Errorf("request timeout_s %g, settings %+v: cell timeout %v, want %v", c.request, c.settings, got, c.want)
		}
	}
	// And through the handler: a cell with a huge timeout runs.
	h := newHandler(t)
	res := h.Handle(context.Background(), newEnv(t, "run", nil), operations.NewPython("print(6 * 7)", 1e20))
	if got := operations.Python.Result(res); res.Error != "" || got == nil || got.Output != "42\n" {
		t.Fatalf("timeout_s 1e20: error %q, result %+v", res.Error, got)
	}
}
