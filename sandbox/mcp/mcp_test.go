package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/sandbox/mcp/internal/testserver"
)

func TestMain(m *testing.M) {
	testserver.Main() // returns unless this process was started as a test MCP server
	os.Exit(m.Run())
}

// testServer is the config of one test MCP server (this test binary in server mode).
func testServer(t testing.TB, mode string, env map[string]any) map[string]any {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// GORACE: a race-enabled binary otherwise sleeps 1 s at exit.
	e := map[string]any{testserver.ModeVar: mode, "GORACE": "atexit_sleep_ms=0"}
	for k, v := range env {
		e[k] = v
	}
	return map[string]any{"command": exe, "env": e}
}

func provisioned(t testing.TB, raw map[string]any) *Backend {
	t.Helper()
	b := &Backend{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.provision(ctx, raw, t.TempDir(), nil); err != nil {
		t.Fatalf("provision: %v", err)
	}
	return b
}

func oneServer(t testing.TB) *Backend {
	return provisioned(t, map[string]any{"servers": map[string]any{"t": testServer(t, "serve", nil)}})
}

func spec(t testing.TB, b *Backend, name string) ToolSpec {
	t.Helper()
	for _, s := range b.tools {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no tool %s", name)
	return ToolSpec{}
}

func started(t testing.TB, b *Backend, workspace string, cfg map[string]any) *sessionState {
	t.Helper()
	st, err := b.start(context.Background(), workspace, cfg)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = st.stop() })
	return st
}

func call(t testing.TB, st *sessionState, s ToolSpec, args map[string]any) (*Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return st.call(ctx, s, args)
}

