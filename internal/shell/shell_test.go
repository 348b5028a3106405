package shell

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/isolation"
	"github.com/flockrun/flock/operations"
)

// newPool returns a Pool closed when the test ends.
func newPool(tb testing.TB, opts Options) *Pool {
	tb.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		tb.Skip("bash not installed")
	}
	// These tests watch processes by their host PIDs: unisolated unless a
	// test asks (isolation is tested with Command.Isolation bwrap, and in
	// package isolation and the e2e tests).
	if opts.Isolation == "" {
		opts.Isolation = isolation.PolicyNone
	}
	h := NewPool(opts)
	tb.Cleanup(func() { _ = h.Close() })
	return h
}

// owner is what a test's commands share: the owner of the shells, its
// work dir and what it asks of every command (zero: the pool's defaults).
type owner struct {
	Owner       string
	WorkDir     string
	OutputLimit int
	Isolation   configs.Isolation
}

// newEnv returns an owner with a fresh work dir.
func newEnv(tb testing.TB, id string) owner {
	tb.Helper()
	dir, err := filepath.EvalSymlinks(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return owner{Owner: id, WorkDir: dir}
}

// bashCmd builds a command of session ("" the main one).
func bashCmd(command string, timeoutS float64, session string) Command {
	return Command{Text: command, Timeout: Seconds(timeoutS), Session: session}
}

// reply is a command's result and its error's text ("" when none), as
// the bash operation reports them.
type reply struct {
	Data  *operations.BashResult
	Error string
}

// handle runs c as env's in p.
func handle(ctx context.Context, p *Pool, env owner, c Command) reply {
	c.Owner, c.WorkDir, c.OutputLimit, c.Isolation = env.Owner, env.WorkDir, env.OutputLimit, env.Isolation
	res, err := p.Run(ctx, c)
	out := reply{Data: res}
	if err != nil {
		out.Error = err.Error()
	}
	return out
}

// run runs command in the main session and fails on an error.
func run(tb testing.TB, h *Pool, env owner, command string) *operations.BashResult {
	tb.Helper()
	return runIn(tb, h, env, "", command)
}

// runIn runs command in session and fails on an error.
func runIn(tb testing.TB, h *Pool, env owner, session, command string) *operations.BashResult {
	tb.Helper()
	res := handle(context.Background(), h, env, bashCmd(command, 20, session))
	if res.Error != "" || res.Data == nil {
		tb.Fatalf("%q: error %q, result %+v", command, res.Error, res.Data)
	}
	return res.Data
}

// waitDead waits until pid is gone.
func waitDead(tb testing.TB, pid int) {
	tb.Helper()
	testkit.CheckFor(tb, 5*time.Second, func() error {
		if testkit.Alive(pid) {
			return fmt.Errorf("process %d still alive", pid)
		}
		return nil
	})
}

// firstInt parses the first line of s as an int.
func firstInt(tb testing.TB, s string) int {
	tb.Helper()
	line, _, _ := strings.Cut(s, "\n")
	n, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		tb.Fatalf("no number in %q: %v", s, err)
	}
	return n
}

