package pyinterp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/elide"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/isolation"
	"github.com/flockrun/flock/operations"
)

// newPool returns a Pool closed at the end of the test, skipping the test
// when no python3 is installed.
func newPool(t testing.TB, opts Options) *Pool {
	t.Helper()
	if _, err := resolveInterpreter(context.Background(), ""); err != nil {
		t.Skip("no python3 interpreter: ", err)
	}
	// These tests watch processes by their host PIDs: unisolated unless a
	// test asks (isolation is tested with Cell.Isolation bwrap, and in
	// package isolation and the e2e tests).
	if opts.Isolation == "" {
		opts.Isolation = isolation.PolicyNone
	}
	h := NewPool(opts)
	t.Cleanup(func() { h.Close() })
	return h
}

// owner is what a test's cells share: the owner, its work directory and
// what it asks of every cell (zero: the pool's defaults).
type owner struct {
	Owner       string
	WorkDir     string
	OutputLimit int
	Interpreter string
	Isolation   configs.Isolation
}

// newEnv returns an owner with its own work directory.
func newEnv(t testing.TB, id string) owner {
	t.Helper()
	return owner{Owner: id, WorkDir: filepath.Join(t.TempDir(), "work")}
}

// pyCell builds a cell of code.
func pyCell(code string, timeoutS float64) Cell {
	return Cell{Code: code, Timeout: time.Duration(timeoutS * float64(time.Second))}
}

// outcome is a cell's result and its error's text ("" when none).
type outcome struct {
	Data  *operations.PythonResult
	Error string
}

// handle runs c as env's in p.
func handle(ctx context.Context, p *Pool, env owner, c Cell) outcome {
	c.Owner, c.WorkDir, c.OutputLimit, c.Interpreter, c.Isolation = env.Owner, env.WorkDir, env.OutputLimit, env.Interpreter, env.Isolation
	res, err := p.Run(ctx, c)
	out := outcome{Data: res}
	if err != nil {
		out.Error = err.Error()
	}
	return out
}

// run executes code and fails the test on an error.
func run(t testing.TB, h *Pool, env owner, code string, timeoutS float64) *operations.PythonResult {
	t.Helper()
	res := handle(context.Background(), h, env, pyCell(code, timeoutS))
	if res.Error != "" {
		t.Fatalf("Run(%q): error %q", code, res.Error)
	}
	if res.Data == nil {
		t.Fatalf("Run(%q): no result", code)
	}
	return res.Data
}

type step struct {
	code    string
	output  string   // exact output, when want is nil
	want    []string // substrings of the output
	errHas  []string // substrings of the error ("" error when nil)
	timeout float64
}