func TestToolsListedWithSchemas(t *testing.T) {
	b := oneServer(t)
	var names []string
	for _, s := range b.tools {
		names = append(names, s.Name)
	}
	for _, want := range []string{"mcp:t.add", "mcp:t.write_note", "mcp:t.read_note", "mcp:t.crash"} {
		if !strings.Contains(strings.Join(names, ","), want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}
	add := spec(t, b, "mcp:t.add")
	if add.Description != "Add two numbers." || add.Server != "t" || add.Tool != "add" {
		t.Errorf("add spec = %+v", add)
	}
	var schema struct {
		Type       string                    `json:"type"`
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	if err := json.Unmarshal(add.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || schema.Properties["a"]["type"] != "number" || len(schema.Required) != 2 {
		t.Errorf("add schema = %s", add.Parameters)
	}
	// The discovery server ran beneath the data dir and was stopped.
	if _, err := os.Stat(filepath.Join(b.dataDir, "discovery", "t")); err != nil {
		t.Errorf("discovery dir: %v", err)
	}
}

func TestCallResult(t *testing.T) {
	b := oneServer(t)
	st := started(t, b, t.TempDir(), nil)
	res, err := call(t, st, spec(t, b, "mcp:t.add"), map[string]any{"a": 2, "b": 3.5})
	if err != nil {
		t.Fatal(err)
	}
	if sc, _ := res.StructuredContent.(map[string]any); sc["sum"] != 5.5 {
		t.Errorf("structured = %#v", res.StructuredContent)
	}
	if res.Result != `{"sum":5.5}` || len(res.Content) != 1 {
		t.Errorf("result = %q, content %s", res.Result, res.Content)
	}
	var item map[string]any
	if err := json.Unmarshal(res.Content[0], &item); err != nil || item["type"] != "text" {
		t.Errorf("content item = %s (%v)", res.Content[0], err)
	}
}

func TestSessionsSeeOnlyTheirWorkspace(t *testing.T) {
	b := oneServer(t)
	wsA, wsB, wsC := t.TempDir(), t.TempDir(), t.TempDir()
	a, bb, c := started(t, b, wsA, nil), started(t, b, wsB, nil), started(t, b, wsC, nil)
	write, read := spec(t, b, "mcp:t.write_note"), spec(t, b, "mcp:t.read_note")
	if _, err := call(t, a, write, map[string]any{"text": "alpha"}); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, bb, write, map[string]any{"text": "beta"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		st   *sessionState
		ws   string
		want string
	}{{"a", a, wsA, "alpha"}, {"b", bb, wsB, "beta"}} {
		res, err := call(t, tc.st, read, nil)
		if err != nil || res.Result != tc.want {
			t.Errorf("session %s read %v, %v; want %q", tc.name, res, err, tc.want)
		}
		got, err := os.ReadFile(filepath.Join(tc.ws, "note.txt"))
		if err != nil || string(got) != tc.want {
			t.Errorf("session %s workspace file = %q, %v", tc.name, got, err)
		}
	}
	res, err := call(t, c, read, nil)
	if !errors.Is(err, ErrToolFailed) || !strings.Contains(err.Error(), "no note here") {
		t.Errorf("third session read = %v, %v; want a tool error", res, err)
	}
}

func TestStopKillsProcessGroup(t *testing.T) {
	b := oneServer(t)
	st, err := b.start(context.Background(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := call(t, st, spec(t, b, "mcp:t.spawn_child"), nil)
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(res.Result)
	if err != nil {
		t.Fatalf("child pid %q: %v", res.Result, err)
	}
	server := st.conns["t"].pid()
	if !testkit.Alive(server) || !testkit.Alive(child) {
		t.Fatal("server or child not running before stop")
	}
	start := time.Now()
	if err := st.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	t.Logf("stop took %v", time.Since(start))
	testkit.WaitFor(t, "server and child to exit", func() bool { return !testkit.Alive(server) && !testkit.Alive(child) })
	if _, err := call(t, st, spec(t, b, "mcp:t.add"), map[string]any{"a": 1, "b": 1}); !errors.Is(err, ErrClosed) {
		t.Errorf("call after stop = %v, want ErrClosed", err)
	}
	if err := st.stop(); err != nil {
		t.Errorf("second stop: %v", err)
	}
}

func TestCrashingServer(t *testing.T) {
	b := oneServer(t)
	st := started(t, b, t.TempDir(), nil)
	pid := st.conns["t"].pid()
	_, err := call(t, st, spec(t, b, "mcp:t.crash"), nil)
	if !errors.Is(err, ErrServerGone) {
		t.Fatalf("crash call = %v, want ErrServerGone", err)
	}
	for _, want := range []string{`mcp server "t"`, "crashing on purpose"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	_, err = call(t, st, spec(t, b, "mcp:t.add"), map[string]any{"a": 1, "b": 1})
	if !errors.Is(err, ErrServerGone) {
		t.Errorf("call after crash = %v, want ErrServerGone", err)
	}
	if err := st.stop(); err != nil {
		t.Errorf("stop after crash: %v", err)
	}
	testkit.WaitFor(t, "crashed server reaped", func() bool { return !testkit.Alive(pid) })
}

func TestServerFailsToStart(t *testing.T) {
	const secret = "s3cr3t-token-value"
	for _, tc := range []struct {
		name   string
		server map[string]any
		want   []string
	}{
		{"exits", testServer(t, "exit", map[string]any{"API_TOKEN": secret}),
			[]string{"resources.mcp.config.servers.broken", `mcp server "broken"`, "refusing to start", "[redacted]"}},
		{"no such command", map[string]any{"command": "/nonexistent/mcp-server", "env": map[string]any{"API_TOKEN": secret}},
			[]string{"resources.mcp.config.servers.broken", "/nonexistent/mcp-server"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &Backend{}
			err := b.provision(context.Background(), map[string]any{"servers": map[string]any{"broken": tc.server}}, t.TempDir(), nil)
			if !errors.Is(err, ErrServerStart) {
				t.Fatalf("provision = %v, want ErrServerStart", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error leaks the server's secret: %q", err)
			}
		})
	}
}

func TestSessionStartFailureStopsStartedServers(t *testing.T) {
	b := provisioned(t, map[string]any{"servers": map[string]any{"a": testServer(t, "serve", nil), "b": testServer(t, "serve", nil)}})
	// Break b after discovery: its sessions fail to start, and a's process must not leak.
	b.cfg.Servers[1].Env[testserver.ModeVar] = "exit"
	before := children(t)
	_, err := b.start(context.Background(), t.TempDir(), nil)
	if !errors.Is(err, ErrServerStart) || !strings.Contains(err.Error(), `mcp server "b"`) {
		t.Fatalf("start = %v, want ErrServerStart naming b", err)
	}
	testkit.WaitFor(t, "no new child processes", func() bool { return children(t) <= before })
}

// children counts the live (non-zombie) child processes of this test process.
func children(t testing.TB) int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	n := 0
	me := strconv.Itoa(os.Getpid())
	for _, d := range dirs {
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == me && f[0] != "Z" {
			n++
		}
	}
	return n
}

func TestServerEnvironment(t *testing.T) {
	t.Setenv("FLOCK_PARENT_API_KEY", "parent-secret")
	b := provisioned(t, map[string]any{"servers": map[string]any{
		"t": testServer(t, "serve", map[string]any{"GREETING": "hi", "WS_FILE": "{workspace}/data"}),
	}})
	ws := t.TempDir()
	st := started(t, b, ws, nil)
	env := spec(t, b, "mcp:t.env")
	for _, tc := range []struct{ name, want string }{
		{"FLOCK_PARENT_API_KEY", ""},
		{"GREETING", "hi"},
		{"HOME", ws},
		{"WS_FILE", ws + "/data"},
		{"PATH", os.Getenv("PATH")},
	} {
		res, err := call(t, st, env, map[string]any{"name": tc.name})
		if err != nil || res.Result != tc.want {
			t.Errorf("server's %s = %v, %v; want %q", tc.name, res, err, tc.want)
		}
	}
}

func TestToolErrorAndUnknownTool(t *testing.T) {
	b := oneServer(t)
	st := started(t, b, t.TempDir(), nil)
	res, err := call(t, st, spec(t, b, "mcp:t.fail"), map[string]any{"message": "the disk is full"})
	if !errors.Is(err, ErrToolFailed) || !strings.Contains(err.Error(), "the disk is full") {
		t.Errorf("fail = %v", err)
	}
	if res == nil || res.Result != "the disk is full" {
		t.Errorf("fail result = %+v", res)
	}
	_, err = call(t, st, ToolSpec{Server: "t", Tool: "nope"}, nil)
	if !errors.Is(err, ErrCall) {
		t.Errorf("unknown tool = %v, want ErrCall", err)
	}
	_, err = call(t, st, ToolSpec{Server: "other", Tool: "add"}, nil)
	if !errors.Is(err, ErrNotEnabled) {
		t.Errorf("unknown server = %v, want ErrNotEnabled", err)
	}
}

func TestSessionSelectsServers(t *testing.T) {
	b := provisioned(t, map[string]any{"servers": map[string]any{"a": testServer(t, "serve", nil), "b": testServer(t, "serve", nil)}})
	st := started(t, b, t.TempDir(), map[string]any{"enabled_mcp_servers": []any{"a"}})
	if _, err := call(t, st, spec(t, b, "mcp:a.add"), map[string]any{"a": 1, "b": 2}); err != nil {
		t.Errorf("a.add: %v", err)
	}
	if _, err := call(t, st, spec(t, b, "mcp:b.add"), map[string]any{"a": 1, "b": 2}); !errors.Is(err, ErrNotEnabled) {
		t.Errorf("b.add = %v, want ErrNotEnabled", err)
	}
	if _, err := b.start(context.Background(), t.TempDir(), map[string]any{"enabled_mcp_servers": []any{"zzz"}}); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("unknown server in session_config = %v", err)
	}
}