func TestExitCodesAndStreams(t *testing.T) {
	h := newPool(t, Options{})
	env := newEnv(t, "run1")
	tests := []struct {
		name    string
		command string
		stdout  string
		stderr  string
		code    int
	}{
		{name: "true", command: "true", code: 0},
		{name: "false", command: "false", code: 1},
		{name: "subshell exit", command: "(exit 42)", code: 42},
		{name: "child exit", command: "bash -c 'exit 3'", code: 3},
		{name: "missing command", command: "no-such-command-xyz", stderr: "no-such-command-xyz: command not found\n", code: 127},
		{name: "stdout", command: "echo hello", stdout: "hello\n"},
		{name: "stdout no newline", command: "printf abc", stdout: "abc"},
		{name: "stdout blank lines", command: "printf 'a\\n\\n'", stdout: "a\n\n"},
		{name: "stderr", command: "echo oops >&2", stderr: "oops\n"},
		{name: "both", command: "echo out; echo err >&2; echo out2; exit_code=5; (exit $exit_code)", stdout: "out\nout2\n", stderr: "err\n", code: 5},
		{name: "multiline", command: "for i in 1 2 3; do\n  echo $i\ndone", stdout: "1\n2\n3\n"},
		{name: "heredoc", command: "cat <<'EOF'\nx $y\nEOF", stdout: "x $y\n"},
		{name: "utf8", command: "echo 'héllo ✓'", stdout: "héllo ✓\n"},
		{name: "ansi stripped", command: `printf '\033[31mred\033[0m\r\n'`, stdout: "red\n"},
		{name: "return", command: "echo a; return 4; echo b", stdout: "a\n", code: 4},
		{name: "unset var error", command: "echo ${NOPE_XYZ:?missing}; echo after", stderr: "missing", code: 1},
		{name: "previous status", command: "false", code: 1},
		{name: "status carried over", command: "echo $?", stdout: "1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := run(t, h, env, tt.command)
			if got.ExitCode != tt.code {
				t.Errorf("exit code %d, want %d (stdout %q stderr %q)", got.ExitCode, tt.code, got.Stdout, got.Stderr)
			}
			if got.Stdout != tt.stdout {
				t.Errorf("stdout %q, want %q", got.Stdout, tt.stdout)
			}
			if !strings.Contains(got.Stderr, tt.stderr) || (tt.stderr == "" && got.Stderr != "") {
				t.Errorf("stderr %q, want %q", got.Stderr, tt.stderr)
			}
			if got.TimedOut || got.Truncated {
				t.Errorf("timed_out %v truncated %v", got.TimedOut, got.Truncated)
			}
		})
	}
}

func TestStatePersists(t *testing.T) {
	other, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		steps []string
		want  string // stdout of the last step
	}{
		{name: "cwd", steps: []string{"cd " + other, "pwd"}, want: other + "\n"},
		{name: "export", steps: []string{"export FLOCK_X=42", "echo $FLOCK_X; bash -c 'echo $FLOCK_X'"}, want: "42\n42\n"},
		{name: "shell variable", steps: []string{"y=7", "echo $y"}, want: "7\n"},
		{name: "function", steps: []string{"greet() { echo \"hi $1\"; }", "greet bob"}, want: "hi bob\n"},
		{name: "alias", steps: []string{"alias ll='echo listed'", "ll"}, want: "listed\n"},
		{name: "alias in same command", steps: []string{"alias zz='echo zz'\nzz"}, want: "zz\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newPool(t, Options{})
			env := newEnv(t, "run-"+tt.name)
			var got *operations.BashResult
			for _, step := range tt.steps {
				got = run(t, h, env, step)
				if got.ExitCode != 0 {
					t.Fatalf("%q: exit %d stderr %q", step, got.ExitCode, got.Stderr)
				}
			}
			if got.Stdout != tt.want {
				t.Fatalf("stdout %q, want %q", got.Stdout, tt.want)
			}
		})
	}
}

func TestSessionsAndRunsAreIndependent(t *testing.T) {
	h := newPool(t, Options{})
	envA, envB := newEnv(t, "runA"), newEnv(t, "runB")
	runIn(t, h, envA, "", "export V=main-a; cd /")
	runIn(t, h, envA, "other", "export V=other-a")
	runIn(t, h, envB, "", "export V=main-b")
	tests := []struct {
		name    string
		env     owner
		session string
		want    string
	}{
		{name: "run A main", env: envA, session: "main", want: "main-a /\n"},
		{name: "run A other", env: envA, session: "other", want: "other-a " + envA.WorkDir + "\n"},
		{name: "run B main", env: envB, session: "", want: "main-b " + envB.WorkDir + "\n"},
		{name: "run B other", env: envB, session: "other", want: " " + envB.WorkDir + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runIn(t, h, tt.env, tt.session, `echo "$V $PWD"`)
			if got.Stdout != tt.want {
				t.Fatalf("stdout %q, want %q", got.Stdout, tt.want)
			}
		})
	}
}

func TestSessionsRunInParallel(t *testing.T) {
	h := newPool(t, Options{})
	env := newEnv(t, "run1")
	flag := filepath.Join(env.WorkDir, "flag")
	// Warm both sessions so the waiter's loop starts at once.
	runIn(t, h, env, "a", "true")
	runIn(t, h, env, "b", "true")
	var wg sync.WaitGroup
	var waiter *operations.BashResult
	wg.Go(func() {
		res := handle(context.Background(), h, env, bashCmd("until [ -e flag ]; do sleep 0.01; done; echo seen", 10, "a"))
		waiter = res.Data
	})
	runIn(t, h, env, "b", "touch "+flag)
	wg.Wait()
	if waiter == nil || waiter.TimedOut || waiter.Stdout != "seen\n" {
		t.Fatalf("session a did not see session b's file: %+v", waiter)
	}
}

