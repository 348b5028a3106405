package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit"
)

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// listening waits until a command that Main runs on another goroutine
// prints the address it serves on, and returns that address. It fails the
// test when the command exits first, putting its exit code back on done
// (buffered) for the test's own wait.
func listening(t *testing.T, out, errb *testkit.Buffer, done chan int) string {
	t.Helper()
	var url string
	testkit.CheckFor(t, testkit.DefaultTimeout, func() error {
		select {
		case code := <-done:
			done <- code
			t.Fatalf("exited %d before listening: %s%s", code, out, errb)
		default:
		}
		m := listeningLine.FindStringSubmatch(out.String())
		if m == nil {
			return fmt.Errorf("not listening yet: %s%s", out, errb)
		}
		url = m[1]
		return nil
	})
	return url
}

var listeningLine = regexp.MustCompile(`listening on (http://\S+)`)

func TestRunCommand(t *testing.T) {
	dir := t.TempDir()
	failing := filepath.Join(dir, "failing.json")
	if err := os.WriteFile(failing, []byte(`{"workflow_type":"script","commands":["echo one","exit 3","echo never"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(broken, []byte(`{"commands": ["ls"`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{name: "example succeeds", args: []string{"run", "--settings", "../configs/examples/script.json"}, code: 0,
			stdout: []string{"$ mkdir -p build && cd build", "wrote 7 words to", "succeeded (completed)", `result: {"commands":5,"failed":0}`}},
		{name: "failing command", args: []string{"run", "--settings", failing}, code: 1,
			stdout: []string{"failed (command_failed: exit 3)", "$ exit 3  → exit 3"}},
		{name: "broken settings", args: []string{"run", "--settings", broken}, code: 1, stderr: "broken.json: malformed JSON"},
		{name: "unknown workflow", args: []string{"run", "--workflow", "nope"}, code: 2, stderr: `unknown workflow "nope": "flock workflows" lists the registered ones`},
		{name: "workflow typo", args: []string{"run", "--workflow", "scirpt"}, code: 2, stderr: `unknown workflow "scirpt" (did you mean "script"?)`},
		// README's example with the workflow mistyped: its settings name
		// "script", and the answer is still the closest name, exit 2.
		{name: "workflow typo beside settings", args: []string{"run", "--workflow", "scirpt", "--settings", "../configs/examples/script.json"}, code: 2,
			stderr: `unknown workflow "scirpt" (did you mean "script"?)`},
		{name: "no workflow", args: []string{"run"}, code: 2, stderr: "--workflow or --settings is required"},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, stderr: `unknown command "frobnicate"`},
		{name: "version", args: []string{"version"}, code: 0, stdout: []string{"flock ", "phases-api"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if len(args) > 0 && args[0] == "run" {
				args = append(args, "--data", t.TempDir())
			}
			code, out, errs := run(t, args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errs)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(out, s) {
					t.Fatalf("stdout lacks %q:\n%s", s, out)
				}
			}
			if !strings.Contains(errs, tt.stderr) {
				t.Fatalf("stderr lacks %q:\n%s", tt.stderr, errs)
			}
		})
	}
}

func TestServeRefusesPublicAddressWithoutToken(t *testing.T) {
	t.Setenv("FLOCK_AUTH_TOKEN", "")
	code, _, errs := run(t, "serve", "--addr", "0.0.0.0:0", "--data", t.TempDir())
	if code != 1 || !strings.Contains(errs, "not a loopback address") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

// TestServeRefusesOpenTokenFile: README's token file is "mode 0600"; one
// other users may read is refused, naming the file and the chmod that
// fixes it, never quoting the token. The refusal of a public address
// without a token points at the token file, not the command line.
func TestServeRefusesOpenTokenFile(t *testing.T) {
	t.Setenv("FLOCK_AUTH_TOKEN", "")
	t.Setenv("FLOCK_AUTH_TOKEN_FILE", "")
	const tok = "flock-cli-open-token-8e3f1a2b"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--auth-token-file", file)
	if code != 1 || !strings.Contains(errs, "token file "+file) || !strings.Contains(errs, "chmod 600 "+file) {
		t.Fatalf("exit %d, want 1 naming the file and chmod 600:\n%s%s", code, out, errs)
	}
	if strings.Contains(out+errs, tok) {
		t.Fatalf("the token was printed:\n%s%s", out, errs)
	}
	code, _, errs = run(t, "serve", "--addr", "0.0.0.0:0", "--data", t.TempDir())
	if code != 1 || !strings.Contains(errs, "--auth-token-file") {
		t.Fatalf("exit %d, want 1 pointing at --auth-token-file: %s", code, errs)
	}
}

func TestServeRefusesShortToken(t *testing.T) {
	const tok = "tiny-token"
	t.Setenv("FLOCK_AUTH_TOKEN", tok)
	code, out, errs := run(t, "serve", "--addr", "127.0.0.1:0", "--data", t.TempDir())
	if code != 1 || !strings.Contains(errs, "shorter than 16 bytes") || !strings.Contains(errs, "FLOCK_AUTH_TOKEN") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.Contains(out+errs, tok) {
		t.Fatalf("the token was printed:\n%s%s", out, errs)
	}
}

func TestServeConfigFile(t *testing.T) {
	t.Setenv("FLOCK_AUTH_TOKEN", "")
	cfg := filepath.Join(t.TempDir(), "server.json")
	if err := os.WriteFile(cfg, []byte(`{"addr": "0.0.0.0:0", "data": "`+t.TempDir()+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "serve", "--config", cfg)
	if code != 1 || !strings.Contains(errs, "0.0.0.0:0 is not a loopback address") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("workflow_dirs: [/no/such/dir]\naddr: 127.0.0.1:0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = run(t, "serve", "--config", bad, "--data", t.TempDir())
	if code != 1 || !strings.Contains(errs, "/no/such/dir") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

// TestServeConfigFileEveryKey: every key of a --config file reaches the
// server's settings (header_timeout_s, body_timeout_s and snapshots were
// dropped when each key was copied by name), a flag given explicitly
// wins over the file, and the file is hidden from the programs flock
// starts.
func TestServeConfigFileEveryKey(t *testing.T) {
	t.Setenv("FLOCK_AUTH_TOKEN", "")
	t.Setenv("FLOCK_AUTH_TOKEN_FILE", "")
	data := t.TempDir()
	path := filepath.Join(t.TempDir(), "server.yaml")
	doc := "addr: 127.0.0.1:5555\ndata: " + data + "\nheader_timeout_s: 3\nbody_timeout_s: 7\nmax_body_bytes: 1000\n" +
		"snapshots:\n  max_file_bytes: 100\n  max_run_bytes: 200\npublic_names: [flock.example]\n" +
		"isolation: none\npass_env: [PGPASSWORD]\nsandbox_token_envs: [SANDBOX_TOKEN]\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := newFlags("serve")
	var cfg configs.Server
	var lo logOpts
	var tf tokenFlags
	serverFlags(fs, &cfg, &lo, &tf)
	if err := fs.Parse([]string{"--config", path, "--addr", "127.0.0.1:6666"}); err != nil {
		t.Fatal(err)
	}
	if err := applyConfigFile(fs, &cfg, &tf, notices{w: io.Discard}); err != nil {
		t.Fatal(err)
	}
	want := configs.Server{Addr: "127.0.0.1:6666", DataDir: data, Mode: "live", HeaderTimeoutS: 3, BodyTimeoutS: 7, MaxBodyBytes: 1000,
		Snapshots: configs.Snapshots{MaxFileBytes: 100, MaxRunBytes: 200}, PublicNames: []string{"flock.example"},
		Isolation: "none", PassEnv: []string{"PGPASSWORD"}, SandboxTokenEnvs: []string{"SANDBOX_TOKEN"},
		Hidden: []string{path}} // the settings file: no program flock starts reads it
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("settings\n%+v\nwant\n%+v", cfg, want)
	}
}

func TestLaunchAndExit(t *testing.T) {
	code, out, errs := run(t, "--workflow", "script", "--settings", "../configs/examples/script.json",
		"--addr", "127.0.0.1:0", "--data", t.TempDir(), "--exit", "--log-level", "warn")
	if code != 0 || !strings.Contains(out, "started run") || !strings.Contains(out, "succeeded (completed)") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// TestRunResume interrupts `flock run` in the middle of a run, then
// finishes the same run with `flock run --resume`.
func TestRunResume(t *testing.T) {
	data := t.TempDir()
	settings := filepath.Join(t.TempDir(), "slow.json")
	if err := os.WriteFile(settings, []byte(`{"commands":["echo one","touch started; sleep 1","echo three"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb testkit.Buffer
	done := make(chan int)
	go func() {
		done <- Main(ctx, []string{"run", "--workflow", "script", "--settings", settings, "--data", data}, &out, &errb)
	}()
	testkit.CheckFor(t, testkit.DefaultTimeout, func() error {
		if m, _ := filepath.Glob(filepath.Join(data, "runs", "*", "started")); len(m) != 1 {
			return fmt.Errorf("the second command never started\n%s\n%s", out.String(), errb.String())
		}
		return nil
	})
	cancel()
	if code := <-done; code != 1 || !strings.Contains(errb.String(), "flock run --resume") {
		t.Fatalf("interrupted run: exit %d\n%s", code, errb.String())
	}
	id := strings.Fields(strings.TrimPrefix(out.String(), "run "))[0]
	id = strings.TrimSuffix(id, ":")
	code, stdout, errs := run(t, "run", "--resume", id, "--data", data)
	if code != 0 || !strings.Contains(stdout, "succeeded") || !strings.Contains(stdout, `"commands":3`) {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout, errs)
	}
	if code, _, errs := run(t, "run", "--resume", "nosuchrun", "--data", data); code != 1 || !strings.Contains(errs, `no run "nosuchrun" in `+data) {
		t.Fatalf("resume unknown: exit %d %s", code, errs)
	}
}

// TestSettingsWarningsOnStderr: flock run and the Flock-style launch print
// the settings warnings to stderr before progress, and still run.
func TestSettingsWarningsOnStderr(t *testing.T) {
	settings := filepath.Join(t.TempDir(), "typos.json")
	doc := `{"workflow_type":"script","commands":["echo hi"],"limts":{"seconds":60},"bogus_key":1,"limits":{"tokns":5},"advisors":[]}`
	if err := os.WriteFile(settings, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`warning: settings key "advisors" is a Flock setting that flock does not use in workflow "script"`,
		`warning: unknown settings key "bogus_key"`,
		`warning: unknown settings key "limits.tokns" (did you mean "limits.tokens"?)`,
		`warning: unknown settings key "limts" (did you mean "limits"?)`,
	}
	tests := []struct {
		name   string
		args   []string
		prefix string
	}{
		{name: "run", args: []string{"run", "--settings", settings, "--data", t.TempDir()}, prefix: "flock run: "},
		{name: "launch", args: []string{"--workflow", "script", "--settings", settings, "--addr", "127.0.0.1:0",
			"--data", t.TempDir(), "--exit", "--log-level", "warn"}, prefix: "flock: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := run(t, tt.args...)
			if code != 0 || !strings.Contains(out, "succeeded") {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
			for _, w := range want {
				if !strings.Contains(errs, tt.prefix+w) {
					t.Errorf("stderr lacks %q:\n%s", tt.prefix+w, errs)
				}
			}
			if strings.Contains(out, "warning") {
				t.Errorf("warnings belong on stderr, not stdout:\n%s", out)
			}
		})
	}
}

// TestTimeoutPrecedence runs real commands to show which of two timeout
// settings wins: a workflow's own per-command timeout (script's timeout_s,
// react's tool_timeout_s) over the engine's bash.timeout_s, which applies
// when the workflow's is unset.
func TestTimeoutPrecedence(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "replies.jsonl")
	replies := `{"tool_calls":[{"id":"c1","name":"bash","arguments":"{\"command\":\"sleep 30\"}"}]}` + "\n" +
		`{"tool_calls":[{"id":"c2","name":"submit","arguments":"{\"answer\":\"done\"}"}]}` + "\n"
	if err := os.WriteFile(script, []byte(replies), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		settings string
		code     int
	}{
		{name: "script timeout_s wins over bash.timeout_s", code: 1,
			settings: `{"workflow_type":"script","commands":["sleep 30"],"timeout_s":1,"bash":{"timeout_s":600}}`},
		{name: "bash.timeout_s when script's is unset", code: 1,
			settings: `{"workflow_type":"script","commands":["sleep 30"],"bash":{"timeout_s":1}}`},
		{name: "react tool_timeout_s wins over bash.timeout_s", code: 0,
			settings: `{"workflow_type":"react","model":"agent","tools":["bash","submit"],"tool_timeout_s":1,"bash":{"timeout_s":600},` +
				`"models":{"agent":{"provider":"scripted","script":"` + script + `"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			settings := filepath.Join(dir, "settings.json")
			if err := os.WriteFile(settings, []byte(tt.settings), 0o644); err != nil {
				t.Fatal(err)
			}
			begin := time.Now()
			code, out, errs := run(t, "run", "--settings", settings, "--data", t.TempDir())
			if took := time.Since(begin); took > 15*time.Second {
				t.Fatalf("took %v: the 1 s timeout did not apply\n%s\n%s", took, out, errs)
			}
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errs)
			}
		})
	}
}

// TestAskedLogFormat: Main finds --log-format in a command line it could
// not parse: either spelling, a space or "=", the last one winning, none
// after "--" or without a value.
func TestAskedLogFormat(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--addr", "x", "--log-format", "json", "--bad"}, "json"},
		{[]string{"-log-format=json"}, "json"},
		{[]string{"--log-format", "json", "--log-format=text"}, "text"},
		{[]string{"--", "--log-format", "json"}, ""},
		{[]string{"--log-format"}, ""},
		{[]string{"--task", "log-format", "json"}, ""},
		{nil, ""},
	} {
		if got := askedLogFormat(c.args); got != c.want {
			t.Errorf("askedLogFormat(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

// TestServeOnEveryAddress: a server on 0.0.0.0 says where to reach it
// from this machine (the loopback URL, which the listening line's reader
// can open) and that it listens on every address, not "http://[::]:PORT";
// and it counts the runs it resumed in words ("0 runs").
func TestServeOnEveryAddress(t *testing.T) {
	t.Setenv("FLOCK_AUTH_TOKEN", "every-address-token-6c2d81f0")
	t.Setenv("FLOCK_AUTH_TOKEN_FILE", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb testkit.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"serve", "--addr", "0.0.0.0:0", "--data", t.TempDir()}, &out, &errb)
	}()
	url := listening(t, &out, &errb, done)
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Errorf("listening on %s, want the loopback URL", url)
	}
	if line := out.String(); !strings.Contains(line, url+" and every address of this machine") || !strings.Contains(line, "0 runs resumed") {
		t.Errorf("listening line: %s", line)
	}
	res, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}
