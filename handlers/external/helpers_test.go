package external_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/internal/testkit/testapp"
	"github.com/flockrun/flock/server"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// flock is an in-process flock serve: the app and its HTTP server on
// 127.0.0.1, with the gateway mounted and announced.
type flock struct {
	t    testing.TB
	app  *app.App
	base string
	dir  string
}

func newFlock(t testing.TB, mutate ...func(*configs.Server)) *flock {
	t.Helper()
	dir := t.TempDir()
	cfg := configs.Server{Addr: "127.0.0.1:0", DataDir: filepath.Join(dir, "data"), ReadRoots: []string{dir}}
	for _, m := range mutate {
		m(&cfg)
	}
	a := testapp.Open(t, cfg)
	srv, err := server.New(a.Config, a.Executor, a.Executor.Store(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.MountGateway(a.Gateway)
	base := testkit.Serve(t, srv)
	a.Gateway.SetBaseURL(base)
	return &flock{t: t, app: a, base: base, dir: dir}
}

// start starts a run and returns its id.
func (f *flock) start(workflow string, settings any, task string) string {
	f.t.Helper()
	b, _ := json.Marshal(settings)
	r, err := f.app.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: workflow, Settings: b, Task: task})
	if err != nil {
		f.t.Fatal(err)
	}
	return r.ID
}

// wait waits for run id to end.
func (f *flock) wait(id string, d time.Duration) state.Run {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	r, err := f.app.Executor.Wait(ctx, id)
	if err != nil {
		f.t.Fatalf("run %s: %v", id, err)
	}
	return r
}

// agentPath is the example agent (standard library only).
func agentPath(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "..", "examples", "external", "agent.py")
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// needPython skips (in a developer checkout) or fails (under
// scripts/test.sh, FLOCK_TEST_SCRIPT=1) without python3.
func needPython(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("FLOCK_TEST_SCRIPT") != "" {
			t.Fatal("python3 is required (scripts/test.sh installs it)")
		}
		t.Skip("python3 not found")
	}
	return p
}

// writeFile writes content to dir/name and returns the path.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// httpClient is the tests' client of the gateway and the API: a request
// the server never answers fails the test naming its URL within this
// timeout instead of holding it until the test binary's -timeout.
var httpClient = &http.Client{Timeout: 2 * time.Minute}

// post sends a JSON body with headers and returns the status and body.
func post(t testing.TB, url string, body any, headers map[string]string) (int, []byte, http.Header) {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case string:
		r = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		r = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(http.MethodPost, url, r)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out, resp.Header
}

func runtimeCaller() (uintptr, string, int, bool) { return runtime.Caller(1) }

// readRunFile reads a file of run id's work directory.
func readRunFile(t testing.TB, f *flock, id, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.app.Config.RunsDir(), id, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
