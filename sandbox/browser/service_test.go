package browser_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit/testsandbox"
	"github.com/flockrun/flock/sandbox"
	"github.com/flockrun/flock/sandbox/browser"
	"github.com/flockrun/flock/server/sandboxapi"
)

// chromiumProcesses returns the pids of live processes started with profile
// as their --user-data-dir.
func chromiumProcesses(profile string) []string {
	want := "--user-data-dir=" + profile
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), want+"\x00") {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue // a zombie is dead
		}
		pids = append(pids, e.Name())
	}
	return pids
}

// needChromium skips the test when chromium is absent, or fails it under
// scripts/test.sh (FLOCK_TEST_REQUIRE_BINARIES), which installs it.
func needChromium(t *testing.T) {
	t.Helper()
	if _, err := browser.FindChromium(""); err != nil {
		if os.Getenv("FLOCK_TEST_REQUIRE_BINARIES") != "" {
			t.Fatalf("browser tests need chromium, which scripts/test.sh should have installed: %v", err)
		}
		t.Skipf("browser tests need chromium (apt-get install chromium): %v", err)
	}
}

// TestHTTP drives a browser session through the sandbox service over real
// HTTP against a local form: create, navigate, type, click, extract,
// screenshot, destroy; then checks that no chromium process of the session
// is left, and that Close kills a session never destroyed.
func TestHTTP(t *testing.T) {
	needChromium(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hello" {
			fmt.Fprintf(w, `<html><head><title>Result</title></head><body><p id="result">Hello, %s!</p></body></html>`, html.EscapeString(r.URL.Query().Get("name")))
			return
		}
		fmt.Fprint(w, `<html><head><title>Greeter</title></head><body><form action="/hello"><input id="name" name="name"><button id="go">Greet</button></form></body></html>`)
	}))
	defer site.Close()

	cfg, err := sandbox.ParseConfig([]byte(`{"resources": {"browser": {"enabled": true, "config": {"action_timeout_s": 10, "allow_hosts": ["127.0.0.1"]}}}}`),
		func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	svc, err := sandbox.New(context.Background(), cfg, sandbox.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			svc.Close(context.Background())
		}
	}()
	srv, err := sandboxapi.NewServer(configs.Server{Addr: "127.0.0.1:0", DataDir: t.TempDir()}, svc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	client := &http.Client{Timeout: 60 * time.Second}
	post := func(path string, body any) (int, testsandbox.Envelope) {
		t.Helper()
		return testsandbox.Post(t, client, ts.URL+path, body)
	}
	exec := func(worker, action string, params map[string]any) (int, testsandbox.Envelope) {
		return post("/api/v1/execute", map[string]any{"worker_id": worker, "action": action, "params": params})
	}

	if st, env := post("/api/v1/session/create", map[string]any{"worker_id": "w1", "resource_type": "browser"}); st != 200 || env.Code != 0 {
		t.Fatalf("create: %d %+v %s", st, env, env.Data)
	}
	steps := []struct {
		action string
		params map[string]any
		want   string
	}{
		{"browser:navigate", map[string]any{"url": site.URL + "/"}, fmt.Sprintf(`{"url":%q,"title":"Greeter","status":200}`, site.URL+"/")},
		{"browser:type", map[string]any{"selector": "#name", "text": "Ada"}, `"typed":"Ada"`},
		{"browser:click", map[string]any{"selector": "#go"}, `"title":"Result"`},
		{"browser:extract", map[string]any{"selector": "#result"}, `"text":"Hello, Ada!"`},
		{"browser:extract", map[string]any{}, `"selector":"body"`},
	}
	for _, s := range steps {
		st, env := exec("w1", s.action, s.params)
		if st != 200 || env.Code != 0 || !strings.Contains(string(env.Data), s.want) {
			t.Fatalf("%s: %d %s %s", s.action, st, env.Message, env.Data)
		}
	}
	st, env := exec("w1", "browser:screenshot", nil)
	var shot struct {
		ImagePath string `json:"image_path"`
		Size      []int  `json:"size"`
		Image     []byte `json:"image"`
	}
	if st != 200 || json.Unmarshal(env.Data, &shot) != nil || len(shot.Size) != 2 || shot.Size[0] != 1280 {
		t.Fatalf("screenshot: %d %+v", st, env)
	}
	png, err := os.ReadFile(shot.ImagePath)
	if err != nil || !bytes.Equal(png, shot.Image) {
		t.Fatalf("screenshot file %s: %v (inline %d bytes, file %d)", shot.ImagePath, err, len(shot.Image), len(png))
	}
	workspace := filepath.Dir(filepath.Dir(shot.ImagePath))
	profile := filepath.Join(workspace, ".chromium-profile")
	if len(chromiumProcesses(profile)) == 0 {
		t.Fatal("no chromium process for the session's profile")
	}

	for _, bad := range []struct {
		action string
		params map[string]any
		code   int
	}{
		{"browser:navigate", map[string]any{"url": "file:///etc/passwd"}, 4000},
		{"browser:navigate", map[string]any{}, 4003},
		{"browser:click", map[string]any{"selector": 7}, 4004},
	} {
		if st, env := exec("w1", bad.action, bad.params); st != 400 || env.Code != bad.code {
			t.Fatalf("%s %v: %d %+v", bad.action, bad.params, st, env)
		}
	}

	if st, env := post("/api/v1/session/destroy", map[string]any{"worker_id": "w1", "resource_type": "browser"}); st != 200 || env.Code != 0 {
		t.Fatalf("destroy: %d %+v", st, env)
	}
	if pids := chromiumProcesses(profile); len(pids) != 0 {
		t.Fatalf("chromium survives destroy: %v", pids)
	}

	// A session left open is killed by the service's Close.
	if st, env := post("/api/v1/session/create", map[string]any{"worker_id": "w2", "resource_type": "browser"}); st != 200 || env.Code != 0 {
		t.Fatalf("create w2: %d %+v", st, env)
	}
	st, env = exec("w2", "browser:screenshot", nil)
	if st != 200 || json.Unmarshal(env.Data, &shot) != nil {
		t.Fatalf("screenshot w2: %d %+v", st, env)
	}
	profile2 := filepath.Join(filepath.Dir(filepath.Dir(shot.ImagePath)), ".chromium-profile")
	if len(chromiumProcesses(profile2)) == 0 {
		t.Fatal("no chromium for w2")
	}
	closed = true
	if err := svc.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if pids := chromiumProcesses(profile2); len(pids) != 0 {
		t.Fatalf("chromium survives Close: %v", pids)
	}
}

// TestOwnAPIOutOfReach: with the default config, a browser session of a
// sandbox served over HTTP cannot load the sandbox's own API (on
// loopback): 4001 naming the host, over the real wire.
func TestOwnAPIOutOfReach(t *testing.T) {
	needChromium(t)
	svc := testsandbox.Open(t, `{"resources": {"browser": {"enabled": true, "config": {"action_timeout_s": 10}}}}`, nil)
	url := testsandbox.Serve(t, svc, configs.Server{Addr: "127.0.0.1:0", DataDir: t.TempDir()})
	status, env := testsandbox.Post(t, &http.Client{Timeout: 60 * time.Second}, url+"/api/v1/execute",
		map[string]any{"worker_id": "w", "action": "browser:navigate", "params": map[string]any{"url": url + "/api/v1/sessions"}})
	if status != 400 || env.Code != sandbox.CodeBusinessFailure || !strings.Contains(env.Message, "127.0.0.1") || !strings.Contains(env.Message, "loopback") {
		t.Fatalf("navigate to the sandbox's own API = %d %d %s, want 4001 naming 127.0.0.1 loopback", status, env.Code, env.Message)
	}
}
