package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
)

// jsonLines decodes every line of out as a JSON object; a line that is not
// one fails the test, naming the command and the line.
func jsonLines(t *testing.T, what, out string) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("%s: a line that is not JSON: %q", what, line)
			continue
		}
		recs = append(recs, rec)
	}
	return recs
}

// findRecord returns the first record whose msg is msg.
func findRecord(recs []map[string]any, msg string) map[string]any {
	for _, r := range recs {
		if r["msg"] == msg {
			return r
		}
	}
	return nil
}

// logProc is the real binary run with its stdout and stderr kept apart.
type logProc struct {
	cmd         *exec.Cmd
	out, errOut bytes.Buffer
}

func startLogProc(t *testing.T, args ...string) *logProc {
	t.Helper()
	p := &logProc{cmd: exec.Command(binary, args...)}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.errOut
	p.cmd.Dir = ".."
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	return p
}

// waitHTTP waits until base answers GET path with 200.
func waitHTTP(t *testing.T, p *logProc, base, path string) {
	t.Helper()
	testkit.WaitWithin(t, 60*time.Second, base+path, func() bool {
		res, err := http.Get(base + path)
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
}

// stop sends SIGTERM and waits for the process to exit.
func (p *logProc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\nstdout:\n%s\nstderr:\n%s", err, p.out.String(), p.errOut.String())
	}
}

// TestJSONLogEveryLine: with --log-format json, every line the server
// commands print is a JSON object, on stdout and stderr alike: flock
// serve's listening and shutdown lines and its warning about a token on
// the command line, the Flock-style launch's start and result lines, flock
// sandbox's listening line, an error that stops a start, and usage errors
// (found before the command could set up its log; exit code 2 all the
// same).
func TestJSONLogEveryLine(t *testing.T) {
	dir := t.TempDir()

	addr := freePort(t)
	serve := startLogProc(t, "serve", "--log-format", "json", "--addr", addr, "--data", filepath.Join(dir, "serve"), "--mode", "simulated",
		"--auth-token", "flock-e2e-jsonlog-token-0123456789")
	waitHTTP(t, serve, "http://"+addr, "/health")
	serve.stop(t)
	recs := jsonLines(t, "serve stdout", serve.out.String())
	recs = append(recs, jsonLines(t, "serve stderr", serve.errOut.String())...)
	if r := findRecord(recs, "flock listening"); r == nil || r["url"] != "http://"+addr || r["mode"] != "simulated" {
		t.Errorf("serve: listening record %v, want url http://%s, mode simulated", r, addr)
	}
	if findRecord(recs, "flock shutting down") == nil {
		t.Errorf("serve: no shutdown record in %v", recs)
	}
	if w := findRecordWith(recs, "--auth-token-file"); w == nil || w["level"] != "WARN" {
		t.Errorf("serve: warning about the token on the command line %v, want a WARN record", w)
	}

	launch := startLogProc(t, "--log-format", "json", "--addr", freePort(t), "--data", filepath.Join(dir, "launch"),
		"--workflow", "script", "--settings", "configs/examples/script.json", "--exit")
	if err := launch.cmd.Wait(); err != nil {
		t.Fatalf("launch: %v\nstdout:\n%s\nstderr:\n%s", err, launch.out.String(), launch.errOut.String())
	}
	recs = jsonLines(t, "launch stdout", launch.out.String())
	recs = append(recs, jsonLines(t, "launch stderr", launch.errOut.String())...)
	started, result := findRecord(recs, "started run"), findRecord(recs, "run result")
	if started == nil || started["workflow"] != "script" || result == nil || result["status"] != "succeeded" || result["run"] != started["run"] ||
		!reflect.DeepEqual(result["result"], map[string]any{"commands": 5.0, "failed": 0.0}) {
		t.Errorf("launch: started %v, result %v", started, result)
	}

	sbAddr := freePort(t)
	sb := startLogProc(t, "sandbox", "--log-format", "json", "--config", "configs/sandbox/offline.json", "--addr", sbAddr,
		"--data", filepath.Join(dir, "sandbox"))
	waitHTTP(t, sb, "http://"+sbAddr, "/health")
	sb.stop(t)
	recs = jsonLines(t, "sandbox stdout", sb.out.String())
	recs = append(recs, jsonLines(t, "sandbox stderr", sb.errOut.String())...)
	if r := findRecord(recs, "flock sandbox listening"); r == nil || r["url"] != "http://"+sbAddr {
		t.Errorf("sandbox: listening record %v, want url http://%s", r, sbAddr)
	}

	// A start that is refused (a public address without a token).
	bad := startLogProc(t, "serve", "--log-format", "json", "--addr", "0.0.0.0:0", "--data", filepath.Join(dir, "bad"))
	if err := bad.cmd.Wait(); err == nil {
		t.Fatal("serve on 0.0.0.0 without a token started")
	}
	recs = jsonLines(t, "refused serve stderr", bad.errOut.String())
	jsonLines(t, "refused serve stdout", bad.out.String())
	var last map[string]any
	if len(recs) > 0 {
		last = recs[len(recs)-1]
	}
	if e, _ := last["err"].(string); last["level"] != "ERROR" || !strings.Contains(e, "token") {
		t.Errorf("refused serve: %v, want an ERROR record naming the token", recs)
	}

	// Usage errors: an unknown flag, a flag without its value, a stray
	// argument, a missing required flag; --log-format given before or
	// after them, with a space or an equals sign.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--log-format", "json", "--no-such-flag"}, "--no-such-flag"},
		{[]string{"serve", "--log-format=json", "--addr"}, "--addr"},
		{[]string{"--workflow", "script", "--log-format", "json", "extra"}, "extra"},
		{[]string{"sandbox", "-log-format", "json"}, "--config"},
	} {
		p := startLogProc(t, c.args...)
		err := p.cmd.Wait()
		if code := p.cmd.ProcessState.ExitCode(); code != 2 {
			t.Errorf("flock %s: exit code %d (%v), want 2", strings.Join(c.args, " "), code, err)
		}
		what := "flock " + strings.Join(c.args, " ")
		jsonLines(t, what+": stdout", p.out.String())
		recs := jsonLines(t, what+": stderr", p.errOut.String())
		if len(recs) != 1 {
			t.Errorf("%s: %d records on stderr, want 1: %v", what, len(recs), recs)
			continue
		}
		r := recs[0]
		if e, _ := r["err"].(string); r["level"] != "ERROR" || r["msg"] != "usage error" || !strings.Contains(e, c.want) || r["hint"] == nil {
			t.Errorf("%s: %v, want an ERROR record \"usage error\" naming %s, with a hint", what, r, c.want)
		}
	}
}

// findRecordWith returns the first record whose msg contains s.
func findRecordWith(recs []map[string]any, s string) map[string]any {
	for _, r := range recs {
		if m, _ := r["msg"].(string); strings.Contains(m, s) {
			return r
		}
	}
	return nil
}