func TestCommandsSerializePerSession(t *testing.T) {
	h := newPool(t, Options{})
	env := newEnv(t, "run1")
	const n = 8
	var wg sync.WaitGroup
	results := make([]*operations.BashResult, n)
	for i := range n {
		wg.Go(func() {
			results[i] = handle(context.Background(), h, env, bashCmd(fmt.Sprintf("echo %d; echo e%d >&2", i, i), 20, "")).Data
		})
	}
	wg.Wait()
	for i, r := range results {
		if r == nil || r.Stdout != fmt.Sprintf("%d\n", i) || r.Stderr != fmt.Sprintf("e%d\n", i) {
			t.Errorf("command %d: %+v", i, r)
		}
	}
}

func TestWorkDir(t *testing.T) {
	h := newPool(t, Options{})
	env := newEnv(t, "run1")
	env.WorkDir = filepath.Join(env.WorkDir, "not", "yet")
	got := run(t, h, env, "pwd; touch here")
	if got.Stdout != env.WorkDir+"\n" {
		t.Fatalf("pwd %q, want %q", got.Stdout, env.WorkDir)
	}
	if _, err := os.Stat(filepath.Join(env.WorkDir, "here")); err != nil {
		t.Fatal(err)
	}
}

func TestTimeoutKeepsOutputAndCwd(t *testing.T) {
	h := newPool(t, Options{})
	env := newEnv(t, "run1")
	sub := filepath.Join(env.WorkDir, "sub")
	run(t, h, env, "mkdir sub && cd sub && export LOST=1")
	start := time.Now()
	res := handle(context.Background(), h, env, bashCmd("echo before; echo err-before >&2; sleep 30; echo after", 0.5, ""))
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("timeout took %s", elapsed)
	}
	got := res.Data
	if res.Error != "" || got == nil {
		t.Fatalf("error %q", res.Error)
	}
	if !got.TimedOut || got.ExitCode != TimeoutExitCode {
		t.Errorf("timed_out %v exit %d, want true %d", got.TimedOut, got.ExitCode, TimeoutExitCode)
	}
	if got.Stdout != "before\n" || got.Stderr != "err-before\n" {
		t.Errorf("stdout %q stderr %q, want the output before the timeout", got.Stdout, got.Stderr)
	}
	next := run(t, h, env, `pwd; echo "lost=${LOST-}"`)
	if want := sub + "\nlost=\n"; next.Stdout != want {
		t.Fatalf("after timeout: stdout %q, want %q", next.Stdout, want)
	}
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	h := newPool(t, Options{})
	env := newEnv(t, "run1")
	shellPID := firstInt(t, run(t, h, env, "echo $$").Stdout)
	res := handle(context.Background(), h, env, bashCmd("sleep 1000 & echo $!; trap '' INT; sleep 30", 0.3, ""))
	if res.Data == nil || !res.Data.TimedOut {
		t.Fatalf("want a timeout: %+v %q", res.Data, res.Error)
	}
	child := firstInt(t, res.Data.Stdout)
	waitDead(t, child)
	waitDead(t, shellPID)
	if got := run(t, h, env, "echo ok"); got.Stdout != "ok\n" {
		t.Fatalf("after kill: %+v", got)
	}
}

func TestOutputCap(t *testing.T) {
	tests := []struct {
		name    string
		command string
		stderr  bool
	}{
		{name: "stdout", command: `head -c 500000 /dev/zero | tr '\0' a`},
		{name: "stderr", command: `head -c 500000 /dev/zero | tr '\0' a >&2`, stderr: true},
		{name: "lines", command: `seq 1 100000`},
		{name: "yes", command: `yes | head -c 5000000`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newPool(t, Options{})
			env := newEnv(t, "run1")
			env.OutputLimit = 1000
			got := run(t, h, env, tt.command)
			s := got.Stdout
			if tt.stderr {
				s = got.Stderr
			}
			if !got.Truncated || !strings.Contains(s, "bytes elided") || len(s) > 1100 {
				t.Fatalf("truncated %v, %d bytes: %.200q", got.Truncated, len(s), s)
			}
			if tt.name == "lines" && (!strings.HasPrefix(s, "1\n2\n") || !strings.HasSuffix(s, "99999\n100000\n")) {
				t.Fatalf("head or tail lost: %q", s)
			}
		})
	}
}

