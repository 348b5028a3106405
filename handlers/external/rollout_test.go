package external_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/grading"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/state"
)

// benchTasks are the rollout's tasks: a sum each, answers chosen so that
// no answer is a substring of another (the script matches on them).
var benchTasks = []struct{ id, expr, answer string }{
	{"t1", "2+3", "5"}, {"t2", "4+4", "8"}, {"t3", "7+5", "12"}, {"t4", "10+11", "21"}, {"t5", "14+16", "30"},
}

// scriptFor writes the scripted model's replies: for each task a
// calculator call answering its question, then the answer answering the
// tool's output.
func scriptFor(t *testing.T, dir string) string {
	// Calls first: an answer line's match ("5") may occur in another
	// task's question ("7+5"), and the first fitting line wins.
	var calls, answers strings.Builder
	for _, task := range benchTasks {
		call, _ := json.Marshal(map[string]any{"match": "What is " + task.expr + "?", "reasoning": "add them",
			"tool_calls": []any{map[string]any{"id": "call_" + task.id, "name": "calculator", "arguments": map[string]any{"expression": task.expr}}},
			"usage":      map[string]any{"prompt_tokens": 40, "completion_tokens": 7}})
		ans, _ := json.Marshal(map[string]any{"match": task.answer, "content": task.answer,
			"usage": map[string]any{"prompt_tokens": 60, "completion_tokens": 2}})
		calls.WriteString(string(call) + "\n")
		answers.WriteString(string(ans) + "\n")
	}
	return writeFile(t, dir, "script.jsonl", calls.String()+answers.String())
}

