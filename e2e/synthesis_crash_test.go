package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
)

// TestSynthesizeKill9Resumes kills `flock synthesize` (kill -9 of its
// process group) in the middle of a seed's tree and runs the same command
// again: it resumes the same run, and no node whose tool call finished
// before the kill runs again. Each tool call appends its branch to a side
// file; afterwards every branch of the 10-node tree is there, and at most
// the calls in flight at the kill (max_concurrency 2) are there twice.
func TestSynthesizeKill9Resumes(t *testing.T) {
	dir := t.TempDir()
	side := filepath.Join(dir, "executed.txt")
	branches := []string{"0.0", "0.1", "0.0.0", "0.0.1", "0.1.0", "0.1.1", "0.0.0.0", "0.0.1.0", "0.1.0.0", "0.1.1.0"}
	var script bytes.Buffer
	for _, b := range branches {
		line, _ := json.Marshal(map[string]any{"match": "Branch: " + b + "\n", "content": "Mark " + b,
			"tool_calls": []any{map[string]any{"id": "c", "name": "bash-run",
				"arguments": map[string]any{"command": fmt.Sprintf("echo %s >> %s && sleep 0.3 && echo %s", b, side, b)}}}})
		script.Write(append(line, '\n'))
	}
	script.WriteString(`{"match": "## Trajectory", "content": "no question today"}` + "\n")
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("script.jsonl", script.String())
	write("sandbox.json", `{"server": {"session_ttl": 600}, "resources": {"bash": {"enabled": true, "config": {"timeout": 30}}}}`)
	write("seeds.jsonl", `{"content": "A shell to explore."}`+"\n")
	cfg := write("synthesis.yaml", `seeds_file: seeds.jsonl
output_dir: out
sandbox_config_path: sandbox.json
available_tools: ["bash:run"]
model_name: m
models: {m: {provider: scripted, script: `+filepath.Join(dir, "script.jsonl")+`}}
max_depth: 3
branching_factor: 2
depth_threshold: 2
min_depth: 1
max_selected_traj: 1
max_retries: 1
max_concurrency: 2
`)
	data := filepath.Join(dir, "data")
	start := func() (*exec.Cmd, *testkit.Buffer) {
		return startFlock(t, "synthesize", "--config", cfg, "--data", data)
	}
	executed := func() []string {
		b, _ := os.ReadFile(side)
		return strings.Fields(string(b))
	}

	cmd, out := start()
	testkit.WaitWithin(t, 30*time.Second, "three tool calls", func() bool { return len(executed()) >= 3 })
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	atKill := executed()
	if len(atKill) >= len(branches) {
		t.Fatalf("the tree was done before the kill (%d calls): %s", len(atKill), out)
	}
	var id string
	if _, err := fmt.Sscanf(out.String(), "synthesis %s", &id); err != nil {
		t.Fatalf("no run id in %q", out)
	}
	id = strings.TrimSuffix(id, ":")

	cmd, out = start()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("second run: %v\n%s", err, out)
		}
	case <-time.After(60 * time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("second run did not finish:\n%s", out)
	}
	if !strings.Contains(out.String(), "synthesis "+id+": resuming the unfinished run") {
		t.Fatalf("the second run did not resume %s:\n%s", id, out)
	}
	count := map[string]int{}
	for _, b := range executed() {
		count[b]++
	}
	again := 0
	for _, b := range branches {
		switch n := count[b]; {
		case n == 0:
			t.Fatalf("branch %s never ran; executed %v", b, executed())
		case n > 1:
			again += n - 1
		}
	}
	if len(count) != len(branches) || again > 2 {
		t.Fatalf("executed %v: %d calls ran again, at most the 2 in flight at the kill may", executed(), again)
	}
	t.Logf("%d calls before the kill, %d after; %d ran again (in flight at the kill)", len(atKill), len(executed())-len(atKill), again)
	trees, err := os.ReadFile(filepath.Join(dir, "out", "trees.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var tree struct {
		Nodes []struct {
			ID string `json:"node_id"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(trees), &tree); err != nil || len(tree.Nodes) != len(branches)+1 {
		t.Fatalf("trees.jsonl: %d nodes (%v), want %d", len(tree.Nodes), err, len(branches)+1)
	}
	if !strings.Contains(out.String(), "1 done") {
		t.Fatalf("summary:\n%s", out)
	}
}

// TestSynthesisOverHTTP starts the synthesis workflow through POST
// /start_workflow on `flock serve --mode simulated --sandbox-config` (the
// offline fixtures): "text2sql:*" is resolved against the hosted sandbox,
// the simulated model explores and writes grounded QA into output_dir
// (relative: in the run's work directory), and an unknown tool or key is
// refused at start naming it.
func TestSynthesisOverHTTP(t *testing.T) {
	dir := t.TempDir()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	sb := filepath.Join(dir, "sandbox.json")
	if err := os.WriteFile(sb, []byte(fmt.Sprintf(`{"apis": {"text2sql": {"databases": {"concert": %q}}, "rag": {"documents_dir": %q}}}`,
		filepath.Join(root, "configs/sandbox/data/concert.sqlite"), filepath.Join(root, "configs/sandbox/docs"))), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startServer(t, filepath.Join(dir, "data"), freePort(t), "--mode", "simulated", "--sandbox-config", sb)
	settings := map[string]any{
		"seeds":           []string{"The concert database: its stadiums, concerts and singers."},
		"output_dir":      "out",
		"available_tools": []string{"text2sql:*", "rag:search"},
		"model_name":      "simulated", "max_depth": 4, "min_depth": 3, "max_selected_traj": 2,
	}
	id := p.start("synthesis", settings)
	testkit.WaitWithin(t, 60*time.Second, "the synthesis to end", func() bool { return p.run(id).Status != "running" })
	h := p.run(id)
	if h.Status != "succeeded" {
		t.Fatalf("synthesis %s: %s %s", h.Status, h.EndReason, h.Error)
	}
	var sum struct {
		SeedsDone int `json:"seeds_done"`
		Nodes     int `json:"nodes"`
		QAKept    int `json:"qa_kept"`
		Files     struct {
			QA string `json:"qa"`
		} `json:"files"`
	}
	if err := json.Unmarshal(h.Result, &sum); err != nil {
		t.Fatal(err)
	}
	// 2 + 4 + 8 + 8 nodes with the default branching.
	if sum.SeedsDone != 1 || sum.Nodes != 22 || sum.QAKept < 1 {
		t.Fatalf("summary: %s", h.Result)
	}
	if n := testkit.CountLines(t, sum.Files.QA); n != sum.QAKept || !strings.HasPrefix(sum.Files.QA, filepath.Join(dir, "data")) {
		t.Fatalf("%s: %d lines, summary says %d", sum.Files.QA, n, sum.QAKept)
	}
	for _, tc := range []struct {
		key  string
		val  any
		want string
	}{
		{"available_tools", []string{"web:search"}, `unknown sandbox tool: available_tools[0]: "web:search"`},
		{"max_dept", 3, `unknown key "max_dept"`},
	} {
		bad := map[string]any{}
		for k, v := range settings {
			bad[k] = v
		}
		bad[tc.key] = tc.val
		var e struct {
			Error string `json:"error"`
		}
		if code := p.do("POST", "/start_workflow", map[string]any{"workflow": "synthesis", "settings": bad}, &e); code != 400 || !strings.Contains(e.Error, tc.want) {
			t.Fatalf("%s: %d %q, want 400 naming %q", tc.key, code, e.Error, tc.want)
		}
	}
}