func TestTimeoutWhileFlooding(t *testing.T) {
	h := newPool(t, Options{})
	env := newEnv(t, "run1")
	env.OutputLimit = 1000
	res := handle(context.Background(), h, env, bashCmd("yes", 0.5, ""))
	got := res.Data
	if got == nil || !got.TimedOut || !got.Truncated || !strings.HasPrefix(got.Stdout, "y\ny\n") || len(got.Stdout) > 1100 {
		t.Fatalf("error %q result %+v", res.Error, got)
	}
	if next := run(t, h, env, "echo ok"); next.Stdout != "ok\n" {
		t.Fatalf("after flood: %+v", next)
	}
}

func TestOptionsDefaults(t *testing.T) {
	h := newPool(t, Options{OutputLimit: 100, DefaultTimeout: 300 * time.Millisecond, Env: []string{"EXTRA=1"}})
	env := newEnv(t, "run1")
	got := run(t, h, env, "seq 1 1000; echo extra=$EXTRA >&2")
	if !got.Truncated || len(got.Stdout) > 150 || got.Stderr != "extra=1\n" {
		t.Fatalf("%+v", got)
	}
	res := handle(context.Background(), h, env, bashCmd("sleep 30", 0, ""))
	if res.Data == nil || !res.Data.TimedOut {
		t.Fatalf("want a timeout from options: %+v", res.Data)
	}
}

func TestStdinIsNull(t *testing.T) {
	h := newPool(t, Options{})
	env := newEnv(t, "run1")
	tests := []struct {
		name    string
		command string
		want    string
	}{
		{name: "cat", command: "cat; echo done", want: "done\n"},
		{name: "read", command: "read x; echo rc=$?", want: "rc=1\n"},
		{name: "python-like", command: "head -n 1", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := run(t, h, env, tt.command)
			if got.TimedOut || got.Stdout != tt.want {
				t.Fatalf("%+v, want stdout %q", got, tt.want)
			}
		})
	}
}

func TestEnvironmentIsolation(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-secret")
	t.Setenv("FLOCK_SERVER_ONLY", "x")
	t.Setenv("HOME", "/home/flock-test")
	h := newPool(t, Options{})
	env := newEnv(t, "run1")
	tests := []struct {
		name    string
		command string
		want    string
	}{
		{name: "api key", command: `echo "${OPENAI_API_KEY-unset}"`, want: "unset\n"},
		{name: "no secret anywhere", command: `env | grep -c sk-test-secret`, want: "0\n"},
		{name: "other server vars", command: `echo "${FLOCK_SERVER_ONLY-unset}"`, want: "unset\n"},
		{name: "home kept", command: `echo "$HOME"`, want: "/home/flock-test\n"},
		{name: "term", command: `echo "$TERM $PAGER $GIT_PAGER $TQDM_DISABLE"`, want: "dumb cat cat 1\n"},
		{name: "path kept", command: `[ "$PATH" = "` + os.Getenv("PATH") + `" ] && echo same`, want: "same\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := run(t, h, env, tt.command); got.Stdout != tt.want {
				t.Fatalf("stdout %q, want %q", got.Stdout, tt.want)
			}
		})
	}
}

func TestContextCancel(t *testing.T) {
	h := newPool(t, Options{})
	env := newEnv(t, "run1")
	run(t, h, env, "true")
	flag := filepath.Join(env.WorkDir, "started")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var res reply
	var wg sync.WaitGroup
	wg.Go(func() { res = handle(ctx, h, env, bashCmd("echo partial; touch started; sleep 30.25", 60, "")) })
	testkit.CheckFor(t, 10*time.Second, func() error {
		_, err := os.Stat(flag)
		return err
	})
	// Cancel while sleep runs (TestCancelAtAnyMoment covers the moments
	// between commands).
	testkit.CheckFor(t, 10*time.Second, func() error {
		if !processRunning("sleep\x0030.25") {
			return errors.New("sleep 30.25 not running yet")
		}
		return nil
	})
	start := time.Now()
	cancel()
	wg.Wait()
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("cancel took %s", elapsed)
	}
	if res.Error != "cancelled" || res.Data == nil || res.Data.Stdout != "partial\n" {
		t.Fatalf("error %q result %+v", res.Error, res.Data)
	}
	if got := run(t, h, env, "echo again"); got.Stdout != "again\n" {
		t.Fatalf("after cancel: %+v", got)
	}
}