func TestCells(t *testing.T) {
	h := newPool(t, Options{})
	tests := []struct {
		name  string
		steps []step
	}{
		{"globals persist", []step{
			{code: "x = 41\ndef f(): return x + 1"},
			{code: "print(f())", output: "42\n"},
		}},
		{"stdout and stderr interleaved", []step{
			{code: "import sys\nprint('a')\nsys.stderr.write('b\\n')\nprint('c')", output: "a\nb\nc\n"},
		}},
		{"exception keeps output", []step{
			{code: "print('before')\n1/0\nprint('after')", output: "before\n",
				errHas: []string{"Traceback", "<cell-1>", "line 2", "1/0", "ZeroDivisionError: division by zero"}},
			{code: "print('next')", output: "next\n"},
		}},
		{"traceback hides the driver", []step{
			{code: "def g():\n    raise ValueError('boom')\ng()", errHas: []string{"in g", "ValueError: boom"}},
			{code: "try:\n    1/0\nexcept Exception as e:\n    raise KeyError('k') from e",
				errHas: []string{"ZeroDivisionError", "direct cause", "KeyError: 'k'"}},
		}},
		{"expression value echoed", []step{
			{code: "1 + 1", output: "2\n"},
			{code: "'s'", output: "'s'\n"},
			{code: "None", output: ""},
			{code: "y = 3\ny * 2", output: "6\n"},
			{code: "print('p')\n_ * 2", output: "p\n12\n"},
			{code: "z = 1", output: ""},
		}},
		{"syntax error", []step{
			{code: "def (:", errHas: []string{"SyntaxError"}},
		}},
		{"fd 1 and sys.__stdout__ do not break the protocol", []step{
			{code: "import os, sys\nos.write(1, b'raw\\n')\nprint('dunder', file=sys.__stdout__)\nos.write(2, b'err\\n')",
				want: []string{"raw\n", "dunder\n", "err\n"}},
			{code: "os.write(1, b'\\x00\\x00\\x00\\x05{\"id\":99}')\nprint('ok')", want: []string{"ok\n"}},
			{code: "print('still fine')", output: "still fine\n"},
		}},
		{"subprocess output captured", []step{
			{code: "import os, subprocess\nos.system('echo from-shell')\nsubprocess.run(['echo', 'from-run'])",
				want: []string{"from-shell\n", "from-run\n"}},
		}},
		{"subprocesses do not see the protocol fds", []step{
			{code: "import subprocess\nprint(subprocess.run('ls /proc/self/fd', shell=True, capture_output=True, text=True).stdout.split())",
				output: "['0', '1', '2', '3']\n"},
		}},
		{"input gets end of file", []step{
			{code: "input()", errHas: []string{"EOFError"}},
		}},
		{"sys.exit is an error and keeps globals", []step{
			{code: "kept = 1\nimport sys\nsys.exit(3)", errHas: []string{"SystemExit: 3"}},
			{code: "kept", output: "1\n"},
		}},
		{"forked child does not answer", []step{
			{code: "import os\npid = os.fork()\nif pid == 0:\n    print('child', flush=True)\nelse:\n    os.waitpid(pid, 0)\n    print('parent')",
				want: []string{"child\n", "parent\n"}},
			{code: "print('after fork')", output: "after fork\n"},
		}},
		{"main module and pickling", []step{
			{code: "import pickle\nclass P: pass\nprint(type(pickle.loads(pickle.dumps(P()))).__name__, __name__)", output: "P __main__\n"},
		}},
		{"non-utf8 output", []step{
			{code: "import os\nos.write(1, b'\\xff\\xfe ok\\n')\nprint('\\udcff')", want: []string{" ok\n", "\\udcff"}},
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t, "cells-"+strconv.Itoa(i))
			for _, st := range tt.steps {
				res := run(t, h, env, st.code, st.timeout)
				if st.want == nil && res.Output != st.output {
					t.Errorf("%q: output = %q, want %q", st.code, res.Output, st.output)
				}
				for _, w := range st.want {
					if !strings.Contains(res.Output, w) {
						t.Errorf("%q: output %q lacks %q", st.code, res.Output, w)
					}
				}
				if st.errHas == nil && res.Error != "" {
					t.Errorf("%q: unexpected error %q", st.code, res.Error)
				}
				for _, w := range st.errHas {
					if !strings.Contains(res.Error, w) {
						t.Errorf("%q: error %q lacks %q", st.code, res.Error, w)
					}
				}
				if strings.Contains(res.Error, "<string>") || strings.Contains(res.Error, "_run_cell") {
					t.Errorf("%q: error shows driver internals: %q", st.code, res.Error)
				}
				if res.TimedOut || res.Truncated {
					t.Errorf("%q: timed_out=%v truncated=%v", st.code, res.TimedOut, res.Truncated)
				}
			}
		})
	}
}

