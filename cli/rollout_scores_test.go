package cli

import (
	"strings"
	"testing"

	"github.com/flockrun/flock/internal/testkit"
)

const scoresBench = `{"id": "a", "question": "What is 2+2?", "answer": "4"}
{"id": "b", "question": "Name the capital of France.", "answer": "Paris"}
`

const scoresScript = `{"tool_calls": [{"name": "bash", "arguments": {"command": "basename \"$PWD\""}}]}
{"match": "t00000-c0", "tool_calls": [{"name": "submit", "arguments": {"answer": "4"}}]}
{"match": "t00000-c1", "tool_calls": [{"name": "submit", "arguments": {"answer": "4 apples"}}]}
{"match": "t00000-c2", "tool_calls": [{"name": "submit", "arguments": {"answer": "5"}}]}
{"match": "t00001-c0", "tool_calls": [{"name": "submit", "arguments": {"answer": "Paris"}}]}
{"match": "t00001-c1", "tool_calls": [{"name": "submit", "arguments": {"answer": "Lyon"}}]}
{"match": "t00001-c2", "tool_calls": [{"name": "submit", "arguments": {"answer": "Paris"}}]}
`

// TestRolloutScores: several metrics and a verifier per sample, each in the
// rows and the summary, one primary; epoch reducers over the chains
// (issue 13, point 6). Grades by hand:
//
//	          a: "4"  "4 apples"  "5"    b: "Paris" "Lyon" "Paris"
//	exact_match 1      0           0         1       0      1
//	contains    1      1           0         1       0      1
//	f1          1      2/3         0         1       0      1
//	nospace     1      0           1         1       1      1
func TestRolloutScores(t *testing.T) {
	h := newHandRollout(t, `metrics: [contains_answer, f1]
verifiers:
  nospace: 'case "$FLOCK_ANSWER" in *" "*) echo 0;; *) echo 1;; esac'
reducers: [mean, max, mode, at_least_2]
`)
	h.write("rollout.yaml", strings.Replace(mustRead(t, h.config), "num_chains: 1\n", "num_chains: 3\n", 1))
	h.write("bench.jsonl", scoresBench)
	h.write("script.jsonl", scoresScript)
	if out, code := h.run(); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	man, sum, _, _ := h.state()
	want := map[string][3]map[string]float64{
		"a": {{"exact_match": 1, "contains_answer": 1, "f1": 1, "nospace": 1}, {"exact_match": 0, "contains_answer": 1, "f1": 2.0 / 3, "nospace": 0},
			{"exact_match": 0, "contains_answer": 0, "f1": 0, "nospace": 1}},
		"b": {{"exact_match": 1, "contains_answer": 1, "f1": 1, "nospace": 1}, {"exact_match": 0, "contains_answer": 0, "f1": 0, "nospace": 1},
			{"exact_match": 1, "contains_answer": 1, "f1": 1, "nospace": 1}},
	}
	rows := allRows(t, man.Results)
	if len(rows) != 6 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		w := want[r.TaskID][r.Chain]
		if len(r.Scores) != len(w) || !approx(r.Score, w["exact_match"]) || r.Metric != "exact_match" {
			t.Fatalf("%s: scores %v score %v metric %s, want %v", r.EpisodeID, r.Scores, r.Score, r.Metric, w)
		}
		for k, v := range w {
			if !approx(r.Scores[k], v) {
				t.Fatalf("%s: %s = %v, want %v (all %v)", r.EpisodeID, k, r.Scores[k], v, r.Scores)
			}
		}
	}
	means := map[string]float64{"exact_match": 0.5, "contains_answer": 4.0 / 6, "f1": 11.0 / 18, "nospace": 5.0 / 6}
	for k, v := range means {
		if !approx(sum.ScoreMeans[k], v) {
			t.Fatalf("score_means %v, want %v", sum.ScoreMeans, means)
		}
	}
	// Reducers over the primary score per task, then the mean over tasks:
	// mean (1/3, 2/3), max (1, 1), mode (0, 1), at_least_2 (0, 1).
	reduced := map[string]float64{"mean": 0.5, "max": 1, "mode": 0.5, "at_least_2": 0.5}
	for k, v := range reduced {
		if !approx(sum.Reduced[k], v) {
			t.Fatalf("reduced %v, want %v", sum.Reduced, reduced)
		}
	}
	if sum.Primary != "exact_match" || !approx(sum.MeanScore, 0.5) {
		t.Fatalf("primary %q mean %v", sum.Primary, sum.MeanScore)
	}

	// primary f1: a re-run re-grades every row (the primary changed) and
	// the score is f1's.
	h.write("rollout.yaml", mustRead(t, h.config)+"primary: f1\n")
	out, code := h.run()
	if code != 0 || !strings.Contains(out, "re-grade 6") {
		t.Fatalf("primary f1: exit %d\n%s", code, out)
	}
	_, sum, _, _ = h.state()
	if sum.Primary != "f1" || !approx(sum.MeanScore, 11.0/18) || sum.Correct != 3 || !approx(sum.Reduced["max"], 1) {
		t.Fatalf("primary f1 summary %+v reduced %v", sum.Summary, sum.Reduced)
	}
}

func allRows(t *testing.T, path string) []rolloutRow {
	t.Helper()
	byKey := map[string]rolloutRow{}
	var order []string
	for _, l := range testkit.ReadLines(t, path) {
		var r rolloutRow
		if err := jsonUnmarshal(l, &r); err != nil {
			t.Fatal(err)
		}
		if _, ok := byKey[r.EpisodeID]; !ok {
			order = append(order, r.EpisodeID)
		}
		byKey[r.EpisodeID] = r
	}
	out := make([]rolloutRow, 0, len(order))
	for _, k := range order {
		out = append(out, byKey[k])
	}
	return out
}