func TestCloseOwner(t *testing.T) {
	h := newPool(t, Options{})
	env := newEnv(t, "run1")
	keep := newEnv(t, "run2")
	pid := firstInt(t, run(t, h, env, "echo $$").Stdout)
	run(t, h, keep, "export KEPT=1")

	flag := filepath.Join(env.WorkDir, "started")
	var res reply
	var wg sync.WaitGroup
	wg.Go(func() { res = handle(context.Background(), h, env, bashCmd("touch started; sleep 30", 60, "")) })
	testkit.CheckFor(t, 10*time.Second, func() error {
		_, err := os.Stat(flag)
		return err
	})
	h.CloseOwner(env.Owner)
	wg.Wait()
	if !strings.Contains(res.Error, ErrSessionClosed.Error()) {
		t.Fatalf("running command: error %q", res.Error)
	}
	waitDead(t, pid)
	h.CloseOwner("never-seen")
	if got := run(t, h, keep, "echo $KEPT"); got.Stdout != "1\n" {
		t.Fatalf("other run disturbed: %+v", got)
	}
	if got := run(t, h, env, "echo fresh"); got.Stdout != "fresh\n" {
		t.Fatalf("run after CloseOwner: %+v", got)
	}
}

func TestClose(t *testing.T) {
	h := newPool(t, Options{})
	env := newEnv(t, "run1")
	pid := firstInt(t, run(t, h, env, "echo $$").Stdout)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	waitDead(t, pid)
	res := handle(context.Background(), h, env, bashCmd("true", 1, ""))
	if !strings.Contains(res.Error, ErrClosed.Error()) {
		t.Fatalf("after Close: %q", res.Error)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCloseWithEscapedProcess(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	h := newPool(t, Options{})
	env := newEnv(t, "run1")
	// The escaped sleep keeps the pty slave open as its stdout.
	pid := firstInt(t, run(t, h, env, "setsid sleep 60 & echo $!").Stdout)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	start := time.Now()
	h.CloseOwner(env.Owner)
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Fatalf("CloseOwner blocked %s on an escaped process", elapsed)
	}
}

func TestShellExitRestarts(t *testing.T) {
	h := newPool(t, Options{})
	env := newEnv(t, "run1")
	run(t, h, env, "cd /")
	tests := []struct {
		name    string
		command string
		stdout  string
		code    int
	}{
		{name: "exit", command: "echo bye; exit 7", stdout: "bye\n", code: 7},
		{name: "restarted in cwd", command: "pwd", stdout: "/\n"},
		{name: "exec replaces shell", command: "exec true", code: 0},
		{name: "alive again", command: "echo hi", stdout: "hi\n"},
		{name: "syntax error", command: "echo \"unterminated", code: 2},
		{name: "echo turned on", command: "stty echo icanon </dev/tty", code: 0},
		{name: "echo off again", command: "echo quiet", stdout: "quiet\n"},
		{name: "still alive", command: "echo ok", stdout: "ok\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := run(t, h, env, tt.command)
			if got.ExitCode != tt.code || got.Stdout != tt.stdout {
				t.Fatalf("%+v, want exit %d stdout %q", got, tt.code, tt.stdout)
			}
		})
	}
}

func TestMarkerForgery(t *testing.T) {
	h := newPool(t, Options{})
	env := newEnv(t, "run1")
	fake := "\n__FLOCK_00112233445566778899aabbccddeeff_0_/fake_00112233445566778899aabbccddeeff__\n"
	tests := []struct {
		name    string
		command string
		stdout  string
		stderr  string
		code    int
	}{
		{name: "fake marker", command: `printf '%s' "$FAKE"; exit_with() { return $1; }; exit_with 3`, stdout: fake, code: 3},
		{name: "fake marker on stderr", command: `printf '%s' "$FAKE" >&2; echo out`, stdout: "out\n", stderr: fake},
		{name: "marker prefix only", command: `printf '\n__FLOCK_'`, stdout: "\n__FLOCK_"},
		{name: "declare -f of marker fn", command: `declare -f __flock_mark >/dev/null; echo fine`, stdout: "fine\n"},
	}
	run(t, h, env, "export FAKE="+shellQuote(fake))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := run(t, h, env, tt.command)
			if got.ExitCode != tt.code || got.Stdout != tt.stdout || got.Stderr != tt.stderr {
				t.Fatalf("%+v, want exit %d stdout %q stderr %q", got, tt.code, tt.stdout, tt.stderr)
			}
		})
	}
	if got := run(t, h, env, "pwd"); got.Stdout != env.WorkDir+"\n" {
		t.Fatalf("cwd confused by a fake marker: %q", got.Stdout)
	}
}