// TestRolloutPythonAgentScripted runs a rollout of 5 tasks × 3 chains
// whose agent is a Python program using only the standard library
// (urllib) against the gateway, on the scripted model, and checks the
// summary, the gateway's journal and every episode field by field.
func TestRolloutPythonAgentScripted(t *testing.T) {
	py := needPython(t)
	f := newFlock(t)
	script := scriptFor(t, f.dir)
	var bench strings.Builder
	for _, task := range benchTasks {
		line, _ := json.Marshal(map[string]any{"id": task.id, "question": "What is " + task.expr + "?", "answer": task.answer})
		bench.WriteString(string(line) + "\n")
	}
	data := writeFile(t, f.dir, "bench.jsonl", bench.String())
	settings := map[string]any{
		"data_path": data, "output_dir": "results", "num_chains": 3, "max_concurrency": 4,
		"evaluation_metric": "exact_match", "episodes": true,
		"agent":  map[string]any{"workflow": "external", "settings": map[string]any{"command": []string{py, agentPath(t)}, "model": "scripted"}},
		"models": map[string]any{"scripted": map[string]any{"provider": "scripted", "script": script}},
	}
	id := f.start("rollout", settings, "")
	end := f.wait(id, 90*time.Second)
	if end.Status != state.StatusSucceeded {
		t.Fatalf("rollout %s: %s %s", end.Status, end.EndReason, end.Error)
	}
	var sum struct {
		grading.Summary
		Dir          string `json:"dir"`
		EpisodesFile string `json:"episodes_file"`
	}
	if err := json.Unmarshal(end.Result, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Samples != 15 || sum.Correct != 15 || sum.Failed != 0 || len(sum.PassAtK) != 3 || sum.PassAtK[2] != 1 {
		t.Fatalf("summary = %s", end.Result)
	}
	if sum.EpisodesFile == "" {
		t.Fatalf("no episodes file in %s", end.Result)
	}
	eps := readEpisodes(t, filepath.Join(sum.Dir, filepath.Base(sum.EpisodesFile)))
	if len(eps) != 15 {
		t.Fatalf("%d episodes, want 15", len(eps))
	}
	answers := map[string]string{}
	for _, task := range benchTasks {
		answers[task.id] = task.answer
	}
	for _, ep := range eps {
		taskID, chain, err := grading.SplitEpisodeID(ep.ID)
		if err != nil || chain < 0 || chain > 2 {
			t.Fatalf("episode id %q: %v", ep.ID, err)
		}
		ans := answers[taskID]
		expr := strings.TrimSuffix(strings.TrimPrefix(taskQuestion(taskID), "What is "), "?")
		checkEpisode(t, ep, ans, expr)
	}
	// Every episode's steps are ops of a gateway session run: one
	// generate per call, none paid twice.
	runs, _, err := f.app.Store.Runs(t.Context(), state.RunFilter{Workflow: "external.session", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 15 {
		t.Fatalf("%d session runs, want 15", len(runs))
	}
	for _, r := range runs {
		ops, err := f.app.Store.Ops(t.Context(), r.ID, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		gens := 0
		for _, op := range ops {
			for _, g := range operations.Generates(op.Request, op.Result) {
				gens++
				if g.CallID == "" || operations.Generate.Result(g.Result) == nil {
					t.Errorf("%s: a call without its id or answer: %+v", op.ID, g)
				}
			}
		}
		if gens != 2 || r.Usage.Tokens != 109 {
			t.Errorf("session run %s: %d generates, %d tokens; want 2 and 109", r.ID, gens, r.Usage.Tokens)
		}
	}
}

func taskQuestion(id string) string {
	for _, task := range benchTasks {
		if task.id == id {
			return "What is " + task.expr + "?"
		}
	}
	return ""
}

func readEpisodes(t *testing.T, path string) []grading.Episode {
	t.Helper()
	var out []grading.Episode
	for _, l := range testkit.ReadLines(t, path) {
		ep, err := grading.DecodeEpisode([]byte(l))
		if err != nil {
			t.Fatalf("episode line: %v", err)
		}
		out = append(out, ep)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// checkEpisode checks one agent's episode field by field: two steps built
// from the gateway trace, the first a calculator call and the second the
// answer.
func checkEpisode(t *testing.T, ep grading.Episode, answer, expr string) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		b, _ := json.MarshalIndent(ep, "", " ")
		t.Fatalf("episode %s: %s\n%s", ep.ID, fmt.Sprintf(format, args...), b)
	}
	if !ep.IsCorrect || ep.Artifacts.Answer != answer || ep.TerminationReason != grading.TerminationEnvDone {
		fail("is_correct %v, answer %q, termination %q", ep.IsCorrect, ep.Artifacts.Answer, ep.TerminationReason)
	}
	if len(ep.Trajectories) != 1 {
		fail("%d trajectories", len(ep.Trajectories))
	}
	tr := ep.Trajectories[0]
	if tr.Name != "external" || tr.Reward != 1 || tr.Output != answer || len(tr.Steps) != 2 || tr.UID != ep.ID+"/external/0" {
		fail("trajectory name %q reward %v output %q steps %d uid %q", tr.Name, tr.Reward, tr.Output, len(tr.Steps), tr.UID)
	}
	s0, s1 := tr.Steps[0], tr.Steps[1]
	// Step 0: system + user, then the assistant's calculator call.
	if len(s0.ChatCompletions) != 3 || s0.ChatCompletions[0].Role != "system" || s0.ChatCompletions[1].Content != "What is "+expr+"?" {
		fail("step 0 chat_completions %+v", s0.ChatCompletions)
	}
	a0 := s0.ChatCompletions[2]
	if a0.Role != "assistant" || len(a0.ToolCalls) != 1 || a0.ToolCalls[0].Name != "calculator" ||
		a0.ToolCalls[0].Arguments != `{"expression":"`+expr+`"}` || a0.Reasoning != "add them" {
		fail("step 0 reply %+v", a0)
	}
	if s0.ModelResponse != "" || s0.Reasoning != "add them" || s0.Done || !strings.Contains(string(s0.Action), "calculator") {
		fail("step 0 response %q reasoning %q done %v action %s", s0.ModelResponse, s0.Reasoning, s0.Done, s0.Action)
	}
	// Step 1: the history grown by the call and its tool output, then the answer.
	if len(s1.ChatCompletions) != 5 || s1.ChatCompletions[3].Role != "tool" || s1.ChatCompletions[3].Content != answer ||
		s1.ChatCompletions[3].ToolCallID != a0.ToolCalls[0].ID {
		fail("step 1 chat_completions %+v", s1.ChatCompletions)
	}
	if s1.ModelResponse != answer || !s1.Done || s1.ChatCompletions[4].Content != answer {
		fail("step 1 response %q done %v", s1.ModelResponse, s1.Done)
	}
	for i, s := range tr.Steps {
		tid, _ := s.Info["trace_id"].(string)
		op, _ := s.Info["op_id"].(string)
		if tid == "" || !strings.HasSuffix(tid, fmt.Sprintf(":%d", i+1)) || op == "" || s.Info["model"] != "scripted" {
			fail("step %d info %v", i, s.Info)
		}
	}
	if ep.Metrics["score"] != 1 {
		fail("metrics %v", ep.Metrics)
	}
}

// TestRolloutExternalEpisodeTrajectories checks that an external agent's
// own multi-trajectory episode (solver and judge, rLLM's pattern) reaches
// the rollout's episodes with both trajectories named.
func TestRolloutExternalEpisodeTrajectories(t *testing.T) {
	f := newFlock(t)
	data := writeFile(t, f.dir, "bench.jsonl", `{"id": "q", "question": "What is 2+3?", "answer": "5"}`+"\n")
	settings := map[string]any{
		"data_path": data, "output_dir": "results", "num_chains": 2, "episodes": true,
		"agent": map[string]any{"workflow": "external", "settings": map[string]any{"command": `echo '{"trajectories": [{"name": "solver", "steps": []}, {"name": "judge", "steps": []}], "artifacts": {"answer": "5"}}'`}},
	}
	end := f.wait(f.start("rollout", settings, ""), 60*time.Second)
	var sum struct {
		grading.Summary
		Dir          string `json:"dir"`
		EpisodesFile string `json:"episodes_file"`
	}
	if err := json.Unmarshal(end.Result, &sum); err != nil || end.Status != state.StatusSucceeded || sum.Correct != 2 {
		t.Fatalf("rollout %s: %s", end.Status, end.Result)
	}
	for _, ep := range readEpisodes(t, filepath.Join(sum.Dir, filepath.Base(sum.EpisodesFile))) {
		if len(ep.Trajectories) != 2 || ep.Trajectories[0].Name != "solver" || ep.Trajectories[1].Name != "judge" ||
			ep.Trajectories[1].Reward != 1 || !ep.IsCorrect {
			t.Fatalf("episode %+v", ep)
		}
	}
}
