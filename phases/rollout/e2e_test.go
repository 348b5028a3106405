package rollout_test

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/grading"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/internal/testkit/testrun"
	"github.com/flockrun/flock/phases/rollout"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// miniSettings is the rollout of testdata/mini with the scripted model.
func miniSettings(t testing.TB, out string, extra map[string]any) json.RawMessage {
	t.Helper()
	dir, err := filepath.Abs("testdata/mini")
	if err != nil {
		t.Fatal(err)
	}
	s := map[string]any{
		"data_path":       filepath.Join(dir, "bench.jsonl"),
		"benchmark_name":  "mini",
		"output_dir":      out,
		"num_chains":      3,
		"max_concurrency": 4,
		"models":          map[string]any{"m": map[string]any{"provider": "scripted", "script": filepath.Join(dir, "script.jsonl")}},
		"agent": map[string]any{"workflow": "react", "settings": map[string]any{
			"model": "m", "max_turns": 6, "fold": map[string]any{"summarize": true}}},
		"advantages": []string{"grpo", "rloo"},
	}
	for k, v := range extra {
		s[k] = v
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// openApp opens an App on data as flock rollout would for the person at
// the terminal: testdata and data's parent (the tests' benchmark, scripts
// and output directory) are read roots, data's parent a write root.
func openApp(t testing.TB, data string) *app.App {
	t.Helper()
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(data)
	a, err := app.Open(context.Background(), configs.Server{DataDir: data, ReadRoots: []string{testdata, dir}, WriteRoots: []string{dir}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func closeApp(t testing.TB, a *app.App) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func wait(t testing.TB, a *app.App, id string) state.Run {
	t.Helper()
	return testrun.Wait(t, a.Executor, id)
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestMiniRollout runs testdata/mini (5 tasks × 3 chains) end to end: real
// executor, bbolt, bash and the scripted model; checks every output file
// and pass@k against hand-computed values.
func TestMiniRollout(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	a := openApp(t, filepath.Join(dir, "data"))
	defer closeApp(t, a)
	h, err := a.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: rollout.Name, Settings: miniSettings(t, out, nil)})
	if err != nil {
		t.Fatal(err)
	}
	end := wait(t, a, h.ID)
	if end.Status != state.StatusSucceeded {
		t.Fatalf("rollout %s: %s %s", end.Status, end.EndReason, end.Error)
	}
	var man rollout.Manifest
	testkit.ReadJSON(t, filepath.Join(out, "rollout_mini.json"), &man)
	if !man.Complete || man.RunID != h.ID {
		t.Fatalf("manifest %+v", man)
	}
	var sum rollout.Summary
	testkit.ReadJSON(t, man.Summary, &sum)
	var res rollout.Summary
	if err := json.Unmarshal(end.Result, &res); err != nil {
		t.Fatal(err)
	}
	if res.MeanScore != sum.MeanScore || res.FinishedSamples != sum.FinishedSamples {
		t.Fatalf("run result %+v differs from summary file %+v", res, sum)
	}
	// Correct per task: add 3, cap 1, mul 0 (one agent failed), fold 2, file 2.
	want := []float64{8.0 / 15, (1 + 2.0/3 + 0 + 1 + 1) / 5, 0.8}
	if len(sum.PassAtK) != 3 {
		t.Fatalf("pass@k %v", sum.PassAtK)
	}
	for k, w := range want {
		if !near(sum.PassAtK[k], w) {
			t.Fatalf("pass@%d = %v, want %v (all %v)", k+1, sum.PassAtK[k], w, sum.PassAtK)
		}
	}
	if !near(sum.PassAt["pass@3"], 0.8) {
		t.Fatalf("pass_at %v", sum.PassAt)
	}
	switch {
	case sum.TotalTasks != 5 || sum.TotalSamples != 15 || sum.FinishedSamples != 15 || !sum.Complete:
		t.Fatalf("counts %+v", sum)
	case sum.Failed != 1 || sum.Correct != 8 || !near(sum.MeanScore, 8.0/15) || !near(sum.SuccessRate, 14.0/15):
		t.Fatalf("aggregate %+v", sum.Summary)
	case sum.Errors["agent_failed"] != 1 || sum.Errors["eval_error"] != 0:
		t.Fatalf("errors %v", sum.Errors)
	case !near(sum.SignalMeans["file_ok"], 2.0/3):
		t.Fatalf("signal means %v", sum.SignalMeans)
	case sum.Tokens == 0:
		t.Fatal("no tokens counted")
	}

	lines := testkit.ReadLines(t, man.Results)
	if len(lines) != 15 {
		t.Fatalf("%d result lines, want 15", len(lines))
	}
	rows := map[string]rollout.Row{}
	for _, l := range lines {
		var r rollout.Row
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		rows[r.EpisodeID] = r
	}
	if r := rows["fold:0"]; r.PredictedAnswer != "12" || !r.Correct || r.Steps != 3 {
		t.Fatalf("fold:0 %+v", r)
	}
	if r := rows["cap:0"]; r.PredictedAnswer != "paris" || !r.Correct {
		t.Fatalf("cap:0 %+v", r)
	}
	if r := rows["mul:2"]; r.Success || r.Status != "failed" || r.TerminationReason != "error" {
		t.Fatalf("mul:2 %+v", r)
	}
	if r := rows["file:2"]; r.Metric != "verifier" || r.Correct || r.Signals["file_ok"] != 0 {
		t.Fatalf("file:2 %+v", r)
	}
	if r := rows["add:2"]; r.PredictedAnswer != "4" || !r.Correct {
		t.Fatalf("add:2 %+v", r)
	}

	var ev rollout.Evaluation
	testkit.ReadJSON(t, man.Evaluation, &ev)
	if len(ev.Evaluations) != 15 || ev.Evaluations[0].TaskID != "add" || ev.Evaluations[14].TaskID != "file" || ev.PerfectMatches != 8 {
		t.Fatalf("evaluation %+v", ev)
	}

	// Episodes: one per sample, valid, the folded ones with two segments.
	eps := map[string]grading.Episode{}
	for _, l := range testkit.ReadLines(t, man.Episodes) {
		ep, err := grading.DecodeEpisode([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		eps[ep.ID] = ep
	}
	if len(eps) != 15 {
		t.Fatalf("%d episodes", len(eps))
	}
	fe := eps["fold:1"]
	if tr := fe.Trajectories[0]; tr.NumSegments() != 2 || len(tr.SegmentRewards) != 2 || tr.SegmentRewards[1] != 1 || tr.SegmentRewards[0] != 0 || fe.Artifacts.Answer != "12" {
		t.Fatalf("fold:1 episode %+v", fe)
	}
	if !strings.Contains(fe.Trajectories[0].Steps[2].ChatCompletions[1].Content, "[Previous Summary]: I am chain c1") {
		t.Fatalf("folded context %+v", fe.Trajectories[0].Steps[2].ChatCompletions)
	}
	// Groups with GRPO and RLOO advantages.
	groups := testkit.ReadLines(t, man.Groups)
	found := false
	for _, l := range groups {
		var g rollout.GroupLine
		if err := json.Unmarshal([]byte(l), &g); err != nil {
			t.Fatal(err)
		}
		if g.GroupID == "cap:react" {
			found = true
			rl := g.Advantages["rloo"]
			// Rewards 1, 0, 0: RLOO = r_i - mean of the others.
			if len(rl) != 3 || !near(rl[0], 1) || !near(rl[1], -0.5) || len(g.Advantages["grpo"]) != 3 {
				t.Fatalf("cap group %+v", g)
			}
		}
	}
	if !found || len(groups) != 5 {
		t.Fatalf("%d groups, cap:react found %v", len(groups), found)
	}

	// A second rollout on the same output directory skips every finished
	// sample and reruns only the failed one (retry_failed).
	h2, err := a.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: rollout.Name, Settings: miniSettings(t, out, nil)})
	if err != nil {
		t.Fatal(err)
	}
	end2 := wait(t, a, h2.ID)
	if end2.Status != state.StatusSucceeded {
		t.Fatalf("second rollout %s: %s", end2.Status, end2.Error)
	}
	if lines := testkit.ReadLines(t, man.Results); len(lines) != 15 || uniqueSamples(t, lines) != 15 {
		t.Fatalf("%d result lines after the re-run, want one per sample (15)", len(lines))
	}
	var sum2 rollout.Summary
	testkit.ReadJSON(t, man.Summary, &sum2)
	if sum2.Timestamp != sum.Timestamp || sum2.FinishedSamples != 15 || !near(sum2.PassAtK[0], 8.0/15) || sum2.RunID != h2.ID {
		t.Fatalf("re-run summary %+v", sum2)
	}
}

// TestJudgeRollout grades with llm_judgement through a scripted judge: a
// clear verdict scores, an unclear reply is an eval error scoring 0.
func TestJudgeRollout(t *testing.T) {
	dir := t.TempDir()
	judge, err := filepath.Abs("testdata/mini/judge.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs("testdata/mini/script.jsonl")
	a := openApp(t, filepath.Join(dir, "data"))
	defer closeApp(t, a)
	settings := miniSettings(t, filepath.Join(dir, "out"), map[string]any{
		"task_ids": []string{"add", "cap"}, "max_concurrency": 6, "evaluation_metric": "llm_judgement",
		"judge":  map[string]any{"model": "judge"},
		"models": map[string]any{"m": map[string]any{"provider": "scripted", "script": script}, "judge": map[string]any{"provider": "scripted", "script": judge}},
	})
	h, err := a.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: rollout.Name, Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	end := wait(t, a, h.ID)
	var sum rollout.Summary
	if err := json.Unmarshal(end.Result, &sum); err != nil || end.Status != state.StatusSucceeded {
		t.Fatalf("%s %s: %v", end.Status, end.Error, err)
	}
	// add: 3 correct; cap: paris correct, Lyon wrong, Marseille unclear.
	if sum.Correct != 4 || sum.Errors["eval_error"] != 1 || !near(sum.PassAtK[0], (1+1.0/3)/2) || sum.Metric != "llm_judgement" {
		t.Fatalf("summary %+v", sum)
	}
	var ev rollout.Evaluation
	testkit.ReadJSON(t, sum.Evaluation, &ev)
	for _, e := range ev.Evaluations {
		if e.TaskID == "cap" && e.Chain == 2 && (e.Details.EvalError == "" || e.Score != 0) {
			t.Fatalf("unclear verdict graded %+v", e)
		}
		if e.TaskID == "cap" && e.Chain == 1 && e.Details.JudgeReasoning != "Lyon is not the capital" {
			t.Fatalf("judge reasoning %+v", e)
		}
	}
}

// TestJudgeRegrade: a rollout graded by exact_match, re-run with
// llm_judgement into the same output directory, is re-graded by the judge
// from the stored answers without running any agent again.
func TestJudgeRegrade(t *testing.T) {
	dir := t.TempDir()
	judge, _ := filepath.Abs("testdata/mini/judge.jsonl")
	script, _ := filepath.Abs("testdata/mini/script.jsonl")
	a := openApp(t, filepath.Join(dir, "data"))
	defer closeApp(t, a)
	models := map[string]any{"m": map[string]any{"provider": "scripted", "script": script}, "judge": map[string]any{"provider": "scripted", "script": judge}}
	run := func(extra map[string]any) rollout.Summary {
		t.Helper()
		extra["task_ids"], extra["models"], extra["max_concurrency"] = []string{"add", "cap"}, models, 6
		h, err := a.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: rollout.Name, Settings: miniSettings(t, filepath.Join(dir, "out"), extra)})
		if err != nil {
			t.Fatal(err)
		}
		end := wait(t, a, h.ID)
		var sum rollout.Summary
		if err := json.Unmarshal(end.Result, &sum); err != nil || end.Status != state.StatusSucceeded {
			t.Fatalf("%s %s: %v", end.Status, end.Error, err)
		}
		return sum
	}
	// exact_match: add 3 right, cap "paris" right (normalized), Lyon and Marseille wrong.
	if sum := run(map[string]any{}); sum.Correct != 4 || sum.Metric != "exact_match" {
		t.Fatalf("exact_match summary %+v", sum)
	}
	sum := run(map[string]any{"evaluation_metric": "llm_judgement", "judge": map[string]any{"model": "judge"}})
	if sum.Regraded != 6 || sum.Correct != 4 || sum.Errors["eval_error"] != 1 || sum.Metric != "llm_judgement" || sum.Errors["agent_failed"] != 0 {
		t.Fatalf("judge re-grade summary %+v regraded %d errors %v", sum.Summary, sum.Regraded, sum.Errors)
	}
	var ev rollout.Evaluation
	testkit.ReadJSON(t, sum.Evaluation, &ev)
	for _, e := range ev.Evaluations {
		if e.TaskID == "cap" && e.Chain == 1 && e.Details.JudgeReasoning != "Lyon is not the capital" {
			t.Fatalf("cap:1 not judged %+v", e)
		}
	}
}

// uniqueSamples counts the distinct (task_id, chain) of result lines.
func uniqueSamples(t testing.TB, lines []string) int {
	t.Helper()
	seen := map[string]bool{}
	for _, l := range lines {
		var r rollout.Row
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		seen[r.EpisodeID] = true
	}
	return len(seen)
}
