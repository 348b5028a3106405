package rollout_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/phases/rollout"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// TestCrashResume stops the App in the middle of a rollout and opens it
// again on the same data directory: the rollout resumes, the samples that
// had finished are not run again, and the summary is complete.
func TestCrashResume(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	data := filepath.Join(dir, "data")
	log := filepath.Join(dir, "agents.log")
	var bench strings.Builder
	for i := range 12 {
		fmt.Fprintf(&bench, `{"id": "q%d", "question": "Question %d?", "answer": "x"}`+"\n", i, i)
	}
	benchPath := filepath.Join(dir, "bench.jsonl")
	script := filepath.Join(dir, "script.jsonl")
	cmd := fmt.Sprintf(`basename "$PWD" >> %s; sleep 0.1; basename "$PWD"`, log)
	lines := []string{
		fmt.Sprintf(`{"tool_calls": [{"name": "bash", "arguments": {"command": %q}}]}`, cmd),
		`{"tool_calls": [{"name": "submit", "arguments": {"answer": "x"}}]}`,
	}
	if err := os.WriteFile(benchPath, []byte(bench.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	settings, _ := json.Marshal(map[string]any{
		"data_path": benchPath, "output_dir": out, "num_chains": 2, "max_concurrency": 3,
		"models": map[string]any{"m": map[string]any{"provider": "scripted", "script": script}},
		"agent":  map[string]any{"settings": map[string]any{"model": "m"}},
	})
	a := openApp(t, data)
	h, err := a.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: rollout.Name, Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	var man rollout.Manifest
	testkit.WaitWithin(t, 30*time.Second, "the manifest", func() bool {
		b, err := os.ReadFile(filepath.Join(out, "rollout_bench.json"))
		return err == nil && json.Unmarshal(b, &man) == nil
	})
	results := man.Results
	finished := func() map[string]bool {
		got := map[string]bool{}
		b, _ := os.ReadFile(results)
		for _, l := range strings.Split(string(b), "\n") {
			var r rollout.Row
			if json.Unmarshal([]byte(l), &r) == nil && r.EpisodeID != "" {
				got[r.EpisodeID] = true
			}
		}
		return got
	}
	testkit.WaitWithin(t, 60*time.Second, "6 finished samples", func() bool { return len(finished()) >= 6 })
	closeApp(t, a) // the "crash": runs stay running in the store
	before := finished()
	if len(before) >= 24 {
		t.Fatalf("the rollout finished before the stop (%d samples); slow the agents down", len(before))
	}

	a = openApp(t, data)
	defer closeApp(t, a)
	end := wait(t, a, h.ID)
	if end.Status != state.StatusSucceeded {
		t.Fatalf("resumed rollout %s: %s %s", end.Status, end.EndReason, end.Error)
	}
	var sum rollout.Summary
	if err := json.Unmarshal(end.Result, &sum); err != nil {
		t.Fatal(err)
	}
	if !sum.Complete || sum.FinishedSamples != 24 || sum.Failed != 0 || sum.Correct != 24 || len(sum.PassAtK) != 2 {
		t.Fatalf("summary after resume %+v", sum)
	}
	if got := finished(); len(got) != 24 {
		t.Fatalf("%d samples in the results file, want 24", len(got))
	}
	runs := map[string]int{}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Fields(string(b)) {
		runs[l]++
	}
	for id := range before {
		// Episode "q3:1" ran in work directory "t00003-c1".
		var task, chain int
		if _, err := fmt.Sscanf(id, "q%d:%d", &task, &chain); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("t%05d-c%d", task, chain)
		if runs[name] != 1 {
			t.Fatalf("sample %s finished before the stop but its agent ran %d times", id, runs[name])
		}
	}
	if len(runs) != 24 {
		t.Fatalf("%d agents ran, want 24", len(runs))
	}
}
