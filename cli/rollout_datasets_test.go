package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// datasetScript answers the questions of the dataset tests.
const datasetScript = `{"match": "What is 2+2?", "tool_calls": [{"name": "submit", "arguments": {"answer": "4"}}]}
{"match": "Name the capital of France.", "tool_calls": [{"name": "submit", "arguments": {"answer": "Paris"}}]}
{"match": "Which planet is red?", "tool_calls": [{"name": "submit", "arguments": {"answer": "Venus"}}]}
{"match": "Say hi please.", "tool_calls": [{"name": "submit", "arguments": {"answer": "hi"}}]}
{"match": "Which city is the capital of Italy?", "tool_calls": [{"name": "submit", "arguments": {"answer": "B"}}]}
{"match": "Which number is prime?", "tool_calls": [{"name": "submit", "arguments": {"answer": "The answer is (A)"}}]}
{"match": "Which ocean is largest?", "tool_calls": [{"name": "submit", "arguments": {"answer": "Pacific"}}]}
{"content": "Final answer: unknown"}
`

// runDataset runs a rollout of the benchmark file name (content written by
// write) with extra config lines and returns the rows by task id.
func runDataset(t *testing.T, name string, write func(path string), extra string, args ...string) (*handRollout, map[string]rolloutRowView) {
	t.Helper()
	h := newHandRollout(t, "")
	write(filepath.Join(h.dir, name))
	h.write("script.jsonl", datasetScript)
	h.write("rollout.yaml", strings.Replace(mustRead(t, h.config), "data_path: bench.jsonl\n", "data_path: "+name+"\n", 1)+extra)
	out, code := h.run(args...)
	if code != 0 {
		t.Fatalf("%s: exit %d\n%s", name, code, out)
	}
	_, _, rows, _ := h.state()
	view := map[string]rolloutRowView{}
	for id, r := range rows {
		view[id] = rolloutRowView{r.Question, r.GroundTruth, r.PredictedAnswer, r.Correct, r.Score}
	}
	return h, view
}

type rolloutRowView struct {
	Question    string
	GroundTruth []string
	Answer      string
	Correct     bool
	Score       float64
}

const mapping = "fields: {id: qid, question: prompt, answer: gold}\n"

// TestRolloutDatasetFormats: JSONL, a JSON list, CSV, TSV and Parquet, each
// with a field mapping, give the same rows (issue 13, point 5).
func TestRolloutDatasetFormats(t *testing.T) {
	rows := [][3]string{{"a", "What is 2+2?", "4"}, {"b", "Name the capital of France.", "Paris"}, {"c", "Which planet is red?", "Mars"}}
	writers := map[string]func(string){
		"bench.jsonl": func(p string) {
			var b strings.Builder
			for _, r := range rows {
				line, _ := json.Marshal(map[string]string{"qid": r[0], "prompt": r[1], "gold": r[2], "question": "not this"})
				b.Write(line)
				b.WriteByte('\n')
			}
			writeFile(t, p, b.String())
		},
		"bench.json": func(p string) {
			var list []map[string]string
			for _, r := range rows {
				list = append(list, map[string]string{"qid": r[0], "prompt": r[1], "gold": r[2]})
			}
			b, _ := json.Marshal(list)
			writeFile(t, p, string(b))
		},
		"bench.csv": func(p string) {
			b := "qid,prompt,gold,level\n"
			for _, r := range rows {
				b += r[0] + ",\"" + r[1] + "\"," + r[2] + ",easy\n"
			}
			writeFile(t, p, b)
		},
		"bench.tsv": func(p string) {
			b := "qid\tprompt\tgold\n"
			for _, r := range rows {
				b += r[0] + "\t" + r[1] + "\t" + r[2] + "\n"
			}
			writeFile(t, p, b)
		},
		"bench.parquet": func(p string) {
			type row struct {
				QID    string `parquet:"qid"`
				Prompt string `parquet:"prompt"`
				Gold   string `parquet:"gold"`
			}
			var rs []row
			for _, r := range rows {
				rs = append(rs, row{r[0], r[1], r[2]})
			}
			var buf bytes.Buffer
			if err := parquet.Write(&buf, rs); err != nil {
				t.Fatal(err)
			}
			writeFile(t, p, buf.String())
		},
	}
	for name, write := range writers {
		t.Run(name, func(t *testing.T) {
			_, got := runDataset(t, name, write, mapping)
			want := map[string]rolloutRowView{
				"a": {"What is 2+2?", []string{"4"}, "4", true, 1},
				"b": {"Name the capital of France.", []string{"Paris"}, "Paris", true, 1},
				"c": {"Which planet is red?", []string{"Mars"}, "Venus", false, 0},
			}
			if len(got) != 3 {
				t.Fatalf("rows %+v", got)
			}
			for id, w := range want {
				g := got[id]
				if g.Question != w.Question || !slices.Equal(g.GroundTruth, w.GroundTruth) || g.Answer != w.Answer || g.Correct != w.Correct {
					t.Fatalf("%s: %+v, want %+v", id, g, w)
				}
			}
		})
	}
}

