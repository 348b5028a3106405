package rollout_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/flockrun/flock/phases/rollout"
)

// TestBenchmarkShapeErrors: bad rows of the new shapes are refused with
// the row and the field named.
func TestBenchmarkShapeErrors(t *testing.T) {
	for _, c := range []struct{ data, format, want string }{
		{`{"id": "a", "question": [{"role": "assistant", "content": "hi"}]}`, "jsonl", "line 1: question: [0]: the first message after the system prompt must be the user's"},
		{`{"id": "a", "question": [{"role": "user", "content": "q"}, {"role": "system", "content": "s"}]}`, "jsonl", "a system message may only come first"},
		{`{"id": "a", "question": "q", "choices": ["x", "y"], "answer": 2}`, "jsonl", "answer: index 2 is not one of the 2 choices"},
		{`{"id": "a", "question": "q", "choices": ["x", "y"], "answer": "z"}`, "jsonl", `answer: "z" is not a letter A-B`},
		{"id,prompt\na,\n", "csv", "line 2: no question (one of question"},
		{"id\tquestion\na\tq\tz\n", "tsv", "wrong number of fields"},
	} {
		_, err := rollout.ParseBenchmarkAs([]byte(c.data), c.format, nil)
		if !errors.Is(err, rollout.ErrBenchmark) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.data, err, c.want)
		}
	}
	if _, err := rollout.ParseSettings(json.RawMessage(`{"data_path": "b.csv", "agent": {"settings": {"model": "m"}}, "fields": {"prompt": "q"}}`)); !errors.Is(err, rollout.ErrSettings) || !strings.Contains(err.Error(), `"prompt" is not one of id, question`) {
		t.Errorf("unknown field: %v", err)
	}
	tasks, err := rollout.ParseBenchmarkAs([]byte("qid,text,gold,opts\nx,\"Pick, one\",1,\"[\"\"a\"\",\"\"b\"\"]\"\n"), "csv",
		map[string]string{"id": "qid", "question": "text", "answer": "gold", "choices": "opts"})
	if err != nil || len(tasks) != 1 || tasks[0].ID != "x" || strings.Join(tasks[0].References, "|") != "B|b" ||
		!strings.HasPrefix(tasks[0].Question, "Pick, one\n\nA) a\nB) b") {
		t.Fatalf("mapped csv choices: %+v %v", tasks, err)
	}
}
