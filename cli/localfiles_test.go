package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/internal/testkit"
)

// TestRunLocalFiles runs `flock run` with a settings file next to its
// system prompt and script (named relative to it, the data directory
// inside the same directory, as ./flock-data is inside the current one):
// the person at the terminal handed them over, so the run reads them.
func TestRunLocalFiles(t *testing.T) {
	dir := t.TempDir()
	testkit.WriteFiles(t, dir, map[string]string{
		"settings.json": `{"workflow_type": "react", "model": "m", "system_prompt_file": "prompts/system.txt", "max_turns": 2,
			"models": {"m": {"provider": "scripted", "script": "replies.jsonl"}}}`,
		"prompts/system.txt": "You answer with submit.",
		"replies.jsonl":      `{"tool_calls": [{"name": "submit", "arguments": {"answer": "from the script"}}]}` + "\n",
		"missing.json":       `{"workflow_type": "react", "model": "m", "models": {"m": {"provider": "scripted", "script": "nope.jsonl"}}}`,
	})
	code, out, errs := run(t, "run", "--settings", filepath.Join(dir, "settings.json"), "--task", "t", "--data", filepath.Join(dir, "flock-data"))
	if code != 0 || !strings.Contains(out, "system: You answer with submit.") || !strings.Contains(out, `"answer":"from the script"`) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	code, _, errs = run(t, "run", "--settings", filepath.Join(dir, "missing.json"), "--task", "t", "--data", filepath.Join(dir, "flock-data"))
	if code == 0 || !strings.Contains(errs, filepath.Join(dir, "nope.jsonl")) {
		t.Fatalf("missing script: exit %d, stderr %q, want it to name the file", code, errs)
	}
}

// TestRolloutLocalFiles runs `flock rollout` on a config whose benchmark,
// script and agent system prompt sit next to it and whose results go to
// the default output directory beside it.
func TestRolloutLocalFiles(t *testing.T) {
	dir := t.TempDir()
	mini := func(name string) string {
		b, err := os.ReadFile(filepath.Join("../phases/rollout/testdata/mini", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	testkit.WriteFiles(t, dir, map[string]string{
		"exp/rollout.json": `{"data_path": "data/bench.jsonl", "benchmark_name": "mini", "num_chains": 1, "task_ids": ["add"],
			"models": {"m": {"provider": "scripted", "script": "script.jsonl"}},
			"agent": {"workflow": "react", "settings": {"model": "m", "max_turns": 6, "system_prompt_file": "../prompts/agent.txt"}}}`,
		"exp/data/bench.jsonl": mini("bench.jsonl"),
		"exp/script.jsonl":     mini("script.jsonl"),
		"prompts/agent.txt":    "Solve the task.",
	})
	code, out, errs := run(t, "rollout", "--config", filepath.Join(dir, "exp/rollout.json"), "--data", filepath.Join(dir, "exp/flock-data"), "--quiet")
	if code != 0 || !strings.Contains(out, "succeeded") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "exp/results/summary_mini_*.json")); len(m) != 1 {
		t.Fatalf("summary files %v", m)
	}
}