func TestWorkDir(t *testing.T) {
	h := newPool(t, Options{})
	env := newEnv(t, "wd")
	// Modules in the work directory must not shadow the driver's imports,
	// yet stay importable by user code.
	if err := os.MkdirAll(env.WorkDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"json", "queue", "ast", "traceback"} {
		if err := os.WriteFile(filepath.Join(env.WorkDir, m+".py"), []byte("raise SystemExit('shadowed')\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(env.WorkDir, "mymod.py"), []byte("V = 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := run(t, h, env, "import os, mymod\nprint(os.getcwd(), mymod.V)\nwith open('made.txt', 'w') as f: f.write('x')", 0)
	if want := env.WorkDir + " 7\n"; res.Output != want || res.Error != "" {
		t.Fatalf("output %q error %q, want %q", res.Output, res.Error, want)
	}
	if _, err := os.Stat(filepath.Join(env.WorkDir, "made.txt")); err != nil {
		t.Fatal(err)
	}
}

func TestTimeoutInterrupts(t *testing.T) {
	h := newPool(t, Options{})
	tests := []struct {
		name string
		code string
	}{
		{"busy loop", "print('spinning', flush=True)\nwhile True: pass"},
		{"blocking sleep", "import time\nprint('spinning', flush=True)\ntime.sleep(60)"},
		{"subprocess wait", "import subprocess\nprint('spinning', flush=True)\nsubprocess.run(['sleep', '60'])"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t, "interrupt-"+strconv.Itoa(i))
			run(t, h, env, "x = 1", 0)
			start := time.Now()
			res := run(t, h, env, tt.code, 0.5)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s", d)
			}
			if !res.TimedOut {
				t.Fatalf("timed_out = false: %+v", res)
			}
			for _, w := range []string{"KeyboardInterrupt", "timed out after 0.5s", "globals are kept"} {
				if !strings.Contains(res.Error, w) {
					t.Errorf("error %q lacks %q", res.Error, w)
				}
			}
			if strings.Contains(res.Error, "_on_sigint") {
				t.Errorf("error shows the driver's handler: %q", res.Error)
			}
			if res.Output != "spinning\n" {
				t.Errorf("output = %q, want the text printed before the timeout", res.Output)
			}
			if res := run(t, h, env, "print(x)", 0); res.Output != "1\n" || res.TimedOut {
				t.Errorf("after interrupt: %+v, want globals kept", res)
			}
		})
	}
}

func TestTimeoutKills(t *testing.T) {
	h := newPool(t, Options{InterruptGrace: 300 * time.Millisecond})
	tests := []struct {
		name string
		code string
	}{
		{"SIGINT ignored", "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass"},
		{"KeyboardInterrupt swallowed", "import time\nwhile True:\n    try:\n        time.sleep(0.05)\n    except KeyboardInterrupt:\n        pass"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t, "kill-"+strconv.Itoa(i))
			run(t, h, env, "x = 1", 0)
			code := "import subprocess\nchild = subprocess.Popen(['sleep', '300'])\nprint(child.pid, flush=True)\n" + tt.code
			start := time.Now()
			res := run(t, h, env, code, 0.5)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s", d)
			}
			if !res.TimedOut {
				t.Fatalf("timed_out = false: %+v", res)
			}
			for _, w := range []string{"timed out after 0.5s", "killed", "restarts with fresh globals"} {
				if !strings.Contains(res.Error, w) {
					t.Errorf("error %q lacks %q", res.Error, w)
				}
			}
			pid, err := strconv.Atoi(strings.TrimSpace(res.Output))
			if err != nil {
				t.Fatalf("output %q: want the child's pid printed before the timeout", res.Output)
			}
			testkit.WaitWithin(t, 5*time.Second, "the cell's subprocess to be killed", func() bool { return !testkit.Alive(pid) })
			res = run(t, h, env, "print('x' in globals())", 0)
			if res.Output != "False\n" || res.Error != "" || res.TimedOut {
				t.Errorf("after kill: %+v, want a fresh interpreter", res)
			}
		})
	}
}

