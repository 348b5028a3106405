package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/server/sandboxapi"
)

// TestRolloutWithSandboxTools runs `flock rollout` whose react agent
// answers two questions with the sandbox tools text2sql:execute and
// rag:search of a `flock sandbox` serving configs/sandbox/offline.json's
// bundled data over HTTP (sandbox_url), on the scripted model; both
// answers are graded correct by exact match.
func TestRolloutWithSandboxTools(t *testing.T) {
	sandboxRollout(t, func(url string) map[string]any {
		return map[string]any{"workflow": "react", "settings": map[string]any{
			"model": "m", "max_turns": 4, "sandbox_url": url,
			"tools": []string{"text2sql:execute", "rag:search", "submit"}}}
	}, 2)
}

// TestTriframeRolloutWithSandboxTools is TestRolloutWithSandboxTools
// with a triframe agent (one actor, no advising): its actor is offered
// text2sql-execute and rag-search beside its own tools, each chosen call
// runs as a sandbox op and its output is in the next actor prompt.
func TestTriframeRolloutWithSandboxTools(t *testing.T) {
	sandboxRollout(t, func(url string) map[string]any {
		return map[string]any{"workflow": "triframe", "settings": map[string]any{
			"actors": []any{map[string]any{"model": "m"}}, "enable_advising": false, "sandbox_url": url,
			"tools": []string{"text2sql:execute", "rag:search"}}}
	}, 2)
}

// TestSimulatedRolloutWithSandboxTools is README's rollout of the
// simulated model over the offline sandbox's tools: for the database
// question it lists the databases, the tables and counts the singers;
// for the other it searches the documents with the question; the count
// is graded correct.
func TestSimulatedRolloutWithSandboxTools(t *testing.T) {
	sandboxRollout(t, func(url string) map[string]any {
		return map[string]any{"workflow": "react", "settings": map[string]any{
			"model": "simulated", "max_turns": 6, "sandbox_url": url,
			"tools": []string{"text2sql:list_databases", "text2sql:execute", "rag:search", "submit"}}}
	}, 1)
}

// sandboxRollout runs the two graded questions with the agent settings
// agent(sandbox_url) and checks that correct of them are answered
// correctly.
func sandboxRollout(t *testing.T, agent func(url string) map[string]any, correct int) {
	t.Helper()
	dir := t.TempDir()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	// offline.json's paths are relative to the repository's root.
	cfg, err := os.ReadFile(filepath.Join(root, "configs/sandbox/offline.json"))
	if err != nil {
		t.Fatal(err)
	}
	abs := strings.ReplaceAll(string(cfg), `"configs/sandbox/`, `"`+filepath.Join(root, "configs/sandbox")+`/`)
	testkit.WriteFiles(t, dir, map[string]string{"sandbox.json": abs})
	svc, err := openSandbox(context.Background(), filepath.Join(dir, "sandbox.json"), filepath.Join(dir, "sandbox-data"), nil, configs.Server{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close(context.Background()) })
	srv, err := sandboxapi.NewServer(configs.Server{Addr: "127.0.0.1:0"}, svc, func() {}, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := testkit.Serve(t, srv)

	// The benchmark and the scripted model's replies are README's, shipped
	// in examples/sandbox.
	bench, err := os.ReadFile(filepath.Join(root, "examples/sandbox/bench.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(root, "examples/sandbox/script.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	settings, _ := json.Marshal(map[string]any{
		"data_path": "bench.jsonl", "benchmark_name": "sbx", "num_chains": 1,
		"models": map[string]any{"m": map[string]any{"provider": "scripted", "script": "script.jsonl"}},
		"agent":  agent(base),
	})
	testkit.WriteFiles(t, dir, map[string]string{
		"rollout.json": string(settings),
		"bench.jsonl":  string(bench),
		"script.jsonl": string(script),
	})
	code, out, errs := run(t, "rollout", "--config", filepath.Join(dir, "rollout.json"), "--data", filepath.Join(dir, "flock-data"),
		"--output-dir", filepath.Join(dir, "out"), "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "out", "summary_sbx_*.json"))
	if len(files) != 1 {
		t.Fatalf("summary files %v\nstdout:\n%s", files, out)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Correct int    `json:"correct"`
		Samples int    `json:"samples"`
		Primary string `json:"primary"`
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Samples != 2 || sum.Correct != correct || sum.Primary != "exact_match" {
		t.Fatalf("summary = %+v, want %d of 2 correct by exact_match\n%s", sum, correct, b)
	}
}