// TestRolloutDatasetShapes: chat-message inputs, multiple choice (letter,
// index and text targets) graded by the choice metric, shuffle with a seed,
// offset and limit (issue 13, point 5).
func TestRolloutDatasetShapes(t *testing.T) {
	bench := `{"qid": "chat", "prompt": [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Say hi please."}], "gold": "hi"}
{"qid": "mc1", "prompt": "Which city is the capital of Italy?", "opts": ["Milan", "Rome", "Turin"], "gold": "B"}
{"qid": "mc2", "prompt": "Which number is prime?", "opts": ["4", "6", "7"], "gold": 2}
{"qid": "mc3", "prompt": "Which ocean is largest?", "opts": ["Atlantic", "Pacific"], "gold": "Pacific"}
`
	h, got := runDataset(t, "mc.jsonl", func(p string) { writeFile(t, p, bench) },
		"fields: {id: qid, question: prompt, answer: gold, choices: opts}\n", "--metric", "choice")
	if g := got["chat"]; g.Question != "Say hi please." || !g.Correct {
		t.Fatalf("chat %+v", g)
	}
	if g := got["mc1"]; !g.Correct || !slices.Equal(g.GroundTruth, []string{"B", "Rome"}) || !strings.Contains(g.Question, "B) Rome") {
		t.Fatalf("mc1 %+v", g)
	}
	if g := got["mc2"]; g.Correct || !slices.Equal(g.GroundTruth, []string{"C", "7"}) {
		t.Fatalf("mc2 (answered A, target index 2 = C) %+v", g)
	}
	if g := got["mc3"]; !g.Correct || !slices.Equal(g.GroundTruth, []string{"B", "Pacific"}) {
		t.Fatalf("mc3 %+v", g)
	}
	// The chat input reached the agent as messages: its system message
	// replaced react's system prompt.
	man, _, _, _ := h.state()
	eps := mustRead(t, man.Episodes)
	if !strings.Contains(eps, `{"role":"system","content":"Be terse."},{"role":"user","content":"Say hi please."}`) {
		t.Fatalf("chat messages not in the episode:\n%s", eps)
	}

	// offset and limit without shuffle keep file order.
	_, got = runDataset(t, "mc.jsonl", func(p string) { writeFile(t, p, bench) },
		"fields: {id: qid, question: prompt, answer: gold, choices: opts}\noffset: 1\nlimit: 2\n")
	if len(got) != 2 || got["mc1"].Question == "" || got["mc2"].Question == "" {
		t.Fatalf("offset 1 limit 2: %+v", got)
	}
	// shuffle with a seed: the same seed picks the same tasks.
	ids := func(seed string) string {
		_, got := runDataset(t, "mc.jsonl", func(p string) { writeFile(t, p, bench) },
			"fields: {id: qid, question: prompt, answer: gold, choices: opts}\nshuffle: true\nseed: "+seed+"\nlimit: 2\n")
		var k []string
		for id := range got {
			k = append(k, id)
		}
		slices.Sort(k)
		return strings.Join(k, ",")
	}
	first := ids("7")
	if again := ids("7"); again != first || strings.Count(first, ",") != 1 {
		t.Fatalf("seed 7 chose %s then %s", first, again)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
