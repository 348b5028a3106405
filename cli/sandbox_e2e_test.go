package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/internal/testkit"
)

// TestSandboxAgentFlowClient drives `flock sandbox` with AgentFlow's own
// Python client, unmodified: start, create_session, bash:run twice (cwd
// persists), list_tools, destroy, close.
func TestSandboxAgentFlowClient(t *testing.T) {
	client, _ := filepath.Abs("../../shared/reference/agentflow-client")
	if _, err := os.Stat(client); err != nil {
		client = "/work/shared/reference/agentflow-client"
	}
	py := ""
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import httpx, pydantic").Run() == nil {
			py = p
			break
		}
	}
	if py == "" {
		t.Skip("python3 cannot import httpx and pydantic")
	}
	if _, err := os.Stat(filepath.Join(client, "sandbox", "client.py")); err != nil {
		t.Skip("AgentFlow client not found")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sandbox.json")
	os.WriteFile(cfg, []byte(`{"server":{"session_ttl":300,"cleanup_interval":60},"resources":{"bash":{"enabled":true,"config":{}}}}`), 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	out, errb := &testkit.Buffer{}, &testkit.Buffer{}
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"sandbox", "--config", cfg, "--addr", "127.0.0.1:0", "--data", dir}, out, errb)
	}()
	t.Cleanup(func() { cancel(); <-done })
	url := listening(t, out, errb, done)
	script := `
import asyncio, sys
from sandbox.client import HTTPServiceClient
async def main():
    c = HTTPServiceClient(base_url=sys.argv[1], worker_id="main_runner")
    await c.connect()
    r = await c.create_session("bash", {})
    assert r["code"] == 0 and r["data"]["session_status"] == "active", r
    r = await c.execute("bash:run", {"command": "mkdir -p sub && cd sub"})
    assert r["code"] == 0, r
    r = await c.execute("bash:run", {"command": "pwd"})
    assert r["code"] == 0 and r["data"]["stdout"].strip().endswith("/sub") and r["data"]["cwd"].endswith("/sub"), r
    assert r["meta"]["tool"] == "bash:run", r
    tools = await c.list_tools()
    assert any(t["full_name"] == "bash:run" for t in tools), tools
    r = await c.destroy_session("bash")
    assert r["code"] == 0, r
    await c.close()
    print("OK")
asyncio.run(main())
`
	cmd := exec.Command(py, "-c", script, url)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+client)
	got, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(got), "OK") {
		t.Fatalf("AgentFlow client: %v\n%s", err, got)
	}
}

// TestSandboxConfigWarnings: `flock sandbox` starts on a config with a
// mistyped key, in the file and in a backend's section, and logs each with
// the closest known key.
func TestSandboxConfigWarnings(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sandbox.json")
	doc := `{"server":{"sesion_ttl":300},"resources":{"bash":{"enabled":true,"description":"AgentFlow's","config":{"timout":5}}}}`
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out, errb := &testkit.Buffer{}, &testkit.Buffer{}
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"sandbox", "--config", cfg, "--addr", "127.0.0.1:0", "--data", dir}, out, errb)
	}()
	t.Cleanup(func() { cancel(); <-done })
	listening(t, out, errb, done)
	for _, want := range []string{
		`server.sesion_ttl`, `did you mean`, `server.session_ttl`,
		`resources.bash.config.timout`, `resources.bash.config.timeout`,
	} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb)
		}
	}
	if strings.Contains(errb.String(), "description") {
		t.Errorf("AgentFlow's description key warned of:\n%s", errb)
	}
}
