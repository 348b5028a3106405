package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/phases/rollout"
)

// handBench is a benchmark whose grades are computed by hand below. The
// scripted model answers by the question it sees.
const handBench = `{"id": "q1", "question": "What is 2+2?", "answer": "4"}
{"task_id": "q2", "query": "Name the capital of France.", "ground_truth": "Paris"}
{"id": "q3", "input": "What colour is the sky?", "expected": ["blue"]}
{"id": "q4", "question": "What is 7*8?", "answer": "56"}
{"id": "q5", "question": "Say anything.", "kwargs": {"db_id": "x"}}
`

const handScript = `{"match": "What is 2+2?", "tool_calls": [{"name": "submit", "arguments": {"answer": "4"}}]}
{"match": "What is 3+1?", "tool_calls": [{"name": "submit", "arguments": {"answer": "4"}}]}
{"match": "capital of France", "tool_calls": [{"name": "submit", "arguments": {"answer": "Paris is the capital"}}]}
{"match": "colour is the sky", "tool_calls": [{"name": "submit", "arguments": {"answer": "blue"}}]}
{"match": "7*8", "error": "upstream 500 after 6 attempts", "code": "unavailable"}
{"match": "Say anything", "tool_calls": [{"name": "submit", "arguments": {"answer": "anything"}}]}
`

type handRollout struct {
	t              *testing.T
	dir, data, out string
	config         string
}

func newHandRollout(t *testing.T, extra string) *handRollout {
	t.Helper()
	dir := t.TempDir()
	h := &handRollout{t: t, dir: dir, data: filepath.Join(dir, "data"), out: filepath.Join(dir, "out"), config: filepath.Join(dir, "rollout.yaml")}
	h.write("bench.jsonl", handBench)
	h.write("script.jsonl", handScript)
	h.write("rollout.yaml", `data_path: bench.jsonl
benchmark_name: hand
num_chains: 1
max_concurrency: 2
evaluation_metric: exact_match
models:
  m: {provider: scripted, script: script.jsonl}
agent:
  workflow: react
  settings: {model: m, max_turns: 3}
`+extra)
	return h
}

func (h *handRollout) write(name, content string) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.dir, name), []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// run runs flock rollout with args and returns its output and exit code.
func (h *handRollout) run(args ...string) (string, int) {
	h.t.Helper()
	var out, errb bytes.Buffer
	all := append([]string{"rollout", "--config", h.config, "--data", h.data, "--output-dir", h.out}, args...)
	code := Main(context.Background(), all, &out, &errb)
	return out.String() + errb.String(), code
}

// state returns the manifest, the summary and the current row per task id.
func (h *handRollout) state() (rollout.Manifest, rollout.Summary, map[string]rollout.Row, int) {
	h.t.Helper()
	var man rollout.Manifest
	testkit.ReadJSON(h.t, filepath.Join(h.out, "rollout_hand.json"), &man)
	var sum rollout.Summary
	testkit.ReadJSON(h.t, man.Summary, &sum)
	rows := map[string]rollout.Row{}
	lines := testkit.ReadLines(h.t, man.Results)
	for _, l := range lines {
		var r rollout.Row
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			h.t.Fatal(err)
		}
		rows[r.TaskID] = r
	}
	return man, sum, rows, len(lines)
}

