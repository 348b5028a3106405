package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
{"match": "7*8", "error": "upstream 500 after 6 attempts"}
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
	readJSONFile(h.t, filepath.Join(h.out, "rollout_hand.json"), &man)
	var sum rollout.Summary
	readJSONFile(h.t, man.Summary, &sum)
	rows := map[string]rollout.Row{}
	lines := jsonLines(h.t, man.Results)
	for _, l := range lines {
		var r rollout.Row
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			h.t.Fatal(err)
		}
		rows[r.TaskID] = r
	}
	return man, sum, rows, len(lines)
}

func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func jsonLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			out = append(out, sc.Text())
		}
	}
	return out
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
	_, sum, rows, _ = h.state()
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

	// Run 3: q3's reference changes to "azure": q3 alone is re-graded (0),
	// from its stored answer.
	h.write("bench.jsonl", strings.Replace(handBench, `["blue"]`, `["azure"]`, 1))
	if out, code := h.run("--metric", ca); code != 0 || !strings.Contains(out, "re-grade 1") {
		t.Fatalf("run 3: exit %d\n%s", code, out)
	}
	_, sum, rows, _ = h.state()
	checkRows(t, "run 3", rows, map[string]grade{
		"q1": {1, true, true, true, ca}, "q2": {1, true, true, true, ca}, "q3": {0, false, true, true, ca},
		"q4": {0, false, true, false, ca}, "q5": {0, false, false, true, ca}})
	if rows["q3"].RunID != first["q3"].RunID || len(rows["q3"].GroundTruth) != 1 || rows["q3"].GroundTruth[0] != "azure" {
		t.Fatalf("run 3: q3 %+v", rows["q3"])
	}
	if !approx(sum.MeanScore, 2.0/4) || sum.Correct != 2 || sum.Regraded != 1 {
		t.Fatalf("run 3 summary %+v", sum.Summary)
	}

	// Run 4: q1's question changes: q1 alone runs again (q4 is retried
	// as always); nothing is re-graded.
	edited := strings.Replace(strings.Replace(handBench, `["blue"]`, `["azure"]`, 1), "What is 2+2?", "What is 3+1?", 1)
	h.write("bench.jsonl", edited)
	out, code = h.run("--metric", ca)
	if code != 0 || !strings.Contains(out, "2 samples to run") {
		t.Fatalf("run 4: exit %d\n%s", code, out)
	}
	_, sum, rows, _ = h.state()
	checkRows(t, "run 4", rows, map[string]grade{
		"q1": {1, true, true, true, ca}, "q2": {1, true, true, true, ca}, "q3": {0, false, true, true, ca},
		"q4": {0, false, true, false, ca}, "q5": {0, false, false, true, ca}})
	if rows["q1"].RunID == first["q1"].RunID || rows["q1"].Question != "What is 3+1?" || rows["q2"].RunID != first["q2"].RunID {
		t.Fatalf("run 4: q1 %+v", rows["q1"])
	}
	if sum.Regraded != 0 || sum.Rerun != 1 || !approx(sum.MeanScore, 2.0/4) {
		t.Fatalf("run 4 summary %+v rerun %d", sum.Summary, sum.Rerun)
	}

	// --regrade with exact_match: every saved answer re-graded, no agent
	// runs (q4 stays failed and is not retried).
	q4 := rows["q4"].RunID
	out, code = h.run("--regrade")
	if code != 0 || !strings.Contains(out, "0 samples to run") {
		t.Fatalf("regrade: exit %d\n%s", code, out)
	}
	_, sum, rows, _ = h.state()
	checkRows(t, "regrade", rows, map[string]grade{
		"q1": {1, true, true, true, em}, "q2": {0, false, true, true, em}, "q3": {0, false, true, true, em},
		"q4": {0, false, true, false, em}, "q5": {0, false, false, true, em}})
	if rows["q4"].RunID != q4 || sum.Regraded != 5 || !approx(sum.MeanScore, 1.0/4) || sum.Metric != em {
		t.Fatalf("regrade summary %+v regraded %d", sum.Summary, sum.Regraded)
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