func TestWrap(t *testing.T) {
	var gotDir string
	h := newPool(t, Options{Wrap: func(argv []string, workDir string) []string {
		gotDir = workDir
		return append([]string{"env", "WRAPPED=yes"}, argv...)
	}})
	env := newEnv(t, "run1")
	if got := run(t, h, env, "echo $WRAPPED"); got.Stdout != "yes\n" || gotDir != env.WorkDir {
		t.Fatalf("stdout %q, wrap dir %q", got.Stdout, gotDir)
	}
}

func TestStartFailure(t *testing.T) {
	h := newPool(t, Options{Wrap: func(argv []string, _ string) []string {
		return []string{"false"}
	}})
	env := newEnv(t, "run1")
	res := handle(context.Background(), h, env, bashCmd("true", 1, ""))
	if !strings.Contains(res.Error, ErrStart.Error()) {
		t.Fatalf("error %q", res.Error)
	}
}

// durations records per-iteration times and reports their median.
type durations []time.Duration

func (d durations) report(b *testing.B) {
	if len(d) == 0 {
		return
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Nanoseconds())/1e3, "p99-µs")
}

func BenchmarkBuiltinRoundTrip(b *testing.B) { benchRoundTrip(b, isolation.PolicyNone) }

// BenchmarkBuiltinRoundTripIsolated is BenchmarkBuiltinRoundTrip in a
// shell under the default isolation (bwrap).
func BenchmarkBuiltinRoundTripIsolated(b *testing.B) {
	if err := isolation.Available(); err != nil {
		b.Skip(err)
	}
	benchRoundTrip(b, isolation.PolicyAuto)
}

func benchRoundTrip(b *testing.B, policy isolation.Policy) {
	h := newPool(b, Options{Isolation: policy})
	env := newEnv(b, "bench")
	run(b, h, env, "true") // warm the session
	req := bashCmd("true", 10, "")
	ctx := context.Background()
	d := make(durations, 0, b.N)
	for b.Loop() {
		start := time.Now()
		res := handle(ctx, h, env, req)
		d = append(d, time.Since(start))
		if res.Error != "" || res.Data.ExitCode != 0 {
			b.Fatalf("%q %+v", res.Error, res.Data)
		}
	}
	b.StopTimer()
	d.report(b)
}

// BenchmarkSessionStart measures a new session's first command (start the
// reaper and the shell, run true, kill it): unisolated, and under the
// default isolation (bwrap), which every session of a server with bwrap
// now pays.
func BenchmarkSessionStart(b *testing.B) {
	for _, policy := range []isolation.Policy{isolation.PolicyNone, isolation.PolicyAuto} {
		b.Run(string(policy), func(b *testing.B) {
			if policy == isolation.PolicyAuto {
				if err := isolation.Available(); err != nil {
					b.Skip(err)
				}
			}
			h := newPool(b, Options{Isolation: policy})
			env := newEnv(b, "bench")
			req := bashCmd("true", 10, "")
			ctx := context.Background()
			d := make(durations, 0, b.N)
			i := 0
			for b.Loop() {
				env.Owner = fmt.Sprintf("bench-%d", i)
				i++
				start := time.Now()
				res := handle(ctx, h, env, req)
				d = append(d, time.Since(start))
				if got := res.Data; res.Error != "" || got == nil || got.ExitCode != 0 {
					b.Fatalf("%q %+v", res.Error, got)
				}
				h.CloseOwner(env.Owner)
			}
			b.StopTimer()
			d.report(b)
		})
	}
}

func BenchmarkForkBashTrue(b *testing.B) {
	if _, err := exec.LookPath("bash"); err != nil {
		b.Skip("bash not installed")
	}
	d := make(durations, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if err := exec.Command("bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(start))
	}
	b.StopTimer()
	d.report(b)
}

// processRunning reports whether some process's command line (NUL-separated
// arguments) is exactly cmdline.
func processRunning(cmdline string) bool {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && strings.TrimRight(string(b), "\x00") == cmdline {
			return true
		}
	}
	return false
}
