package mcp

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/sandbox"
	"github.com/flockrun/flock/sandbox/mcp/internal/testserver"
)

// contractBackend provisions the registered "mcp" backend as the sandbox core does.
func contractBackend(t testing.TB, cfg map[string]any) *Backend {
	t.Helper()
	info, ok := sandbox.LookupBackend("mcp")
	if !ok {
		t.Fatal("mcp backend not registered")
	}
	b := info.New().(*Backend)
	if err := b.Provision(context.Background(), sandbox.Env{Config: cfg, DataDir: t.TempDir()}); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	t.Cleanup(func() { _ = b.Shutdown(context.Background()) })
	return b
}

func contractTool(t testing.TB, b *Backend, name string) sandbox.Tool {
	t.Helper()
	for _, tool := range b.Tools() {
		if tool.Name == name {
			return tool
		}
	}
	t.Fatalf("no tool %s", name)
	return sandbox.Tool{}
}

func codeOf(err error) int {
	var se *sandbox.Error
	if errors.As(err, &se) {
		return se.Code
	}
	return -1
}

func TestContractCodes(t *testing.T) {
	b := contractBackend(t, map[string]any{"servers": map[string]any{"t": testServer(t, "serve", nil), "u": testServer(t, "serve", nil)}})
	s := &sandbox.Session{ID: "s1", ResourceType: "mcp", Workspace: t.TempDir()}
	state, err := b.Initialize(context.Background(), s, map[string]any{"enabled_mcp_servers": []any{"t"}})
	if err != nil {
		t.Fatal(err)
	}
	s.State = state
	run := func(name string, params map[string]any) (any, error) {
		return contractTool(t, b, name).Run(context.Background(), &sandbox.Call{Params: params, Session: s})
	}
	data, err := run("mcp:t.add", map[string]any{"a": 1.0, "b": 2.0})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := data.(*Result); !ok || r.Result != `{"sum":3}` {
		t.Errorf("add data = %#v", data)
	}
	for _, tc := range []struct {
		name   string
		tool   string
		params map[string]any
		code   int
		text   string
	}{
		{"tool error", "mcp:t.fail", map[string]any{"message": "boom"}, sandbox.CodeExecutionError, "boom"},
		{"server not in session", "mcp:u.add", map[string]any{"a": 1.0, "b": 2.0}, sandbox.CodeBackendNotInitialized, `mcp server "u"`},
		// The go-sdk's server answers bad arguments as a tool error (isError).
		{"arguments rejected by the server", "mcp:t.add", map[string]any{"a": "x"}, sandbox.CodeExecutionError, `tool "add"`},
		{"crash", "mcp:t.crash", nil, sandbox.CodeDependencyFailure, "crashing on purpose"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run(tc.tool, tc.params)
			if codeOf(err) != tc.code || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("err = %v, want code %d with %q", err, tc.code, tc.text)
			}
		})
	}
	// The crash above ran last: the server stays gone.
	if _, err := run("mcp:t.fail", map[string]any{"message": "x"}); codeOf(err) != sandbox.CodeDependencyFailure {
		t.Errorf("after crash = %v, want 5012", err)
	}
	// A JSON-RPC error (a tool the server does not have) is a dependency failure.
	_, err = b.run(context.Background(), ToolSpec{Name: "mcp:t.nope", Server: "t", Tool: "nope"}, &sandbox.Call{Session: s2(t, b)})
	if codeOf(err) != sandbox.CodeDependencyFailure || !strings.Contains(err.Error(), `tool "nope"`) {
		t.Errorf("unknown tool = %v, want 5012", err)
	}
	if err := b.Cleanup(context.Background(), s); err != nil {
		t.Errorf("Cleanup: %v", err)
	}
	if _, err := run("mcp:t.add", map[string]any{"a": 1.0, "b": 2.0}); codeOf(err) != sandbox.CodeResourceNotInitialized {
		t.Errorf("after cleanup = %v, want 4007", err)
	}
}

// s2 is a fresh session with every server.
func s2(t testing.TB, b *Backend) *sandbox.Session {
	t.Helper()
	s := &sandbox.Session{ID: "s2", ResourceType: "mcp", Workspace: t.TempDir()}
	state, err := b.Initialize(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.State = state
	t.Cleanup(func() { _ = b.Cleanup(context.Background(), s) })
	return s
}

func TestContractInitializeErrors(t *testing.T) {
	b := contractBackend(t, map[string]any{"servers": map[string]any{"t": testServer(t, "serve", map[string]any{"API_KEY": "k-123456"})}})
	s := &sandbox.Session{ID: "s", Workspace: t.TempDir()}
	if _, err := b.Initialize(context.Background(), s, map[string]any{"enabled_mcp_servers": "t"}); codeOf(err) != sandbox.CodeInvalidInput {
		t.Errorf("bad session_config = %v, want 4000", err)
	}
	b.cfg.Servers[0].Env[testserver.ModeVar] = "exit"
	_, err := b.Initialize(context.Background(), s, nil)
	if codeOf(err) != sandbox.CodeBackendNotInitialized || !strings.Contains(err.Error(), `mcp server "t"`) {
		t.Errorf("failed start = %v, want 5011 naming the server", err)
	}
	if strings.Contains(err.Error(), "k-123456") || !strings.Contains(err.Error(), "API_KEY=[redacted]") {
		t.Errorf("the server's key is not redacted: %v", err)
	}
}

func TestContractProvisionError(t *testing.T) {
	b := &Backend{}
	err := b.Provision(context.Background(), sandbox.Env{Config: map[string]any{"servers": map[string]any{"x": map[string]any{}}}, DataDir: t.TempDir()})
	if err == nil || !strings.HasPrefix(err.Error(), "resources.mcp.config.servers.x.command") {
		t.Errorf("Provision = %v", err)
	}
}

func TestContractTimeoutLeavesSessionUsable(t *testing.T) {
	b := contractBackend(t, map[string]any{"servers": map[string]any{"t": testServer(t, "serve", nil)}})
	s := s2(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := contractTool(t, b, "mcp:t.hang").Run(ctx, &sandbox.Call{Params: map[string]any{}, Session: s})
	if codeOf(err) != sandbox.CodeTimeout {
		t.Fatalf("hang = %v, want 5006", err)
	}
	data, err := contractTool(t, b, "mcp:t.add").Run(context.Background(), &sandbox.Call{Params: map[string]any{"a": 2.0, "b": 2.0}, Session: s})
	if err != nil || data.(*Result).Result != `{"sum":4}` {
		t.Errorf("add after timeout = %v, %v", data, err)
	}
}
