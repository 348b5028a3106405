package bash

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/isolation"
	"github.com/flockrun/flock/operations"
)

// The shells' own behaviour (state, streams, timeouts, cancellation,
// closing, the process tree, isolation) is tested in package
// internal/shell; these tests cover what the handler maps: a request and
// the run's settings to a command of the run's shell.

// newHandler returns an unisolated Handler closed when the test ends.
func newHandler(tb testing.TB) *Handler {
	if _, err := exec.LookPath("bash"); err != nil {
		tb.Skip("bash not installed")
	}
	h := New(Options{Isolation: isolation.PolicyNone})
	tb.Cleanup(func() { _ = h.Close() })
	return h
}

// newEnv returns the Env of a run with a fresh work dir.
func newEnv(tb testing.TB, runID string) handlers.Env {
	tb.Helper()
	dir, err := filepath.EvalSymlinks(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	s := &configs.RunSettings{}
	s.ApplyDefaults()
	return handlers.Env{RunID: runID, OpID: runID + "/0/0", WorkDir: dir, Settings: s}
}

// bashReq builds a bash request.
func bashReq(command string, timeoutS float64, session string) operations.Request {
	return operations.Request{Kind: operations.KindBash,
		Params: &operations.BashRequest{Command: command, TimeoutS: timeoutS, Session: session}}
}

func TestTimeoutUsesSettingsDefault(t *testing.T) {
	h := newHandler(t)
	env := newEnv(t, "run1")
	env.Settings.Bash.TimeoutS = 0.3
	res := h.Handle(context.Background(), env, bashReq("sleep 30", 0, ""))
	if operations.Bash.Result(res) == nil || !operations.Bash.Result(res).TimedOut {
		t.Fatalf("want a timeout from settings: %+v %q", operations.Bash.Result(res), res.Error)
	}
}

// TestRequestReachesItsShell: the run and the session name a shell (""
// is DefaultSession), the run's output limit caps it, Cwd reads it.
func TestRequestReachesItsShell(t *testing.T) {
	h := newHandler(t)
	env := newEnv(t, "run1")
	env.Settings.Bash.OutputLimit = 1000
	do := func(env handlers.Env, session, command string) *operations.BashResult {
		t.Helper()
		res := h.Handle(context.Background(), env, bashReq(command, 20, session))
		if res.Error != "" || operations.Bash.Result(res) == nil {
			t.Fatalf("%q: error %q, result %+v", command, res.Error, operations.Bash.Result(res))
		}
		return operations.Bash.Result(res)
	}
	do(env, "", "cd /; V=main")
	do(env, "other", "V=other")
	if got := do(env, DefaultSession, `echo "$V $PWD"`); got.Stdout != "main /\n" {
		t.Fatalf("main session: %q", got.Stdout)
	}
	if got := do(env, "other", `echo "$V $PWD"`); got.Stdout != "other "+env.WorkDir+"\n" {
		t.Fatalf("other session: %q", got.Stdout)
	}
	if got := do(newEnv(t, "run2"), "", `echo "$V"`); got.Stdout != "\n" {
		t.Fatalf("another run's main session: %q", got.Stdout)
	}
	if got := do(env, "", "seq 1 100000"); !got.Truncated || len(got.Stdout) > 1100 {
		t.Fatalf("settings.bash.output_limit not applied: truncated %v, %d bytes", got.Truncated, len(got.Stdout))
	}
	if cwd := h.Cwd(env.RunID, ""); cwd != "/" {
		t.Fatalf("Cwd %q", cwd)
	}
}

func TestBadRequests(t *testing.T) {
	h := newHandler(t)
	env := newEnv(t, "run1")
	noDir := env
	noDir.WorkDir = ""
	tests := []struct {
		name string
		env  handlers.Env
		req  operations.Request
	}{
		{name: "no params", env: env, req: operations.Request{Kind: operations.KindBash}},
		{name: "wrong kind", env: env, req: operations.Request{Kind: operations.KindPython, Params: &operations.PythonRequest{}}},
		{name: "no work dir", env: noDir, req: bashReq("true", 1, "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := h.Handle(context.Background(), tt.env, tt.req)
			if !strings.Contains(res.Error, ErrBadRequest.Error()) {
				t.Fatalf("error %q", res.Error)
			}
		})
	}
}