func TestInterpreterDeath(t *testing.T) {
	h := newPool(t, Options{})
	tests := []struct {
		name string
		code string
		want string
	}{
		{"os._exit", "print('bye', flush=True)\nimport os\nos._exit(7)", "exit status 7"},
		{"protocol fd closed", "print('bye', flush=True)\nimport os\nos.close(4)", "exited"},
		{"segfault", "print('bye', flush=True)\nimport ctypes\nctypes.string_at(0)", "signal"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t, "death-"+strconv.Itoa(i))
			run(t, h, env, "x = 1", 0)
			res := run(t, h, env, tt.code, 0)
			if res.Output != "bye\n" {
				t.Errorf("output = %q, want bye", res.Output)
			}
			for _, w := range []string{tt.want, "next call"} {
				if !strings.Contains(res.Error, w) {
					t.Errorf("error %q lacks %q", res.Error, w)
				}
			}
			if res := run(t, h, env, "print('x' in globals())", 0); res.Output != "False\n" {
				t.Errorf("after death: %+v, want a fresh interpreter", res)
			}
		})
	}
}

func TestOutputCapped(t *testing.T) {
	h := newPool(t, Options{OutputLimit: 5000})
	const own = 1000 // the cell's own limit
	tests := []struct {
		name     string
		ownLimit int
		code     string
		limit    int
		tail     string
	}{
		{"one huge print", own, "print('a' * 50_000_000 + 'END')", 1000, "aEND\n"},
		{"many prints", own, "for i in range(200_000): print(i)", 1000, "199999\n"},
		{"subprocess flood", own, "import os\n_ = os.system('yes | head -c 20000000; echo; echo done')", 1000, "done\n"},
		{"pool default limit", 0, "print('b' * 100_000)", 5000, "b\n"},
		{"huge error", own, "raise ValueError('e' * 10_000_000)", 1000, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t, "cap-"+strconv.Itoa(i))
			env.OutputLimit = tt.ownLimit
			res := run(t, h, env, tt.code, 0)
			text := res.Output
			if tt.tail == "" {
				text = res.Error
			} else if !res.Truncated {
				t.Errorf("truncated = false")
			}
			if len(text) > tt.limit+100 {
				t.Errorf("len = %d, want about %d", len(text), tt.limit)
			}
			if !strings.Contains(text, "bytes elided") || !strings.HasSuffix(text, tt.tail) {
				t.Errorf("text %q... lacks the elision note or tail %q", text[:min(len(text), 200)], tt.tail)
			}
		})
	}
}

func TestReadOutputMatchesTruncate(t *testing.T) {
	euro := strings.Repeat("€", 400) // 3-byte runes
	tests := []struct {
		name    string
		content string
		limit   int
	}{
		{"empty", "", 10},
		{"under limit", "hello\n", 10},
		{"at limit", "0123456789", 10},
		{"over limit", strings.Repeat("0123456789", 100), 10},
		{"odd limit", strings.Repeat("0123456789", 100), 33},
		{"multibyte cut", euro, 100},
		{"multibyte odd", euro + "x" + euro, 101},
		{"limit one", "abc", 1},
		{"no limit", strings.Repeat("z", 5000), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := os.CreateTemp(t.TempDir(), "out")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString(tt.content); err != nil {
				t.Fatal(err)
			}
			got, gotCut, err := readOutput(f, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			want, wantCut := elide.Middle(tt.content, tt.limit)
			if got != want || gotCut != wantCut {
				t.Fatalf("readOutput = %q, %v; Truncate = %q, %v", got, gotCut, want, wantCut)
			}
		})
	}
}

func TestEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-secret")
	t.Setenv("FLOCK_TEST_SECRET", "hunter2")
	h := newPool(t, Options{Env: []string{"EXTRA_VAR=yes"}})
	env := newEnv(t, "env")
	res := run(t, h, env, "import os, subprocess\n"+
		"print(sorted(k for k in os.environ if 'SECRET' in k or 'API_KEY' in k))\n"+
		"print(os.environ.get('PYTHONUNBUFFERED'), os.environ.get('PYTHONDONTWRITEBYTECODE'), os.environ.get('EXTRA_VAR'))\n"+
		"print(subprocess.run('env', capture_output=True, text=True).stdout.count('sk-test'))", 0)
	if want := "[]\n1 1 yes\n0\n"; res.Output != want {
		t.Fatalf("output = %q, want %q", res.Output, want)
	}
}

func TestSeparateRuns(t *testing.T) {
	h := newPool(t, Options{})
	a, b := newEnv(t, "a"), newEnv(t, "b")
	run(t, h, a, "x = 'a'", 0)
	run(t, h, b, "x = 'b'", 0)
	if res := run(t, h, a, "x", 0); res.Output != "'a'\n" {
		t.Errorf("run a: %q", res.Output)
	}
	if res := run(t, h, b, "x", 0); res.Output != "'b'\n" {
		t.Errorf("run b: %q", res.Output)
	}
}

func TestConcurrentCallsSerialized(t *testing.T) {
	h := newPool(t, Options{})
	env := newEnv(t, "serial")
	run(t, h, env, "n = 0", 0)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			handle(context.Background(), h, env, pyCell("import time\nv = n\ntime.sleep(0.05)\nn = v + 1", 0))
		}()
	}
	wg.Wait()
	if res := run(t, h, env, "n", 0); res.Output != "4\n" {
		t.Fatalf("n = %q, want 4 (calls overlapped)", res.Output)
	}
}

// pidOf returns the interpreter's pid as the driver reported it.
func pidOf(t testing.TB, h *Pool, env owner) int {
	t.Helper()
	res := run(t, h, env, "import os\nos.getpid()", 0)
	pid, err := strconv.Atoi(strings.TrimSpace(res.Output))
	if err != nil {
		t.Fatalf("pid output %q", res.Output)
	}
	return pid
}

func TestCloseOwner(t *testing.T) {
	h := newPool(t, Options{})
	env := newEnv(t, "close")
	run(t, h, env, "x = 1", 0)
	pid := pidOf(t, h, env)
	h.CloseOwner(env.Owner)
	testkit.WaitWithin(t, 5*time.Second, "the interpreter to die", func() bool { return !testkit.Alive(pid) })
	h.CloseOwner(env.Owner)    // twice
	h.CloseOwner("never-seen") // unknown
	if res := run(t, h, env, "print('x' in globals())", 0); res.Output != "False\n" {
		t.Fatalf("after CloseOwner: %+v, want a fresh interpreter", res)
	}
}

