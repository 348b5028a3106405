package react_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/agent"
	"github.com/flockrun/flock/phases/phasetest"
	"github.com/flockrun/flock/phases/react"
)

func reactState(t *testing.T, loop string, msgs ...react.Message) *phasetest.State {
	t.Helper()
	st := &phasetest.State{Vars: map[string]json.RawMessage{"react": json.RawMessage(loop)}}
	for _, m := range msgs {
		e := phases.MustEntry(react.EntryMessage, m)
		e.Seq = uint64(len(st.Log) + 1)
		st.Log = append(st.Log, e)
	}
	return st
}

func msgOf(role, content string, calls ...operations.ToolCall) react.Message {
	return react.Message{Message: operations.Message{Role: role, Content: content, ToolCalls: calls}}
}

func observe(t *testing.T, st *phasetest.State, settings string, results ...operations.Result) []operations.Message {
	t.Helper()
	out, err := observePhase(phases.Input{Run: phases.RunInfo{ID: "trim", Workflow: react.Name, Phase: react.PhaseObserve, Step: 5,
		Task: "t", Settings: json.RawMessage(settings), Now: phasetest.Now, WorkDir: "/work"}, State: st, Results: results})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Ops) != 1 || operations.Generate.Params(out.Ops[0]) == nil {
		t.Fatalf("want one generate, got %+v (end %+v)", out.Ops, out.End)
	}
	return operations.Generate.Params(out.Ops[0]).Messages
}

// TestNewestOutputSurvivesContextChars: with context_chars, the newest
// turn's call and its output stay in the next prompt, the output clipped
// head and tail, and the prompt stays within context_chars (issue 9,
// point 10).
func TestNewestOutputSurvivesContextChars(t *testing.T) {
	const budget = 3000
	var b strings.Builder
	for i := 0; b.Len() < 30000; i++ {
		fmt.Fprintf(&b, "output line %05d of the listing\n", i)
	}
	lines := strings.Split(b.String(), "\n")
	head, tail := lines[0], lines[len(lines)-2]
	st := reactState(t, `{"turns":2,"seg_turns":2,"pending":[{"id":"c2","name":"bash","op":0}]}`,
		msgOf("system", "You solve tasks."), msgOf("user", "List the big directory."),
		msgOf("assistant", "First a look.", operations.ToolCall{ID: "c1", Name: "bash", Arguments: `{"command":"pwd"}`}),
		react.Message{Message: operations.Message{Role: "tool", ToolCallID: "c1", Content: strings.Repeat("/work ", 100)}},
		msgOf("assistant", "Listing it.", operations.ToolCall{ID: "c2", Name: "bash", Arguments: `{"command":"ls -R /big"}`}))
	res := operations.Result{Kind: operations.KindBash, Data: &operations.BashResult{Stdout: b.String()}}
	msgs := observe(t, st, fmt.Sprintf(`{"model":"m","context_chars":%d,"output_limit":%d}`, budget, budget), res)
	total := 0
	for _, m := range msgs {
		total += agent.Size(m)
	}
	if total > budget {
		t.Errorf("prompt is %d characters, context_chars %d", total, budget)
	}
	last := msgs[len(msgs)-1]
	call := msgs[len(msgs)-2]
	if last.Role != "tool" || last.ToolCallID != "c2" || len(call.ToolCalls) != 1 || call.ToolCalls[0].ID != "c2" {
		t.Fatalf("the newest call and its result are not the prompt's end: %+v / %+v", call, last.Role)
	}
	if !strings.Contains(last.Content, head) || !strings.Contains(last.Content, tail) || !strings.Contains(last.Content, " characters trimmed ...]") {
		t.Fatalf("result not clipped head and tail: %s", agent.Line(last.Content, 300))
	}
}

// TestFoldKeepsTheTurnsOtherResults: a turn that calls summarize and bash
// folds the context, and the bash result is still in the next prompt
// (it used to vanish with the old segment).
func TestFoldKeepsTheTurnsOtherResults(t *testing.T) {
	st := reactState(t, `{"turns":3,"seg_turns":3,"pending":[{"id":"c9","name":"bash","op":0},{"id":"f1","name":"summarize","op":-1,"text":"Files listed."}]}`,
		msgOf("system", "You solve tasks."), msgOf("user", "Count the files."),
		msgOf("assistant", "Counting while folding.", operations.ToolCall{ID: "c9", Name: "bash", Arguments: `{"command":"ls | wc -l"}`},
			operations.ToolCall{ID: "f1", Name: "summarize", Arguments: `{"summary":"Files listed."}`}))
	res := operations.Result{Kind: operations.KindBash, Data: &operations.BashResult{Stdout: "FOLD-BASH-OUT 17\n"}}
	msgs := observe(t, st, `{"model":"m","fold":{"summarize":true}}`, res)
	var all strings.Builder
	for _, m := range msgs {
		all.WriteString(m.Role + ": " + m.Content + "\n")
	}
	if !strings.Contains(all.String(), "[Previous Summary]: Files listed.") {
		t.Fatalf("no summary in the folded prompt:\n%s", all.String())
	}
	if !strings.Contains(all.String(), "FOLD-BASH-OUT 17") {
		t.Fatalf("the bash result of the folding turn vanished:\n%s", all.String())
	}
	open := map[string]bool{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
		if m.Role == "tool" {
			if !open[m.ToolCallID] {
				t.Fatalf("tool message answers %q, which no kept call made", m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		}
	}
	if len(open) > 0 {
		t.Fatalf("calls without an answer: %v", open)
	}
}

// TestOutputLimitOverContextChars: output_limit above context_chars is
// refused, naming both keys; unset, it defaults to at most context_chars.
func TestOutputLimitOverContextChars(t *testing.T) {
	_, err := react.ParseSettings(json.RawMessage(`{"model":"m","context_chars":2000,"output_limit":4000}`))
	if err == nil || !strings.Contains(err.Error(), "output_limit") || !strings.Contains(err.Error(), "context_chars") {
		t.Fatalf("err = %v, want an error naming output_limit and context_chars", err)
	}
	s, err := react.ParseSettings(json.RawMessage(`{"model":"m","context_chars":2000}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.OutputLimit != 2000 {
		t.Fatalf("output_limit = %d, want 2000", s.OutputLimit)
	}
}

// observePhase calls react's observe phase as the workflow declares it.
func observePhase(in phases.Input) (phases.Output, error) {
	wf := react.Workflow()
	spec, _ := wf.Phase(react.PhaseObserve)
	return spec.Run(in)
}
