package mcp

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/internal/testkit/testsandbox"
	"github.com/flockrun/flock/sandbox"
)

// newHTTP starts a sandbox service whose only backend is mcp with the given servers, served
// alone (as `flock sandbox` does) on a real listener.
func newHTTP(t testing.TB, servers map[string]any) (string, *sandbox.Service) {
	t.Helper()
	doc, err := json.Marshal(map[string]any{"resources": map[string]any{"mcp": map[string]any{"config": map[string]any{"servers": servers}}}})
	if err != nil {
		t.Fatal(err)
	}
	svc := testsandbox.Open(t, string(doc), nil)
	return testsandbox.Serve(t, svc, configs.Server{Addr: "127.0.0.1:0", DataDir: t.TempDir()}), svc
}

func postJSON(t testing.TB, url, path string, body any) (int, testsandbox.Envelope) {
	t.Helper()
	return testsandbox.Post(t, nil, url+path, body)
}

func execHTTP(t testing.TB, url, worker, action string, params map[string]any) (int, testsandbox.Envelope, Result) {
	t.Helper()
	status, env := postJSON(t, url, "/api/v1/execute", map[string]any{"worker_id": worker, "action": action, "params": params})
	var r Result
	if env.Code == 0 || env.Code == sandbox.CodeExecutionError {
		if err := json.Unmarshal(env.Data, &r); err != nil {
			t.Fatalf("%s data %s: %v", action, env.Data, err)
		}
	}
	return status, env, r
}

// TestHTTP drives the backend through the sandbox service over real HTTP: the tools and
// their schemas at /api/v1/tools, two workers' sessions each with their own server and
// workspace, AgentFlow's codes and statuses, and destroy killing the server's process
// group.
func TestHTTP(t *testing.T) {
	url, _ := newHTTP(t, map[string]any{"t": testServer(t, "serve", nil)})

	resp, err := http.Get(url + "/api/v1/tools")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Tools []sandbox.ToolInfo `json:"tools"`
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var add *sandbox.ToolInfo
	for i, ti := range list.Tools {
		if ti.FullName == "mcp:t.add" || ti.Name == "mcp:t.add" {
			add = &list.Tools[i]
		}
	}
	if add == nil || add.ResourceType != "mcp" || add.Stateless || !strings.Contains(string(add.Parameters), `"required":["a","b"]`) {
		t.Fatalf("mcp:t.add in /api/v1/tools = %+v (of %d tools)", add, len(list.Tools))
	}

	for _, w := range []string{"w1", "w2"} {
		status, env := postJSON(t, url, "/api/v1/session/create", map[string]any{"worker_id": w, "resource_type": "mcp"})
		if status != 200 || env.Code != 0 {
			t.Fatalf("create %s: %d %+v", w, status, env)
		}
		if _, env, _ := execHTTP(t, url, w, "mcp:t.write_note", map[string]any{"text": "note of " + w}); env.Code != 0 {
			t.Fatalf("write_note %s: %+v", w, env)
		}
	}
	for _, w := range []string{"w1", "w2"} {
		status, env, r := execHTTP(t, url, w, "mcp:t.read_note", nil)
		if status != 200 || env.Code != 0 || r.Result != "note of "+w || env.Meta.Tool != "mcp:t.read_note" || env.Meta.ResourceType != "mcp" {
			t.Errorf("read_note %s: %d %+v %+v", w, status, env, r)
		}
	}

	status, env, r := execHTTP(t, url, "w1", "mcp:t.add", map[string]any{"a": 40, "b": 2})
	if status != 200 || r.Result != `{"sum":42}` {
		t.Errorf("add: %d %+v %+v", status, env, r)
	}
	status, env, _ = execHTTP(t, url, "w1", "mcp:t.add", map[string]any{"a": 40})
	if status != 400 || env.Code != sandbox.CodeMissingRequiredField || !strings.Contains(env.Message, "b") {
		t.Errorf("add without b: %d %+v", status, env)
	}
	status, env, r = execHTTP(t, url, "w1", "mcp:t.fail", map[string]any{"message": "quota exceeded"})
	if status != 500 || env.Code != sandbox.CodeExecutionError || !strings.Contains(env.Message, "quota exceeded") || r.Result != "quota exceeded" {
		t.Errorf("fail: %d %+v %+v", status, env, r)
	}

	// Destroy kills the server and what it started.
	_, _, r = execHTTP(t, url, "w2", "mcp:t.spawn_child", nil)
	child, err := strconv.Atoi(r.Result)
	if err != nil {
		t.Fatalf("spawn_child: %q", r.Result)
	}
	status, env = postJSON(t, url, "/api/v1/session/destroy", map[string]any{"worker_id": "w2", "resource_type": "mcp"})
	if status != 200 || env.Code != 0 {
		t.Fatalf("destroy: %d %+v", status, env)
	}
	testkit.WaitFor(t, "the child of w2's server to die", func() bool { return !testkit.Alive(child) })

	// A crash answers 5012 naming the server; the worker's other session is unaffected.
	status, env, _ = execHTTP(t, url, "w1", "mcp:t.crash", nil)
	if status != 500 || env.Code != sandbox.CodeDependencyFailure || !strings.Contains(env.Message, `mcp server "t"`) {
		t.Errorf("crash: %d %+v", status, env)
	}
}

// TestHTTPSessionStartFails: a server that does not start in a session fails the
// session's creation, naming the server, and leaves no session behind.
func TestHTTPSessionStartFails(t *testing.T) {
	// The server serves its discovery at start-up, then refuses to start in sessions.
	url, _ := newHTTP(t, map[string]any{"t": testServer(t, "discovery-only", nil), "ok": testServer(t, "serve", nil)})
	for range 2 { // a failed creation does not stick
		status, env := postJSON(t, url, "/api/v1/session/create", map[string]any{"worker_id": "w", "resource_type": "mcp"})
		if status < 400 || env.Code == 0 || !strings.Contains(env.Message, `mcp server "t"`) || !strings.Contains(env.Message, "refusing to start") {
			t.Fatalf("create: %d %+v", status, env)
		}
		t.Logf("create: HTTP %d, code %d: %s", status, env.Code, env.Message)
	}
	status, env := postJSON(t, url, "/api/v1/session/create", map[string]any{"worker_id": "w", "resource_type": "mcp",
		"session_config": map[string]any{"enabled_mcp_servers": []any{"ok"}}})
	if status != 200 || env.Code != 0 {
		t.Fatalf("create with the working server only: %d %+v", status, env)
	}
	status, env, r := execHTTP(t, url, "w", "mcp:ok.add", map[string]any{"a": 1, "b": 1})
	if status != 200 || r.Result != `{"sum":2}` {
		t.Errorf("ok.add: %d %+v", status, env)
	}
	status, env, _ = execHTTP(t, url, "w", "mcp:t.add", map[string]any{"a": 1, "b": 1})
	if status != 500 || env.Code != sandbox.CodeBackendNotInitialized {
		t.Errorf("t.add in a session without t: %d %+v", status, env)
	}
}