func TestCloseOwnerAbortsCall(t *testing.T) {
	h := newPool(t, Options{})
	env := newEnv(t, "close-inflight")
	pid := pidOf(t, h, env)
	done := make(chan outcome, 1)
	go func() {
		done <- handle(context.Background(), h, env, pyCell("import time\ntime.sleep(60)", 0))
	}()
	testkit.WaitWithin(t, 5*time.Second, "the call to start", func() bool {
		h.mu.Lock()
		s := h.owners[env.Owner]
		h.mu.Unlock()
		return len(s.sem) == 1
	})
	h.CloseOwner(env.Owner)
	select {
	case res := <-done:
		if !strings.Contains(res.Error, "closed") {
			t.Errorf("Result.Error = %q, want closed", res.Error)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("call not aborted by CloseOwner")
	}
	testkit.WaitWithin(t, 5*time.Second, "the interpreter to die", func() bool { return !testkit.Alive(pid) })
}

func TestCancel(t *testing.T) {
	h := newPool(t, Options{})
	env := newEnv(t, "cancel")
	run(t, h, env, "x = 1", 0)
	pid := pidOf(t, h, env)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	res := handle(ctx, h, env, pyCell("import time\ntime.sleep(60)", 0))
	if res.Error != "cancelled" {
		t.Fatalf("Result.Error = %q, want cancelled", res.Error)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("cancel took %s", d)
	}
	testkit.WaitWithin(t, 5*time.Second, "the interpreter to die", func() bool { return !testkit.Alive(pid) })
	if res := run(t, h, env, "print('x' in globals())", 0); res.Output != "False\n" {
		t.Fatalf("after cancel: %+v", res)
	}
}

func TestClose(t *testing.T) {
	h := newPool(t, Options{})
	var pids []int
	for i := range 3 {
		pids = append(pids, pidOf(t, h, newEnv(t, "close-all-"+strconv.Itoa(i))))
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		testkit.WaitWithin(t, 5*time.Second, "interpreters to die", func() bool { return !testkit.Alive(pid) })
	}
	res := handle(context.Background(), h, newEnv(t, "late"), pyCell("1", 0))
	if !strings.Contains(res.Error, "closed") {
		t.Fatalf("after Close: Result.Error = %q", res.Error)
	}
}

func TestStartFailures(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		ask     owner // what the cell asks
		workDir string
		want    string
	}{
		{"missing interpreter", Options{}, owner{Interpreter: "/nonexistent/python3"}, "", "no python3 interpreter"},
		{"not python", Options{}, owner{Interpreter: "false"}, "", "exited before it was ready"},
		{"unknown isolation", Options{}, owner{Isolation: configs.Isolation{Kind: "vm"}}, "", "unknown isolation kind"},
		{"failing wrapper", Options{Wrap: func(argv []string, _ string) []string {
			return []string{"sh", "-c", "echo wrapper broke >&2; exit 3"}
		}}, owner{}, "", "wrapper broke"},
		{"no work dir", Options{}, owner{}, "-", "no work directory"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newPool(t, tt.opts)
			env := tt.ask
			env.Owner, env.WorkDir = "fail-"+strconv.Itoa(i), newEnv(t, "").WorkDir
			if tt.workDir == "-" {
				env.WorkDir = ""
			}
			res := handle(context.Background(), h, env, pyCell("1", 0))
			if !strings.Contains(res.Error, tt.want) {
				t.Fatalf("Result.Error = %q, want %q", res.Error, tt.want)
			}
		})
	}
}

func TestWrapOption(t *testing.T) {
	var got []string
	h := newPool(t, Options{Wrap: func(argv []string, workDir string) []string {
		got = append(got, workDir)
		return append([]string{"env", "WRAPPED=1"}, argv...)
	}})
	env := newEnv(t, "wrap")
	res := run(t, h, env, "import os\nos.environ.get('WRAPPED')", 0)
	if res.Output != "'1'\n" || !slices.Equal(got, []string{env.WorkDir}) {
		t.Fatalf("output %q, wrap called with %q", res.Output, got)
	}
}

