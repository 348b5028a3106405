package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/telemetry"
)

// TestServeDebugLog serves with --log-level debug and a token from the
// environment: the one logger the command builds logs the HTTP layer's
// request lines, and the token is in none of them; the viewer's page
// needs no token.
func TestServeDebugLog(t *testing.T) {
	const token = "canary-cli-token-5e1f0a9d73c2"
	t.Setenv("FLOCK_AUTH_TOKEN", token)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb testkit.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--log-level", "debug"}, &out, &errb)
	}()
	base := listening(t, &out, &errb, done)
	for _, auth := range []string{"Bearer " + token, "Bearer not-" + token, ""} {
		req, err := http.NewRequest(http.MethodGet, base+"/runs?after=x", nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	// The viewer's page is served at / without the token.
	res, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(page), `src="/ui/app.js"`) {
		t.Errorf("GET / without a token: %d %.200s, want the viewer's page", res.StatusCode, page)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d: %s", code, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	logs := errb.String()
	if !strings.Contains(logs, "level=DEBUG msg=\"http request\"") || !strings.Contains(logs, "status=401") {
		t.Fatalf("no debug request lines on stderr:\n%s", logs)
	}
	if strings.Contains(out.String()+logs, token) {
		t.Fatalf("the token reached the output:\n%s\n%s", out.String(), logs)
	}
}

// TestRunJSONLogs runs an agent with --log-format json: every log line is
// one JSON object, and the lines about the run carry its id and its trace
// id (the one its spans are exported under).
func TestRunJSONLogs(t *testing.T) {
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"run", "--log-format", "json", "--log-level", "debug", "--mode", "simulated",
		"--data", t.TempDir(), "--workflow", "triframe", "--settings", "../settings.example.json",
		"--task", "Create a file hello.txt containing the word flock, then submit the number of bytes in it."}, &out, &errb)
	if code != 0 {
		t.Fatalf("run exited %d: %s", code, errb.String())
	}
	var about int
	for _, line := range strings.Split(strings.TrimSpace(errb.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %v\n%s", err, line)
		}
		run, _ := rec["run"].(string)
		if run == "" {
			continue
		}
		about++
		if got, want := rec["trace_id"], telemetry.TraceID(run).String(); got != want {
			t.Errorf("line %q: trace_id %v, want %s", rec["msg"], got, want)
		}
	}
	if about < 2 {
		t.Fatalf("%d log lines about the run, want the run's start and end:\n%s", about, errb.String())
	}
	code = Main(context.Background(), []string{"run", "--log-format", "yaml", "--data", t.TempDir(), "--workflow", "triframe", "--task", "x"}, &out, &errb)
	if code == 0 || !strings.Contains(errb.String(), `--log-format: log format "yaml": want text or json`) {
		t.Fatalf("bad --log-format: exit %d, stderr %s", code, errb.String())
	}
}