func approx(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// grade is one row's expected grade.
type grade struct {
	score     float64
	correct   bool
	evaluated bool
	success   bool
	metric    string
}

func checkRows(t *testing.T, step string, rows map[string]rollout.Row, want map[string]grade) {
	t.Helper()
	if len(rows) != len(want) {
		t.Fatalf("%s: %d rows, want %d", step, len(rows), len(want))
	}
	for id, w := range want {
		r, ok := rows[id]
		if !ok {
			t.Fatalf("%s: no row for %s", step, id)
		}
		if !approx(r.Score, w.score) || r.Correct != w.correct || r.Evaluated != w.evaluated || r.Success != w.success || r.Metric != w.metric {
			t.Fatalf("%s: %s = score %v correct %v evaluated %v success %v metric %q, want %+v", step, id, r.Score, r.Correct, r.Evaluated, r.Success, r.Metric, w)
		}
	}
}

// TestRolloutStaleGrades runs a hand-graded benchmark, then re-runs it into
// the same output directory after changing the metric, a reference and a
// question, and finally with --regrade; every row and the summary are
// checked after each step (issue 13, point 1).
func TestRolloutStaleGrades(t *testing.T) {
	h := newHandRollout(t, "")
	em := "exact_match"
	// Run 1, exact_match: q1 right, q2 "Paris is the capital" wrong, q3
	// right, q4's agent fails (0), q5 has no reference (not graded).
	if out, code := h.run(); code != 0 {
		t.Fatalf("run 1: exit %d\n%s", code, out)
	}
	man, sum, rows, lines := h.state()
	checkRows(t, "run 1", rows, map[string]grade{
		"q1": {1, true, true, true, em}, "q2": {0, false, true, true, em}, "q3": {1, true, true, true, em},
		"q4": {0, false, true, false, em}, "q5": {0, false, false, true, em}})
	if !approx(sum.MeanScore, 2.0/4) || sum.Correct != 2 || sum.NotEvaluated != 1 || sum.Metric != em || lines != 5 {
		t.Fatalf("run 1 summary %+v (%d lines)", sum.Summary, lines)
	}
	if man.Grading.BenchmarkSHA256 == "" || man.Grading.Metric != em {
		t.Fatalf("manifest grading %+v", man.Grading)
	}
	first := rows

	// Run 2, --metric contains_answer: every kept row is re-graded from its
	// stored answer (q5 too: ungraded, but labelled with the metric; no
	// agent runs again but q4's failure), and the output says so. q2 now
	// scores 1.
	ca := "contains_answer"
	out, code := h.run("--metric", ca)
	if code != 0 {
		t.Fatalf("run 2: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "re-grade 4") || !strings.Contains(out, "metric exact_match → contains_answer") {
		t.Fatalf("run 2 does not say it re-grades:\n%s", out)
	}
	_, sum, rows, lines = h.state()
	checkRows(t, "run 2", rows, map[string]grade{
		"q1": {1, true, true, true, ca}, "q2": {1, true, true, true, ca}, "q3": {1, true, true, true, ca},
		"q4": {0, false, true, false, ca}, "q5": {0, false, false, true, ca}})
	for _, id := range []string{"q1", "q2", "q3", "q5"} {
		if rows[id].RunID != first[id].RunID {
			t.Fatalf("run 2: %s's agent ran again (%s, was %s)", id, rows[id].RunID, first[id].RunID)
		}
	}
	if rows["q4"].RunID == first["q4"].RunID {
		t.Fatal("run 2: the failed q4 was not retried")
	}
	if !approx(sum.MeanScore, 3.0/4) || sum.Correct != 3 || sum.Metric != ca || sum.Regraded != 4 {
		t.Fatalf("run 2 summary %+v regraded %d", sum.Summary, sum.Regraded)
	}
	// The results file holds one row per sample, the re-graded one: not
	// the exact_match rows and the contains_answer rows side by side.
	if lines != 5 {
		t.Fatalf("run 2: %d lines in the results file, want 5", lines)
	}

	// Run 3: q3's reference changes to "azure": q3 alone is re-graded (0),
	// from its stored answer.
	h.write("bench.jsonl", strings.Replace(handBench, `["blue"]`, `["azure"]`, 1))
	if out, code := h.run("--metric", ca); code != 0 || !strings.Contains(out, "re-grade 1") {
		t.Fatalf("run 3: exit %d\n%s", code, out)
	}
	_, sum, rows, lines = h.state()
	checkRows(t, "run 3", rows, map[string]grade{
		"q1": {1, true, true, true, ca}, "q2": {1, true, true, true, ca}, "q3": {0, false, true, true, ca},
		"q4": {0, false, true, false, ca}, "q5": {0, false, false, true, ca}})
	if rows["q3"].RunID != first["q3"].RunID || len(rows["q3"].GroundTruth) != 1 || rows["q3"].GroundTruth[0] != "azure" {
		t.Fatalf("run 3: q3 %+v", rows["q3"])
	}
	if !approx(sum.MeanScore, 2.0/4) || sum.Correct != 2 || sum.Regraded != 1 || lines != 5 {
		t.Fatalf("run 3 summary %+v (%d lines)", sum.Summary, lines)
	}

	// Run 4: q1's question changes: q1 alone runs again (q4 is retried
	// as always); nothing is re-graded.
	edited := strings.Replace(strings.Replace(handBench, `["blue"]`, `["azure"]`, 1), "What is 2+2?", "What is 3+1?", 1)
	h.write("bench.jsonl", edited)
	out, code = h.run("--metric", ca)
	if code != 0 || !strings.Contains(out, "2 samples to run") {
		t.Fatalf("run 4: exit %d\n%s", code, out)
	}
	_, sum, rows, lines = h.state()
	checkRows(t, "run 4", rows, map[string]grade{
		"q1": {1, true, true, true, ca}, "q2": {1, true, true, true, ca}, "q3": {0, false, true, true, ca},
		"q4": {0, false, true, false, ca}, "q5": {0, false, false, true, ca}})
	if rows["q1"].RunID == first["q1"].RunID || rows["q1"].Question != "What is 3+1?" || rows["q2"].RunID != first["q2"].RunID {
		t.Fatalf("run 4: q1 %+v", rows["q1"])
	}
	if sum.Regraded != 0 || sum.Rerun != 1 || !approx(sum.MeanScore, 2.0/4) || lines != 5 {
		t.Fatalf("run 4 summary %+v rerun %d (%d lines)", sum.Summary, sum.Rerun, lines)
	}

	// --regrade with exact_match: every saved answer re-graded, no agent
	// runs (q4 stays failed and is not retried).
	q4 := rows["q4"].RunID
	out, code = h.run("--regrade")
	if code != 0 || !strings.Contains(out, "0 samples to run") {
		t.Fatalf("regrade: exit %d\n%s", code, out)
	}
	_, sum, rows, lines = h.state()
	checkRows(t, "regrade", rows, map[string]grade{
		"q1": {1, true, true, true, em}, "q2": {0, false, true, true, em}, "q3": {0, false, true, true, em},
		"q4": {0, false, true, false, em}, "q5": {0, false, false, true, em}})
	if rows["q4"].RunID != q4 || sum.Regraded != 5 || !approx(sum.MeanScore, 1.0/4) || sum.Metric != em || lines != 5 {
		t.Fatalf("regrade summary %+v regraded %d (%d lines)", sum.Summary, sum.Regraded, lines)
	}
}

// TestRolloutVerifierExitStatus: a verifier that prints valid JSON and then
// exits 3 is an eval error scoring 0, whatever it printed; the verifier
// sees the documented environment (issue 13, point 3).
func TestRolloutVerifierExitStatus(t *testing.T) {
	h := newHandRollout(t, "task_ids: [q1, q3]\n")
	h.write("bench.jsonl", `{"id": "q1", "question": "What is 2+2?", "answer": "4", "verifier": "echo '{\"reward\": 1, \"is_correct\": true}'; exit 3"}
{"id": "q3", "question": "What colour is the sky?", "answer": ["blue", "azure"], "verifier": "printf '%s|%s|%s|%s\\n' \"$FLOCK_TASK_ID\" \"$FLOCK_CHAIN\" \"$FLOCK_ANSWER\" \"$FLOCK_GROUND_TRUTH\" > seen.txt; test \"$(basename \"$PWD\")\" = t00001-c0 && echo '{\"reward\": 1}'"}
`)
	if out, code := h.run(); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	_, sum, rows, _ := h.state()
	r := rows["q1"]
	if r.Score != 0 || r.Correct || !r.Evaluated || !strings.Contains(r.EvalError, "exit 3") {
		t.Fatalf("q1 (verifier exits 3 after valid JSON) %+v", r)
	}
	if r := rows["q3"]; r.Score != 1 || !r.Correct || r.EvalError != "" {
		t.Fatalf("q3 %+v", r)
	}
	seen, err := os.ReadFile(filepath.Join(rows["q3"].WorkDir, "seen.txt"))
	if err != nil || string(seen) != "q3|0|blue|[\"blue\",\"azure\"]\n" {
		t.Fatalf("verifier environment %q %v", seen, err)
	}
	if sum.Correct != 1 || sum.Errors["eval_error"] != 1 || !approx(sum.MeanScore, 0.5) {
		t.Fatalf("summary %+v errors %v", sum.Summary, sum.Errors)
	}
}

// groupBench: task a has chains graded 1, 0, 1 and a failed agent; task u
// has no reference (not graded); every chain of task f fails.
const groupBench = `{"id": "a", "question": "Is the apple red?", "answer": "yes"}
{"id": "u", "question": "Tell me something untestable."}
{"id": "f", "question": "Which fish is blue?", "answer": "tang"}
`

const groupScript = `{"match": "Which fish is blue?", "error": "upstream 503"}
{"tool_calls": [{"name": "bash", "arguments": {"command": "basename \"$PWD\""}}]}
{"match": "t00000-c0", "tool_calls": [{"name": "submit", "arguments": {"answer": "yes"}}]}
{"match": "t00000-c1", "tool_calls": [{"name": "submit", "arguments": {"answer": "no"}}]}
{"match": "t00000-c2", "tool_calls": [{"name": "submit", "arguments": {"answer": "yes"}}]}
{"match": "t00000-c3", "error": "upstream 500 after 6 attempts"}
{"match": "t00001-c", "tool_calls": [{"name": "submit", "arguments": {"answer": "whatever"}}]}
`

// groupLine is a line of the groups file as a trainer reads it.
type groupLine struct {
	GroupID      string `json:"group_id"`
	Trajectories []struct {
		UID    string  `json:"uid"`
		Name   string  `json:"name"`
		Reward float64 `json:"reward"`
		Output string  `json:"output"`
		Steps  []struct {
			ID   string          `json:"id"`
			Done bool            `json:"done"`
			Info json.RawMessage `json:"info"`
		} `json:"steps"`
	} `json:"trajectories"`
	Metadata []struct {
		TaskID            string `json:"task_id"`
		RolloutIdx        int    `json:"rollout_idx"`
		TerminationReason string `json:"termination_reason"`
		IsCorrect         bool   `json:"is_correct"`
	} `json:"metadata"`
	Advantages map[string][]float64 `json:"advantages"`
}

func readGroups(t *testing.T, path string) map[string]groupLine {
	t.Helper()
	out := map[string]groupLine{}
	for _, l := range testkit.ReadLines(t, path) {
		var g groupLine
		if err := json.Unmarshal([]byte(l), &g); err != nil {
			t.Fatal(err)
		}
		out[g.GroupID] = g
	}
	return out
}

func checkAdv(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %v, want %v", what, got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-5 {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}
}

// TestRolloutGroups checks the GRPO/RLOO groups by hand: a failed chain is
// in its group with reward 0 and its termination reason, a task whose
// chains all failed has a group, an ungraded task has none; the lines have
// rLLM's shape; a re-run rewrites the episodes without duplicate ids
// (issue 13, point 2).
func TestRolloutGroups(t *testing.T) {
	h := newHandRollout(t, "num_chains: 4\nadvantages: [grpo, rloo]\n")
	h.write("rollout.yaml", strings.Replace(mustRead(t, h.config), "num_chains: 1\n", "", 1))
	h.write("bench.jsonl", groupBench)
	h.write("script.jsonl", groupScript)
	if out, code := h.run(); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	man, sum, _, _ := h.state()
	if sum.Failed != 5 || sum.NotEvaluated != 4 || !approx(sum.MeanScore, 2.0/8) {
		t.Fatalf("summary %+v", sum.Summary)
	}
	groups := readGroups(t, man.Groups)
	if len(groups) != 2 {
		t.Fatalf("groups %v, want a:react and f:react", groups)
	}
	a := groups["a:react"]
	if len(a.Trajectories) != 4 || len(a.Metadata) != 4 {
		t.Fatalf("a:react %+v", a)
	}
	wantTerm := []string{"env_done", "env_done", "env_done", "error"}
	for i, m := range a.Metadata {
		if m.TaskID != "a" || m.RolloutIdx != i || m.TerminationReason != wantTerm[i] || m.IsCorrect != (i == 0 || i == 2) {
			t.Fatalf("a:react metadata[%d] %+v", i, m)
		}
		if tr := a.Trajectories[i]; tr.Reward != map[bool]float64{true: 1, false: 0}[i == 0 || i == 2] || tr.UID == "" || tr.Name != "react" {
			t.Fatalf("a:react trajectories[%d] %+v", i, tr)
		}
	}
	if tr := a.Trajectories[0]; tr.Output != "yes" || len(tr.Steps) != 2 || tr.Steps[0].ID == "" || tr.Steps[0].Done || !tr.Steps[1].Done || len(tr.Steps[1].Info) == 0 {
		t.Fatalf("a:react trajectories[0] %+v", tr)
	}
	// Rewards 1, 0, 1, 0: mean 0.5, sample std sqrt(1/3).
	g := 0.5 / math.Sqrt(1.0/3)
	checkAdv(t, "a grpo", a.Advantages["grpo"], []float64{g, -g, g, -g})
	checkAdv(t, "a rloo", a.Advantages["rloo"], []float64{2.0 / 3, -2.0 / 3, 2.0 / 3, -2.0 / 3})
	f := groups["f:react"]
	if len(f.Trajectories) != 4 || f.Metadata[3].TerminationReason != "error" {
		t.Fatalf("f:react %+v", f)
	}
	checkAdv(t, "f grpo", f.Advantages["grpo"], []float64{0, 0, 0, 0})

	// Episodes carry rLLM's fields.
	var ep struct {
		ID       string          `json:"id"`
		Metadata json.RawMessage `json:"metadata"`
	}
	eps := testkit.ReadLines(t, man.Episodes)
	if len(eps) != 12 || json.Unmarshal([]byte(eps[0]), &ep) != nil || len(ep.Metadata) < 3 {
		t.Fatalf("%d episodes; first %s", len(eps), eps[0])
	}

	// A re-run retries the 5 failed samples and rewrites the episodes file:
	// still 12 lines, one per id.
	if out, code := h.run(); code != 0 || !strings.Contains(out, "5 samples to run") {
		t.Fatalf("re-run: exit %d\n%s", code, out)
	}
	seen := map[string]bool{}
	for _, l := range testkit.ReadLines(t, man.Episodes) {
		if json.Unmarshal([]byte(l), &ep) != nil || seen[ep.ID] {
			t.Fatalf("episode line %s (duplicate or bad)", l)
		}
		seen[ep.ID] = true
	}
	if len(seen) != 12 {
		t.Fatalf("%d episodes after the re-run", len(seen))
	}

	// groups_drop_failed leaves the failed chains out: a has 3 members, f
	// no group.
	h.write("rollout.yaml", mustRead(t, h.config)+"groups_drop_failed: true\n")
	if out, code := h.run("--regrade"); code != 0 {
		t.Fatalf("regrade: exit %d\n%s", code, out)
	}
	groups = readGroups(t, man.Groups)
	if len(groups) != 1 || len(groups["a:react"].Trajectories) != 3 {
		t.Fatalf("groups with failures dropped: %+v", groups)
	}
	checkAdv(t, "a rloo, failures dropped", groups["a:react"].Advantages["rloo"], []float64{0.5, -1, 0.5})
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRolloutEndReasons: a failed sample's end_reason is a short code with
// the message in its own field, and the summary has no accuracy that
// merely repeats mean_score (issue 13, point 7).
func TestRolloutEndReasons(t *testing.T) {
	h := newHandRollout(t, "task_ids: [q1, q4]\n")
	if out, code := h.run(); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	man, sum, rows, _ := h.state()
	if r := rows["q4"]; r.EndReason != "unavailable" || !strings.Contains(r.Error, "upstream 500 after 6 attempts") || r.Success {
		t.Fatalf("q4 end_reason %q error %q", r.EndReason, r.Error)
	}
	if r := rows["q1"]; r.EndReason != "submitted" || r.Error != "" {
		t.Fatalf("q1 end_reason %q error %q", r.EndReason, r.Error)
	}
	if sum.FailedBy["unavailable"] != 1 || len(sum.FailedBy) != 1 {
		t.Fatalf("failed_by %v", sum.FailedBy)
	}
	raw := mustRead(t, man.Summary)
	if strings.Contains(raw, `"accuracy"`) {
		t.Fatalf("summary still has accuracy:\n%s", raw)
	}

	// An agent that hits its token limit ends with limit_tokens.
	h2 := newHandRollout(t, "task_ids: [q1]\n")
	h2.write("rollout.yaml", strings.Replace(mustRead(t, h2.config), "max_turns: 3}", "max_turns: 3, limits: {tokens: 5}}", 1))
	if out, code := h2.run(); code != 0 {
		t.Fatalf("limits: exit %d\n%s", code, out)
	}
	_, sum, rows, _ = h2.state()
	if r := rows["q1"]; r.EndReason != "limit_tokens" || r.Success || r.Error == "" {
		t.Fatalf("q1 with a token limit: end_reason %q error %q status %q", r.EndReason, r.Error, r.Status)
	}
}

type rolloutRow = rollout.Row

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// TestRolloutRegradeVerifier: changing the verifier re-grades the stored
// sample by running the new verifier in the agent's original work
// directory, without running the agent again (issue 13, point 1).
func TestRolloutRegradeVerifier(t *testing.T) {
	h := newHandRollout(t, "verifier: {command: 'test \"$(cat out.txt)\" = hello && echo 1 || echo 0'}\n")
	h.write("bench.jsonl", `{"id": "w", "question": "Write hello into out.txt."}`+"\n")
	h.write("script.jsonl", `{"match": "Write hello", "tool_calls": [{"name": "bash", "arguments": {"command": "printf hello > out.txt"}}, {"name": "submit", "arguments": {"answer": "done"}}]}`+"\n")
	if out, code := h.run(); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	_, sum, rows, _ := h.state()
	first := rows["w"]
	if first.Score != 1 || first.Metric != "verifier" {
		t.Fatalf("first run %+v", first)
	}
	// The summary names the scorer mean_score is of: the verifier, not
	// the evaluation_metric it replaced.
	if sum.Metric != "verifier" || sum.Primary != "verifier" {
		t.Fatalf("summary metric %q primary %q, want verifier", sum.Metric, sum.Primary)
	}
	h.write("rollout.yaml", strings.Replace(mustRead(t, h.config), "= hello", "= bye", 1))
	out, code := h.run()
	if code != 0 || !strings.Contains(out, "verifier changed") || !strings.Contains(out, "0 samples to run, re-grade 1") {
		t.Fatalf("re-run: exit %d\n%s", code, out)
	}
	_, sum, rows, _ = h.state()
	if r := rows["w"]; r.Score != 0 || r.RunID != first.RunID || r.WorkDir != first.WorkDir || r.EvalError != "" || sum.Regraded != 1 {
		t.Fatalf("re-graded %+v", r)
	}
}