func TestBwrap(t *testing.T) {
	if err := isolation.Available(); err != nil {
		t.Skip("bwrap sandbox unavailable on this host: ", err)
	}
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "secret.txt"), []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newPool(t, Options{Hidden: []string{data}, InterruptGrace: 300 * time.Millisecond})
	env := owner{Owner: "bwrap", WorkDir: filepath.Join(data, "runs", "r1", "work"),
		Isolation: configs.Isolation{Kind: "bwrap"}}
	tests := []struct {
		name string
		step
	}{
		{"globals", step{code: "x = 5"}},
		{"work dir writable", step{code: "import os\nopen('f.txt', 'w').write('ok')\nprint(os.getcwd() == " + strconv.Quote(env.WorkDir) + ")", output: "True\n"}},
		{"hidden data invisible", step{code: "import os\nprint(os.path.exists(" + strconv.Quote(filepath.Join(data, "secret.txt")) + "), os.listdir(" + strconv.Quote(data) + "))", output: "False ['runs']\n"}},
		{"root read-only", step{code: "open('/flock-test', 'w')", errHas: []string{"Read-only file system"}}},
		{"network off", step{code: "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=1)", errHas: []string{"Error"}}},
		{"globals kept", step{code: "x", output: "5\n"}},
		{"interrupt works in the sandbox", step{code: "import time\ntime.sleep(30)", timeout: 0.5, errHas: []string{"KeyboardInterrupt", "kept"}}},
		{"still alive", step{code: "x", output: "5\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, h, env, tt.code, tt.timeout)
			if tt.errHas == nil && (res.Output != tt.output || res.Error != "") {
				t.Fatalf("output %q error %q, want %q", res.Output, res.Error, tt.output)
			}
			for _, w := range tt.errHas {
				if !strings.Contains(res.Error, w) {
					t.Fatalf("error %q lacks %q", res.Error, w)
				}
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(env.WorkDir, "f.txt")); err != nil || string(b) != "ok" {
		t.Errorf("file from the sandbox: %q, %v", b, err)
	}
	// A kill reaches the whole sandbox.
	res := run(t, h, env, "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass", 0.5)
	if !res.TimedOut || !strings.Contains(res.Error, "killed") {
		t.Fatalf("kill in sandbox: %+v", res)
	}
	if res := run(t, h, env, "print('x' in globals())", 0); res.Output != "False\n" {
		t.Fatalf("after kill: %+v", res)
	}
}

func TestResolveInterpreter(t *testing.T) {
	real, err := resolveInterpreter(context.Background(), "")
	if err != nil {
		t.Skip("no python3 interpreter: ", err)
	}
	if isShim(real) {
		t.Fatalf("resolved %q is a shim", real)
	}
	// A fake shim that execs the real interpreter and counts its starts.
	dir := filepath.Join(t.TempDir(), "shims")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shim := filepath.Join(dir, "python3")
	count := filepath.Join(t.TempDir(), "count")
	script := fmt.Sprintf("#!/bin/sh\necho x >> %s\nexec %s \"$@\"\n", count, real)
	if err := os.WriteFile(shim, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	h := newPool(t, Options{})
	for range 2 {
		got, err := h.interpreter(context.Background(), shim)
		if err != nil {
			t.Fatal(err)
		}
		if got == shim || isShim(got) {
			t.Fatalf("interpreter(%q) = %q, want the real binary", shim, got)
		}
	}
	if b, _ := os.ReadFile(count); strings.Count(string(b), "x") != 1 {
		t.Fatalf("shim ran %d times, want once (cached)", strings.Count(string(b), "x"))
	}
	env := newEnv(t, "shim")
	env.Interpreter = shim
	if res := run(t, h, env, "import sys\nsys.executable", 0); strings.Contains(res.Output, "/shims/") {
		t.Fatalf("ran the shim: %q", res.Output)
	}
}

func TestIsShim(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{"/root/.pyenv/shims/python3", true},
		{"/home/u/.asdf/shims/python3", true},
		{"/usr/bin/python3", false},
		{"/root/.pyenv/versions/3.11.7/bin/python3", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			if got := isShim(tt.path); got != tt.want {
				t.Fatalf("isShim(%q) = %v", tt.path, got)
			}
		})
	}
}

func TestNewPoolIsSideEffectFree(t *testing.T) {
	h := NewPool(Options{})
	if len(h.owners) != 0 {
		t.Fatal("NewPool started something")
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkPythonRoundTrip measures one trivial cell on a warm interpreter
// and reports the median in µs.
func BenchmarkPythonRoundTrip(b *testing.B) {
	h := newPool(b, Options{})
	env := newEnv(b, "bench")
	run(b, h, env, "x = 0", 0)
	req := pyCell("x=1", 0)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		res := handle(context.Background(), h, env, req)
		lat = append(lat, time.Since(start))
		if res.Error != "" || res.Data.Error != "" {
			b.Fatalf("%+v", res)
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
