package synthesis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/internal/testkit/testapp"
	"github.com/flockrun/flock/internal/testkit/testrun"
	"github.com/flockrun/flock/internal/testkit/testsandbox"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases/synthesis"
	"github.com/flockrun/flock/sandbox"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/synthesis/trajectory"
	"github.com/flockrun/flock/workflows"
)

// repo is the repository root (the bundled sandbox fixtures).
func repo(t testing.TB) string {
	t.Helper()
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// bashResource is the bash resource the synthesis tests' sandbox offers
// beside the offline fixtures.
const bashResource = `{"bash": {"enabled": true, "config": {"timeout": 30}}}`

func openApp(t testing.TB, data string, svc *sandbox.Service) *app.App {
	t.Helper()
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(data)
	return testapp.Open(t, configs.Server{DataDir: data, ReadRoots: []string{testdata, dir}, WriteRoots: []string{dir}}, app.WithSandbox(svc))
}

func run(t testing.TB, a *app.App, settings map[string]any) state.Run {
	t.Helper()
	doc, err := json.Marshal(settings)
	if err != nil {
		t.Fatal(err)
	}
	h := testrun.Start(t, a.Executor, workflows.StartRequest{Workflow: synthesis.Name, Settings: doc})
	end := testrun.Wait(t, a.Executor, h.ID)
	if end.Status != state.StatusSucceeded {
		t.Fatalf("synthesis %s: %s %s", end.Status, end.EndReason, end.Error)
	}
	return end
}

func lines[T any](t testing.TB, path string) []T {
	t.Helper()
	var out []T
	for _, l := range testkit.ReadLines(t, path) {
		var v T
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	return out
}

// compactLen is the observation length the selector's richness counts:
// runes, leading and trailing whitespace dropped, inner runs one.
func compactLen(s string) int {
	return len([]rune(strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")))
}

// TestScriptedSynthesis runs one seed over the rag and text2sql fixtures
// on the scripted model (testdata/e2e/script.jsonl): a tree of max_depth
// 3, two branches from the root, one child below. Branch 0.1.0 first
// proposes 0.0's SQL again (keys reordered): the duplicate is not
// executed, the model is asked again naming it, and its second proposal
// runs. Both leaf paths are selected; their scores are checked against
// the formula computed here from the observations written. The SQL path's
// first QA has two hops and is retried with the reason; the second is
// grounded and kept. The rag path's QA names an answer found in no
// observation twice and is rejected (grounded). A re-run on the same
// output_dir skips the seed.
func TestScriptedSynthesis(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	svc := testsandbox.OpenFixtures(t, bashResource)
	a := openApp(t, filepath.Join(dir, "data"), svc)
	script, _ := filepath.Abs("testdata/e2e/script.jsonl")
	settings := map[string]any{
		"seeds":           []string{"The sample concert catalogue."},
		"output_dir":      out,
		"available_tools": []string{"text2sql:execute", "rag:search"},
		"model_name":      "m",
		"models":          map[string]any{"m": map[string]any{"provider": "scripted", "script": script}},
		"max_depth":       3, "branching_factor": 2, "depth_threshold": 1, "min_depth": 3, "max_selected_traj": 2,
		"max_retries": 2,
	}
	end := run(t, a, settings)

	var sum synthesis.Summary
	if err := json.Unmarshal(end.Result, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.SeedsDone != 1 || sum.Nodes != 6 || sum.ToolCalls != 6 || sum.Duplicates != 1 || sum.Reasks != 1 || sum.Selected != 2 ||
		sum.QAKept != 1 || sum.QARejected["grounded"] != 1 || sum.CheckFailures["hops"] != 1 || sum.CheckFailures["grounded"] != 2 {
		t.Fatalf("summary: %+v", sum)
	}
	// 6 proposals + 1 re-ask + 4 QA attempts.
	if sum.ModelCalls != 11 {
		t.Fatalf("model calls = %d, want 11", sum.ModelCalls)
	}
	// The journal: exactly six sandbox calls, each on its branch's session
	// forked from its ancestors'; the duplicate never ran.
	seedRun := only(t, a, end.ID)
	ops, err := a.Store.Ops(context.Background(), seedRun, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, op := range ops {
		if op.Request.Kind == operations.KindSandbox {
			calls = append(calls, operations.Sandbox.Params(op.Request).Session)
		}
	}
	if strings.Join(calls, " ") != "n0.0 n0.1 n0.0.0 n0.1.0 n0.0.0.0 n0.1.0.0" {
		t.Fatalf("sandbox calls: %v", calls)
	}

	trees := lines[synthesis.TreeRecord](t, filepath.Join(out, synthesis.FileTrees))
	if len(trees) != 1 || len(trees[0].Nodes) != 7 {
		t.Fatalf("trees: %+v", trees)
	}
	tree := trees[0].Tree
	if n := tree.Node("0.1.0"); n == nil || n.Tool != "rag:search" || string(n.Params) != `{"query":"Peterhead"}` {
		t.Fatalf("0.1.0 = %+v", n)
	}
	if n := tree.Node("0.0.0.0"); n == nil || !strings.Contains(n.Observation, "Harbour Arena") || n.Failed {
		t.Fatalf("0.0.0.0 = %+v", n)
	}

	// Selection scores by hand: depth 40 × 3/3; diversity 30 × one tool of
	// the two offered; richness 30 × the min-max normalised mean length.
	trajs := lines[synthesis.TrajectoryRecord](t, filepath.Join(out, synthesis.FileTrajectories))
	if len(trajs) != 2 {
		t.Fatalf("%d trajectories, want 2", len(trajs))
	}
	mean := func(ns []trajectory.Node) float64 {
		total := 0
		for _, n := range ns {
			total += compactLen(n.Observation)
		}
		return float64(total) / float64(len(ns))
	}
	sql, rag := mean(pathOf(t, tree, "0.0.0.0")), mean(pathOf(t, tree, "0.1.0.0"))
	lo, hi := math.Min(sql, rag), math.Max(sql, rag)
	want := map[string]float64{
		"0.0.0.0": 40 + 15 + 30*(sql-lo)/(hi-lo),
		"0.1.0.0": 40 + 15 + 30*(rag-lo)/(hi-lo),
	}
	for i, tr := range trajs {
		leaf := tr.Nodes[len(tr.Nodes)-1].ID
		t.Logf("trajectory %s: score %.4f (mean observation %.1f / %.1f)", leaf, tr.Score, sql, rag)
		if math.Abs(tr.Score-want[leaf]) > 1e-9 || tr.TotalDepth != 3 {
			t.Fatalf("trajectory %d (leaf %s): score %v, want %v", i, leaf, tr.Score, want[leaf])
		}
		if i > 0 && tr.Score > trajs[i-1].Score {
			t.Fatal("trajectories are not best first")
		}
		for _, n := range tr.Nodes {
			if n.Intent == "" || n.Tool == "" || len(n.Params) == 0 || n.Observation == "" {
				t.Fatalf("node without intent, tool, params or observation: %+v", n)
			}
		}
	}

	qas := lines[synthesis.QARecord](t, filepath.Join(out, synthesis.FileQA))
	if len(qas) != 1 {
		t.Fatalf("%d QA, want 1", len(qas))
	}
	q := qas[0]
	if q.Answer != "42000" || q.Attempts != 2 || len(q.Steps) != 3 || q.SourceID != tree.Seed.ID ||
		!strings.HasPrefix(q.TrajectoryID, tree.Seed.ID+"_traj_") || q.Seed != "The sample concert catalogue." ||
		strings.Join(q.ChecksPassed, ",") != "non_empty,no_leakage,verbosity,hops,grounded" {
		t.Fatalf("qa: %+v", q)
	}

	// The same output_dir again: the seed is done, nothing is added.
	end2 := run(t, a, settings)
	var sum2 synthesis.Summary
	if err := json.Unmarshal(end2.Result, &sum2); err != nil {
		t.Fatal(err)
	}
	if sum2.SeedsSkipped != 1 || sum2.SeedsDone != 1 || sum2.QAKept != 1 {
		t.Fatalf("re-run summary: %+v", sum2)
	}
	if n := len(lines[synthesis.QARecord](t, filepath.Join(out, synthesis.FileQA))); n != 1 {
		t.Fatalf("re-run: %d QA lines", n)
	}
}

// only returns the one seed run below the synthesis run id.
func only(t testing.TB, a *app.App, id string) string {
	t.Helper()
	ctx := context.Background()
	lanes, err := a.Store.Children(ctx, id)
	if err != nil || len(lanes) != 1 {
		t.Fatalf("lanes: %v %v", lanes, err)
	}
	seeds, err := a.Store.Children(ctx, lanes[0])
	if err != nil || len(seeds) != 1 {
		t.Fatalf("seeds: %v %v", seeds, err)
	}
	return seeds[0]
}

func pathOf(t testing.TB, tree trajectory.Tree, leaf string) []trajectory.Node {
	t.Helper()
	var rev []trajectory.Node
	for id := leaf; id != "0"; {
		n := tree.Node(id)
		if n == nil {
			t.Fatalf("no node %s", id)
		}
		rev = append(rev, *n)
		id = n.ParentID
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// TestBranchesForkSessions grows a tree whose actions append their
// branch to trail.txt in a bash session and print it: each branch runs on
// its own session forked from its parent's, so every node's file holds
// exactly the branches of its own path (siblings never see each other).
func TestBranchesForkSessions(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	a := openApp(t, filepath.Join(dir, "data"), testsandbox.OpenFixtures(t, bashResource))
	script, _ := filepath.Abs("testdata/e2e/fork_script.jsonl")
	run(t, a, map[string]any{
		"seeds": []string{"A workspace."}, "output_dir": out, "available_tools": []string{"bash:*"},
		"model_name": "m", "models": map[string]any{"m": map[string]any{"provider": "scripted", "script": script}},
		"max_depth": 2, "branching_factor": 2, "depth_threshold": 2, "min_depth": 1, "max_retries": 1,
	})
	tree := lines[synthesis.TreeRecord](t, filepath.Join(out, synthesis.FileTrees))[0].Tree
	if len(tree.Nodes) != 7 {
		t.Fatalf("%d nodes, want 7", len(tree.Nodes))
	}
	for _, n := range tree.Nodes[1:] {
		var want []string
		for _, p := range pathOf(t, tree, n.ID) {
			want = append(want, p.ID)
		}
		var got struct {
			Stdout string `json:"stdout"`
		}
		if err := json.Unmarshal([]byte(n.Observation), &got); err != nil {
			t.Fatalf("node %s: observation %q: %v", n.ID, n.Observation, err)
		}
		if strings.TrimSpace(got.Stdout) != strings.Join(want, "\n") {
			t.Fatalf("node %s sees trail %q, want %q", n.ID, got.Stdout, want)
		}
	}
}

// TestSimulatedSynthesis is README's `flock synthesize --mode simulated`
// on examples/synthesis (two seeds over the offline sandbox's text2sql
// and rag): every seed grows its 30-node tree, every selected path gets a
// QA pair that passes every check (grounded, at least 3 hops).
func TestSimulatedSynthesis(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	svc := testsandbox.OpenFixtures(t, bashResource)
	data := filepath.Join(dir, "data")
	testdata, _ := filepath.Abs("testdata")
	a, err := app.Open(context.Background(), configs.Server{DataDir: data, Mode: "simulated", ReadRoots: []string{testdata}, WriteRoots: []string{dir}}, nil, app.WithSandbox(svc))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	end := run(t, a, map[string]any{"seeds": exampleSeeds(t), "output_dir": out, "available_tools": []string{"text2sql:*", "rag:search"},
		"model_name": "simulated", "min_depth": 3, "max_selected_traj": 2})
	var sum synthesis.Summary
	if err := json.Unmarshal(end.Result, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.SeedsDone != 2 || sum.Nodes != 60 || sum.Selected != 4 || sum.QAKept != 4 || len(sum.QARejected) != 0 {
		t.Fatalf("summary: %+v", sum)
	}
	for _, q := range lines[synthesis.QARecord](t, filepath.Join(out, synthesis.FileQA)) {
		if len(q.Steps) < 3 || strings.Join(q.ChecksPassed, ",") != "non_empty,no_leakage,verbosity,hops,grounded" {
			t.Fatalf("qa: %+v", q)
		}
	}
}

// TestSeedLimits caps each seed's run at 3 actions (seed_limits): the
// seed's run ends with limit_actions after its third tool call, the seed
// is not marked done and the summary lists it as failed; a re-run without
// the cap finishes it.
func TestSeedLimits(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	a := openApp(t, filepath.Join(dir, "data"), testsandbox.OpenFixtures(t, bashResource))
	script, _ := filepath.Abs("testdata/e2e/fork_script.jsonl")
	settings := map[string]any{
		"seeds": []string{"A workspace."}, "output_dir": out, "available_tools": []string{"bash:*"},
		"model_name": "m", "models": map[string]any{"m": map[string]any{"provider": "scripted", "script": script}},
		"max_depth": 2, "branching_factor": 2, "depth_threshold": 2, "min_depth": 1, "max_retries": 1,
		"seed_limits": map[string]any{"actions": 3},
	}
	end := run(t, a, settings)
	var sum synthesis.Summary
	if err := json.Unmarshal(end.Result, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.SeedsDone != 0 || sum.SeedsFailed != 1 || sum.Failures[0].Reason != "limit_actions" {
		t.Fatalf("summary: %+v", sum)
	}
	delete(settings, "seed_limits")
	end = run(t, a, settings)
	if err := json.Unmarshal(end.Result, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.SeedsDone != 1 || sum.SeedsFailed != 0 || sum.Nodes != 6 {
		t.Fatalf("re-run summary: %+v", sum)
	}
}

// TestRepairsOutputFiles starts on an output_dir left by a killed run: a
// QA line of a seed that never finished and a torn last line of
// trees.jsonl. Both are dropped before the seed runs, summary.json says
// which files were repaired, and each file then holds exactly the
// finished seed's lines.
func TestRepairsOutputFiles(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(out, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(synthesis.FileQA, `{"source_id":"src_0009_deadbeef","question":"left over"}`+"\n")
	write(synthesis.FileTrees, `{"source_id":"src_0009_deadbeef","nodes":[{"node_`)
	a := openApp(t, filepath.Join(dir, "data"), testsandbox.OpenFixtures(t, bashResource))
	end := run(t, a, oneBashSeed(t, out))
	var sum synthesis.Summary
	if err := json.Unmarshal(end.Result, &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.Repaired) != 2 || sum.SeedsDone != 1 {
		t.Fatalf("summary: %+v", sum)
	}
	trees := lines[synthesis.TreeRecord](t, filepath.Join(out, synthesis.FileTrees))
	if len(trees) != 1 || trees[0].SourceID == "src_0009_deadbeef" {
		t.Fatalf("trees: %+v", trees)
	}
	for _, q := range lines[synthesis.QARecord](t, filepath.Join(out, synthesis.FileQA)) {
		if q.SourceID == "src_0009_deadbeef" {
			t.Fatal("the unfinished seed's QA line is still there")
		}
	}
}

// TestSynthesisBudget gives the whole synthesis a budget of actions
// (limits): the synthesis keeps within it (up to the step that crosses it)
// and still ends with its summary.
// With 40 actions and one lane, the first seed's 30 tool calls fit, the
// second seed's run gets the 10 left and ends over them; with 30, the
// first seed spends them all (its run ends at its limit) and the second is
// not started.
func TestSynthesisBudget(t *testing.T) {
	dir := t.TempDir()
	svc := testsandbox.OpenFixtures(t, bashResource)
	testdata, _ := filepath.Abs("testdata")
	a, err := app.Open(context.Background(), configs.Server{DataDir: filepath.Join(dir, "data"), Mode: "simulated", ReadRoots: []string{testdata}, WriteRoots: []string{dir}}, nil, app.WithSandbox(svc))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	list := exampleSeeds(t)
	for _, tc := range []struct {
		actions      int
		done         int
		secondReason string
	}{
		{40, 1, "limit_actions"},
		{30, 0, synthesis.ReasonBudgetSpent},
	} {
		out := filepath.Join(dir, fmt.Sprintf("out-%d", tc.actions))
		end := run(t, a, map[string]any{"seeds": list, "output_dir": out, "available_tools": []string{"text2sql:*", "rag:search"},
			"model_name": "simulated", "min_depth": 3, "max_selected_traj": 2, "max_concurrency": 8,
			"limits": map[string]any{"actions": tc.actions}})
		// Like any run's limits, a seed run's are checked between steps: the
		// step that crosses one finishes (at most max_concurrency calls).
		if end.Usage.Actions > tc.actions+8 {
			t.Errorf("limits.actions %d: the synthesis used %d", tc.actions, end.Usage.Actions)
		}
		var sum synthesis.Summary
		if err := json.Unmarshal(end.Result, &sum); err != nil {
			t.Fatal(err)
		}
		if sum.SeedsDone != tc.done || sum.SeedsFailed != 2-tc.done || sum.Limits == nil || sum.Limits.Actions != tc.actions {
			t.Fatalf("limits.actions %d: summary %+v", tc.actions, sum)
		}
		last := sum.Failures[len(sum.Failures)-1]
		if last.Reason != tc.secondReason {
			t.Errorf("limits.actions %d: failures %+v, want the last with reason %s", tc.actions, sum.Failures, tc.secondReason)
		}
		if _, err := os.Stat(filepath.Join(out, "summary.json")); err != nil {
			t.Errorf("limits.actions %d: %v", tc.actions, err)
		}
	}
}

// TestRerunCountsOnlyItsSeeds is issue 23.7's miscount: a synthesis re-run
// into an output directory that an earlier run with another seeds file
// filled reported 27 of 25 seeds done. The summary counts (and sums the
// stats of) only this run's seeds; the other seeds' lines stay in the
// files.
func TestRerunCountsOnlyItsSeeds(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	other := `{"source_id":"src_0900_0badc0de","index":900,"nodes":5,"model_calls":7,"qa_kept":1}` + "\n" +
		`{"source_id":"src_0901_0badc0df","index":901,"nodes":5,"model_calls":7,"qa_kept":1}` + "\n"
	if err := os.WriteFile(filepath.Join(out, "seeds_done.jsonl"), []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	a := openApp(t, filepath.Join(dir, "data"), testsandbox.OpenFixtures(t, bashResource))
	end := run(t, a, oneBashSeed(t, out))
	var sum synthesis.Summary
	if err := json.Unmarshal(end.Result, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.SeedsTotal != 1 || sum.SeedsDone != 1 || sum.SeedsDone+sum.SeedsFailed > sum.SeedsTotal || sum.ModelCalls >= 14 {
		t.Fatalf("summary: %d of %d seeds done, %d model calls: %+v", sum.SeedsDone, sum.SeedsTotal, sum.ModelCalls, sum)
	}
	b, err := os.ReadFile(filepath.Join(out, "seeds_done.jsonl"))
	if err != nil || !strings.HasPrefix(string(b), other) {
		t.Fatalf("the other seeds' lines: %q %v", b, err)
	}
}

// oneBashSeed is the settings of a synthesis of one seed over bash on
// testdata/e2e/fork_script.jsonl, writing to out.
func oneBashSeed(t *testing.T, out string) map[string]any {
	t.Helper()
	script, err := filepath.Abs("testdata/e2e/fork_script.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{
		"seeds": []string{"A workspace."}, "output_dir": out, "available_tools": []string{"bash:*"},
		"model_name": "m", "models": map[string]any{"m": map[string]any{"provider": "scripted", "script": script}},
		"max_depth": 2, "branching_factor": 2, "depth_threshold": 2, "min_depth": 1, "max_retries": 1,
	}
}

// TestModelErrorStopsSynthesis: a model that cannot serve the calls (the
// endpoint refused the key: model_error) fails the seed that met it, no
// further seed starts, nothing is marked done (a re-run with the key fixed
// runs every seed), and the synthesis ends failed with the code and the
// model's error, its summary written. Before, each failed call was
// re-asked, every branch ended, and the seeds were written as done with
// no tree: the synthesis "succeeded" with nothing.
func TestModelErrorStopsSynthesis(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	script := filepath.Join(dir, "script.jsonl")
	refused := `model "m" at llm.example:8000: HTTP 401 (the endpoint refused the API key in $OPENAI_API_KEY) (after 1 attempt, not retried): Incorrect API key provided`
	line, err := json.Marshal(map[string]any{"error": refused, "code": "model_error"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte(strings.Repeat(string(line)+"\n", 50)), 0o644); err != nil {
		t.Fatal(err)
	}
	a := openApp(t, filepath.Join(dir, "data"), testsandbox.OpenFixtures(t, bashResource))
	doc, err := json.Marshal(map[string]any{
		"seeds": []string{"A workspace.", "Another workspace."}, "output_dir": out, "available_tools": []string{"bash:*"},
		"model_name": "m", "models": map[string]any{"m": map[string]any{"provider": "scripted", "script": script}},
		"max_depth": 2, "branching_factor": 2, "depth_threshold": 2, "min_depth": 1, "max_concurrency": 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	h := testrun.Start(t, a.Executor, workflows.StartRequest{Workflow: synthesis.Name, Settings: doc})
	end := testrun.Wait(t, a.Executor, h.ID)
	if end.Status != state.StatusFailed || end.EndReason != string(operations.CodeModelError) || !strings.Contains(end.Error, "HTTP 401") || strings.HasPrefix(end.Error, "not started") {
		t.Fatalf("synthesis %s %q %q: want failed with model_error naming the refusal", end.Status, end.EndReason, end.Error)
	}
	var sum synthesis.Summary
	if err := json.Unmarshal(end.Result, &sum); err != nil {
		t.Fatalf("result %s: %v", end.Result, err)
	}
	if sum.SeedsDone != 0 || sum.SeedsFailed != 2 || sum.ModelCalls > 2 {
		t.Fatalf("summary: %d done, %d failed, %d model calls: want 0 done, 2 failed, the second seed not started", sum.SeedsDone, sum.SeedsFailed, sum.ModelCalls)
	}
	if b, err := os.ReadFile(filepath.Join(out, "seeds_done.jsonl")); err == nil && len(b) > 0 {
		t.Fatalf("seeds marked done: %s", b)
	}
	if _, err := os.Stat(filepath.Join(out, "summary.json")); err != nil {
		t.Fatalf("no summary: %v", err)
	}
}
