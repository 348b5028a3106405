package simulated

import (
	"encoding/json"
	"testing"

	"github.com/flockrun/flock/operations"
)

// TestSandboxActor walks the simulated actor through a database question
// and a document question with the sandbox tools offered, feeding back
// the sandbox's envelopes: list_databases, the tables, a count of the
// table the question names, submit of its first cell; rag-search with
// the question, then submit.
func TestSandboxActor(t *testing.T) {
	obj := json.RawMessage(`{"type":"object"}`)
	var tools []operations.Tool
	for _, n := range []string{toolListDBs, toolExecute, toolRAGSearch, "submit"} {
		tools = append(tools, operations.Tool{Name: n, Parameters: obj})
	}
	walk := func(task string, results []string) []operations.ToolCall {
		msgs := []operations.Message{{Role: operations.RoleSystem, Content: "You answer questions."}, {Role: operations.RoleUser, Content: task}}
		var calls []operations.ToolCall
		for turn := 0; turn <= len(results); turn++ {
			outs := Reply(Input{Task: task, Meta: map[string]string{operations.MetaRole: "actor"}, Request: &operations.GenerateRequest{Messages: msgs, Tools: tools}})
			if len(outs[0].ToolCalls) != 1 {
				t.Fatalf("%s: turn %d: %+v, want one call", task, turn, outs[0])
			}
			tc := outs[0].ToolCalls[0]
			calls = append(calls, tc)
			if turn < len(results) {
				msgs = append(msgs, operations.Message{Role: operations.RoleAssistant, ToolCalls: []operations.ToolCall{tc}},
					operations.Message{Role: operations.RoleTool, ToolCallID: tc.ID, Content: results[turn]})
			}
		}
		return calls
	}
	calls := walk("How many singers are in the concert database?", []string{
		`{"result":{"databases":["concert"]}}`,
		`{"result":{"columns":["name"],"rows":[["concert"],["singer"],["stadium"]]}}`,
		`{"result":{"columns":["count(*)"],"rows":[[6]]}}`,
	})
	want := []struct{ name, args string }{
		{toolListDBs, `{}`},
		{toolExecute, `{"db_id":"concert","query":"` + tablesQuery + `"}`},
		{toolExecute, `{"db_id":"concert","query":"SELECT count(*) FROM singer"}`},
		{"submit", `{"answer":"6"}`},
	}
	for i, w := range want {
		if calls[i].Name != w.name || compact(t, calls[i].Arguments) != w.args {
			t.Errorf("db call %d = %s %s, want %s %s", i, calls[i].Name, calls[i].Arguments, w.name, w.args)
		}
	}
	calls = walk("By what time must concerts at Somerset Park end?", []string{
		`{"result":{"results":[{"text":"Concerts at Somerset Park must end by 22:00 under the noise agreement."}]}}`,
	})
	if calls[0].Name != toolRAGSearch || compact(t, calls[0].Arguments) != `{"query":"By what time must concerts at Somerset Park end?"}` {
		t.Errorf("rag call = %s %s", calls[0].Name, calls[0].Arguments)
	}
	if calls[1].Name != "submit" || compact(t, calls[1].Arguments) != `{"answer":"Concerts at Somerset Park must end by 22:00 under the noise agreement."}` {
		t.Errorf("rag answer = %s %s", calls[1].Name, calls[1].Arguments)
	}
}

// TestSandboxActorRAGContext: rag:search answers AgentFlow's shape,
// {"query", "context"} with passages "[title]\ntext" separated by "---";
// the simulated actor submits the first passage's first line of text, as
// README says, not the whole answer.
func TestSandboxActorRAGContext(t *testing.T) {
	obj := json.RawMessage(`{"type":"object"}`)
	tools := []operations.Tool{{Name: toolRAGSearch, Parameters: obj}, {Name: "submit", Parameters: obj}}
	task := "By what time must concerts at Somerset Park end?"
	call := operations.ToolCall{ID: "c1", Name: toolRAGSearch, Arguments: `{"query":"` + task + `"}`}
	out := `{"query":"` + task + `","context":"[Stadiums — Somerset Park]\nSomerset Park in Ayr is the oldest venue.\nConcerts there end by 22:00.\n---\n[Stadiums — Glebe Park]\nGlebe Park is small."}`
	msgs := []operations.Message{{Role: operations.RoleUser, Content: task},
		{Role: operations.RoleAssistant, ToolCalls: []operations.ToolCall{call}},
		{Role: operations.RoleTool, ToolCallID: "c1", Content: out}}
	outs := Reply(Input{Task: task, Meta: map[string]string{operations.MetaRole: "actor"}, Request: &operations.GenerateRequest{Messages: msgs, Tools: tools}})
	if len(outs[0].ToolCalls) != 1 || outs[0].ToolCalls[0].Name != "submit" ||
		compact(t, outs[0].ToolCalls[0].Arguments) != `{"answer":"Somerset Park in Ayr is the oldest venue."}` {
		t.Fatalf("reply %+v: want submit of the first passage's first line", outs[0])
	}
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
