package agent

import (
	"strings"
	"testing"
)

func TestSandboxToolNames(t *testing.T) {
	for name, want := range map[string]string{"text2sql:execute": "text2sql-execute", "mcp:fs.read_file": "mcp-fs_read_file", "bash:run": "bash-run"} {
		if got := ModelName(name); got != want {
			t.Errorf("ModelName(%q) = %q, want %q", name, got, want)
		}
	}
	m, err := SandboxNames([]string{"bash", "text2sql:execute", "rag:search", "submit"})
	if err != nil || len(m) != 2 || m["text2sql-execute"] != "text2sql:execute" || m["rag-search"] != "rag:search" {
		t.Fatalf("SandboxNames = %v, %v", m, err)
	}
	if _, err := SandboxNames([]string{"mcp:a.b", "mcp:a_b"}); err == nil || !strings.Contains(err.Error(), "mcp-a_b") {
		t.Fatalf("colliding names: %v, want an error naming the model name", err)
	}
	if IsSandboxTool(":x") || IsSandboxTool("x:") || IsSandboxTool("bash") || !IsSandboxTool("a:b") {
		t.Fatal("IsSandboxTool")
	}
	if _, err := SandboxCall("rag:search", "[1]", 0); err == nil {
		t.Fatal("SandboxCall accepted an array")
	}
	req, err := SandboxCall("rag:search", ` {"query": "x"} `, 5)
	if err != nil || string(req.Sandbox.Params) != `{"query":"x"}` || req.Sandbox.TimeoutS != 5 {
		t.Fatalf("SandboxCall = %+v, %v", req.Sandbox, err)
	}
}
