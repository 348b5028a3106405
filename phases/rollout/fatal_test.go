package rollout_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases/rollout"
	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// TestRolloutStopsOnModelError runs testdata/mini (15 samples, 4 lanes)
// against a model every call of which fails with a model_error: each lane
// stops after its first sample, no other starts, the rollout writes its
// files for the four samples done and ends model_error with the call's
// error; run again with a working model, it runs the failed samples and
// the missing ones and completes.
func TestRolloutStopsOnModelError(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	const keyRefused = `model "m" at llm.example:8000: HTTP 401 (the endpoint refused the API key in $OPENAI_API_KEY) (after 1 attempt, not retried): Incorrect API key provided`
	broken := filepath.Join(dir, "broken.jsonl")
	if err := os.WriteFile(broken, []byte(`{"error": "`+strings.ReplaceAll(keyRefused, `"`, `\"`)+`", "code": "model_error"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := openApp(t, filepath.Join(dir, "data"))
	defer closeApp(t, a)
	settings := miniSettings(t, out, map[string]any{
		"models": map[string]any{"m": map[string]any{"provider": "scripted", "script": broken}}})
	h, err := a.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: rollout.Name, Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	end := wait(t, a, h.ID)
	if end.Status != state.StatusFailed || end.EndReason != record.ReasonModelError || !strings.Contains(end.Error, keyRefused) {
		t.Fatalf("rollout %s (%s): %s", end.Status, end.EndReason, end.Error)
	}
	// One generate per lane: the first sample of each, nothing after.
	gens := 0
	runs, _, err := a.Store.Runs(context.Background(), state.RunFilter{Workflow: "react", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		ops, err := a.Store.Ops(context.Background(), r.ID, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			if op.Request.Kind == operations.KindGenerate {
				gens++
				if op.Result == nil || op.Result.Code != operations.CodeModelError {
					t.Fatalf("generate result %+v", op.Result)
				}
			}
		}
	}
	if len(runs) != 4 || gens != 4 {
		t.Fatalf("%d agent runs, %d generates; want 4 and 4", len(runs), gens)
	}
	var man rollout.Manifest
	testkit.ReadJSON(t, filepath.Join(out, "rollout_mini.json"), &man)
	var sum rollout.Summary
	testkit.ReadJSON(t, man.Summary, &sum)
	if sum.FinishedSamples != 4 || sum.MissingSamples != 11 || sum.Complete || sum.FailedBy[record.ReasonModelError] != 4 {
		t.Fatalf("summary %+v", sum)
	}
	if rows := testkit.ReadLines(t, man.Results); len(rows) != 4 || !strings.Contains(rows[0], `"end_reason":"model_error"`) {
		t.Fatalf("results %v", rows)
	}

	// Fixed, the same rollout again: every sample runs and it completes.
	h, err = a.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: rollout.Name, Settings: miniSettings(t, out, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if end := wait(t, a, h.ID); end.Status != state.StatusSucceeded {
		t.Fatalf("second rollout %s (%s): %s", end.Status, end.EndReason, end.Error)
	}
	var sum2 rollout.Summary
	testkit.ReadJSON(t, man.Summary, &sum2)
	if sum2.FinishedSamples != 15 || !sum2.Complete || sum2.FailedBy[record.ReasonModelError] != 0 {
		t.Fatalf("second summary %+v", sum2)
	}
}
