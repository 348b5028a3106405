package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit/testsandbox"
	"github.com/flockrun/flock/sandbox"
	_ "github.com/flockrun/flock/sandbox/bashbox"
)

// probe is a test backend: probe:echo (stateless), probe:count (stateful,
// counting calls in the session state, tracking overlap), probe:sleep.
type probe struct {
	active, maxActive atomic.Int32
}

var theProbe = &probe{}

func init() {
	sandbox.RegisterBackend(sandbox.BackendInfo{Name: "probe", New: func() sandbox.Backend { return theProbe }})
}

func (p *probe) Initialize(_ context.Context, s *sandbox.Session, cfg map[string]any) (any, error) {
	if cfg["fail"] == true {
		return nil, fmt.Errorf("asked to fail")
	}
	return new(int), nil
}

func (p *probe) Tools() []sandbox.Tool {
	return []sandbox.Tool{
		{Name: "probe:echo", Stateless: true, Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}`),
			Run: func(_ context.Context, c *sandbox.Call) (any, error) {
				x, err := c.String("x")
				return map[string]any{"x": x, "worker": c.WorkerID, "session": c.Session != nil}, err
			}},
		{Name: "probe:count", Run: func(_ context.Context, c *sandbox.Call) (any, error) {
			if n := p.active.Add(1); n > p.maxActive.Load() {
				p.maxActive.Store(n)
			}
			defer p.active.Add(-1)
			n := c.Session.State.(*int)
			v := *n
			time.Sleep(time.Millisecond) // widen a race window if calls overlapped
			*n = v + 1
			return map[string]any{"n": *n, "worker": c.WorkerID, "session": c.Session.ID}, nil
		}},
		{Name: "probe:fail", Stateless: true, Run: func(context.Context, *sandbox.Call) (any, error) {
			return nil, sandbox.Errorf(sandbox.CodeInvalidInput, "bad input")
		}},
	}
}

type env struct {
	url, token string
	svc        *sandbox.Service
}

func newEnv(t testing.TB, token string, cfgJSON string) *env {
	t.Helper()
	svc := testsandbox.Open(t, cfgJSON, nil)
	url := testsandbox.Serve(t, svc, configs.Server{Addr: "127.0.0.1:0", AuthToken: token})
	return &env{url: url, token: token, svc: svc}
}

const baseCfg = `{"server":{"session_ttl":300,"cleanup_interval":1},"resources":{"bash":{"enabled":true},"probe":{"enabled":true}}}`

type answer struct {
	status int
	body   map[string]any
}

func (a answer) code() int {
	c, _ := a.body["code"].(float64)
	return int(c)
}

func (a answer) data() map[string]any { d, _ := a.body["data"].(map[string]any); return d }

func (e *env) do(t testing.TB, method, path string, body any) answer {
	t.Helper()
	var r io.Reader
	if s, ok := body.(string); ok {
		r = strings.NewReader(s)
	} else if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.url+path, r)
	req.Header.Set("Content-Type", "application/json")
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		t.Fatalf("%s %s: status %d, body not JSON: %q", method, path, resp.StatusCode, raw)
	}
	return a
}

func TestRoutesAndCodes(t *testing.T) {
	e := newEnv(t, "", baseCfg)
	w := map[string]any{"worker_id": "w1"}
	tests := []struct {
		name         string
		method, path string
		body         any
		status, code int
	}{
		{"health", "GET", "/health", nil, 200, 0},
		{"execute stateless", "POST", "/api/v1/execute", map[string]any{"worker_id": "w1", "action": "probe:echo", "params": map[string]any{"x": "a"}}, 200, 0},
		{"execute bare name", "POST", "/api/v1/execute", map[string]any{"worker_id": "w1", "action": "echo", "params": map[string]any{"x": "a"}}, 200, 0},
		{"execute dash name", "POST", "/api/v1/execute", map[string]any{"worker_id": "w1", "action": "probe-echo", "params": map[string]any{"x": "a"}}, 200, 0},
		{"missing param", "POST", "/api/v1/execute", map[string]any{"worker_id": "w1", "action": "probe:echo"}, 400, 4003},
		{"unknown tool", "POST", "/api/v1/execute", map[string]any{"worker_id": "w1", "action": "probe:nope"}, 400, 4002},
		{"tool input error", "POST", "/api/v1/execute", map[string]any{"worker_id": "w1", "action": "probe:fail"}, 400, 4000},
		{"missing worker", "POST", "/api/v1/execute", map[string]any{"action": "probe:echo"}, 400, 4002},
		{"bad json", "POST", "/api/v1/execute", "{nope", 400, 4002},
		{"bad params type", "POST", "/api/v1/execute", map[string]any{"worker_id": "w1", "action": "probe:echo", "params": 3}, 400, 4002},
		{"batch empty", "POST", "/api/v1/execute/batch", map[string]any{"worker_id": "w1", "actions": []any{}}, 200, 0},
		{"batch partial", "POST", "/api/v1/execute/batch", map[string]any{"worker_id": "w1", "stop_on_error": false, "actions": []any{
			map[string]any{"action": "probe:echo", "params": map[string]any{"x": "1"}}, map[string]any{"action": "probe:fail"}}}, 207, 5010},
		{"batch all failed", "POST", "/api/v1/execute/batch", map[string]any{"worker_id": "w1", "parallel": true, "actions": []any{
			map[string]any{"action": "probe:fail"}, map[string]any{"action": "probe:fail"}}}, 500, 5009},
		{"batch missing actions", "POST", "/api/v1/execute/batch", w, 400, 4002},
		{"create", "POST", "/api/v1/session/create", map[string]any{"worker_id": "w1", "resource_type": "probe", "custom_name": "my run"}, 200, 0},
		{"create exists", "POST", "/api/v1/session/create", map[string]any{"worker_id": "w1", "resource_type": "probe"}, 200, 0},
		{"create failing init", "POST", "/api/v1/session/create", map[string]any{"worker_id": "w2", "resource_type": "probe", "session_config": map[string]any{"fail": true}}, 500, 4007},
		{"create no type", "POST", "/api/v1/session/create", w, 400, 4002},
		{"list", "POST", "/api/v1/session/list", w, 200, 0},
		{"refresh one", "POST", "/api/v1/session/refresh", map[string]any{"worker_id": "w1", "resource_type": "probe"}, 200, 0},
		{"refresh all", "POST", "/api/v1/session/refresh", w, 200, 0},
		{"refresh none", "POST", "/api/v1/session/refresh", map[string]any{"worker_id": "w9"}, 404, 4007},
		{"heartbeat", "POST", "/api/v1/lifecycle/heartbeat", w, 200, 0},
		{"status", "POST", "/api/v1/lifecycle/status", w, 200, 0},
		{"init resource", "POST", "/api/v1/init/resource", map[string]any{"worker_id": "w3", "resource_type": "probe"}, 200, 0},
		{"init batch partial", "POST", "/api/v1/init/batch", map[string]any{"worker_id": "w4", "resource_configs": map[string]any{
			"probe": map[string]any{"content": map[string]any{"fail": true}}, "other": map[string]any{}}}, 207, 5010},
		{"destroy", "POST", "/api/v1/session/destroy", map[string]any{"worker_id": "w1", "resource_type": "probe"}, 200, 0},
		{"destroy none", "POST", "/api/v1/session/destroy", map[string]any{"worker_id": "w1", "resource_type": "probe"}, 404, 4007},
		{"disconnect", "POST", "/api/v1/worker/disconnect", map[string]any{"worker_id": "w3"}, 200, 0},
		{"disconnect no worker", "POST", "/api/v1/worker/disconnect", map[string]any{}, 400, 4002},
		{"no from-config", "POST", "/api/v1/init/from-config", map[string]any{"worker_id": "w1", "config_path": "/etc/passwd"}, 404, 4002},
		{"schema unknown", "GET", "/api/v1/tools/nope/schema", nil, 404, 4002},
		{"wrong method", "GET", "/api/v1/execute", nil, 405, 4002},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := e.do(t, tt.method, tt.path, tt.body)
			if a.status != tt.status || (tt.path != "/health" && a.code() != tt.code) {
				t.Fatalf("status %d code %d, want %d %d: %v", a.status, a.code(), tt.status, tt.code, a.body)
			}
			if tt.path != "/health" {
				if _, ok := a.body["meta"]; !ok {
					t.Fatalf("no envelope: %v", a.body)
				}
			}
		})
	}
	// trace_id is echoed; meta.tool is the full name.
	a := e.do(t, "POST", "/api/v1/execute", map[string]any{"worker_id": "w1", "action": "echo", "params": map[string]any{"x": "a"}, "trace_id": "my-trace"})
	meta := a.body["meta"].(map[string]any)
	if meta["trace_id"] != "my-trace" || meta["tool"] != "probe:echo" || a.data()["session"] != false {
		t.Fatalf("meta %v data %v", meta, a.data())
	}
	// A failed initialisation does not stick.
	a = e.do(t, "POST", "/api/v1/session/create", map[string]any{"worker_id": "w2", "resource_type": "probe"})
	if a.code() != 0 || a.data()["session_status"] != "active" {
		t.Fatalf("create after a failed init: %v", a.body)
	}
	// Session naming.
	a = e.do(t, "POST", "/api/v1/session/create", map[string]any{"worker_id": "../x y", "resource_type": "probe", "custom_name": "c/1"})
	if name := a.data()["session_name"]; name != "probe_x-y_001_c-1" {
		t.Fatalf("session_name %v", name)
	}
	// Tools carry JSON-Schema parameters; the schema route resolves bare names.
	a = e.do(t, "GET", "/api/v1/tools?include_hidden=False", nil)
	if a.status != 200 || a.body["count"].(float64) < 4 {
		t.Fatalf("tools %v", a.body)
	}
	for _, tool := range a.body["tools"].([]any) {
		if p, _ := tool.(map[string]any)["parameters"].(map[string]any); p["type"] != "object" {
			t.Fatalf("tool without schema: %v", tool)
		}
	}
	a = e.do(t, "GET", "/api/v1/tools/echo/schema", nil)
	if a.body["full_name"] != "probe:echo" {
		t.Fatalf("schema %v", a.body)
	}
	for _, p := range []string{"/ready", "/api/v1/warmup/status"} {
		if a := e.do(t, "GET", p, nil); a.status != 200 {
			t.Fatalf("%s: %d", p, a.status)
		}
	}
	if a := e.do(t, "POST", "/api/v1/warmup", map[string]any{"backends": nil}); a.body["status"] != "success" {
		t.Fatalf("warmup %v", a.body)
	}
}

// TestAuthToken: with a token every route needs it, but /health (as
// flock sandbox --help says; AgentFlow's client probes it before anything).
func TestAuthToken(t *testing.T) {
	const token = "0123456789abcdef-sandbox"
	e := newEnv(t, token, baseCfg)
	noTok := *e
	noTok.token = ""
	if a := noTok.do(t, "GET", "/health", nil); a.status != 200 || a.body["status"] != "healthy" {
		t.Fatalf("/health without token: %d %v", a.status, a.body)
	}
	for _, p := range []string{"/ready", "/api/v1/tools", "/api/v1/warmup/status"} {
		if a := noTok.do(t, "GET", p, nil); a.status != 401 || a.code() == 0 {
			t.Fatalf("%s without token: %d %v", p, a.status, a.body)
		}
	}
	if a := noTok.do(t, "POST", "/api/v1/session/list", map[string]any{"worker_id": "w"}); a.status != 401 {
		t.Fatalf("list without token: %d", a.status)
	}
	if a := e.do(t, "POST", "/api/v1/session/list", map[string]any{"worker_id": "w"}); a.status != 200 {
		t.Fatalf("list with token: %d", a.status)
	}
}

// TestBashSession: cwd, env and files persist in a session; a timeout is
// 5006 and leaves it usable; destroy removes the workspace; a stateless
// temporary session shares nothing.
func TestBashSession(t *testing.T) {
	e := newEnv(t, "", baseCfg)
	run := func(cmd string, timeout any) answer {
		return e.do(t, "POST", "/api/v1/execute", map[string]any{"worker_id": "b", "action": "bash:run", "params": map[string]any{"command": cmd}, "timeout": timeout})
	}
	e.do(t, "POST", "/api/v1/session/create", map[string]any{"worker_id": "b", "resource_type": "bash"})
	if a := run("mkdir d && cd d && export V=7 && echo hi > f; sh -c 'exit 3'", nil); a.code() != 0 || a.data()["return_code"].(float64) != 3 {
		t.Fatalf("run: %v", a.body)
	}
	a := run("echo $V; cat f", nil)
	if a.data()["stdout"] != "7\nhi\n" || !strings.HasSuffix(a.data()["cwd"].(string), "/d") {
		t.Fatalf("state lost: %v", a.body)
	}
	ws := strings.TrimSuffix(a.data()["cwd"].(string), "/d")
	if a := run("sleep 30", 0.5); a.status != 500 || a.code() != sandbox.CodeTimeout {
		t.Fatalf("timeout: %d %v", a.status, a.body)
	}
	if a := run("cat f; pwd", nil); a.code() != 0 || !strings.HasPrefix(a.data()["stdout"].(string), "hi\n") {
		t.Fatalf("after timeout: %v", a.body)
	}
	other := e.do(t, "POST", "/api/v1/execute", map[string]any{"worker_id": "other", "action": "bash:run", "params": map[string]any{"command": "echo \"[$V]\"; ls " + ws + "/d/f 2>/dev/null; pwd"}})
	if other.data()["stdout"].(string)[:3] != "[]\n" || other.body["meta"].(map[string]any)["temporary_session"] != true {
		t.Fatalf("leak into another worker: %v", other.body)
	}
	e.do(t, "POST", "/api/v1/session/destroy", map[string]any{"worker_id": "b", "resource_type": "bash"})
	if _, err := statDir(ws); err == nil {
		t.Fatalf("workspace %s survives destroy", ws)
	}
}

// TestParallelWorkers: 100 workers, each with its own session, in parallel;
// every worker sees only its own counts; calls on one session never overlap.
func TestParallelWorkers(t *testing.T) {
	e := newEnv(t, "", baseCfg)
	const workers, calls = 100, 5
	var wg sync.WaitGroup
	errs := make(chan string, workers*calls)
	for i := range workers {
		wg.Go(func() {
			w := fmt.Sprintf("w%03d", i)
			e.do(t, "POST", "/api/v1/session/create", map[string]any{"worker_id": w, "resource_type": "probe"})
			var sid string
			for j := 1; j <= calls; j++ {
				a := e.do(t, "POST", "/api/v1/execute", map[string]any{"worker_id": w, "action": "probe:count"})
				d := a.data()
				if d["worker"] != w || int(d["n"].(float64)) != j || (sid != "" && d["session"] != sid) {
					errs <- fmt.Sprintf("%s call %d: %v", w, j, d)
				}
				sid, _ = d["session"].(string)
			}
		})
	}
	wg.Wait()
	close(errs)
	for m := range errs {
		t.Error(m)
	}
	// One session, 50 parallel calls: serialised, none lost.
	theProbe.maxActive.Store(0)
	e.do(t, "POST", "/api/v1/session/create", map[string]any{"worker_id": "shared", "resource_type": "probe"})
	for range 50 {
		wg.Go(func() {
			e.do(t, "POST", "/api/v1/execute", map[string]any{"worker_id": "shared", "action": "probe:count"})
		})
	}
	wg.Wait()
	a := e.do(t, "POST", "/api/v1/execute", map[string]any{"worker_id": "shared", "action": "probe:count"})
	if n := a.data()["n"].(float64); n != 51 {
		t.Fatalf("count %v after 51 serialised calls", n)
	}
	if m := theProbe.maxActive.Load(); m != 1 {
		t.Fatalf("%d calls overlapped on one session", m)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"worker_id":"w","action":"echo","params":{"x":"a"}}`, `{"worker_id":1}`, `[]`, `null`, `{"worker_id":"w","actions":[1]}`, `{"worker_id":"w","timeout":-1,"action":"x"}`} {
		f.Add(s)
	}
	e := newEnv(f, "", baseCfg)
	f.Fuzz(func(t *testing.T, body string) {
		for _, p := range []string{"/api/v1/execute", "/api/v1/execute/batch", "/api/v1/session/create", "/api/v1/init/batch"} {
			a := e.do(t, "POST", p, body)
			if a.status >= 500 && a.code() != 5009 && a.code() != 4007 && a.code() != 5000 {
				t.Fatalf("%s %q: %d %v", p, body, a.status, a.body)
			}
		}
	})
}
