package gateway

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/flockrun/flock/grading"
	"github.com/flockrun/flock/operations"
)

func trace(seq int, user, reply string) Trace {
	return Trace{ID: "s:" + string(rune('0'+seq)), Seq: seq, OpID: "s/" + string(rune('0'+seq)) + "/0", Time: time.Unix(0, 0),
		Request: operations.GenerateRequest{Model: "m", Messages: []operations.Message{{Role: "user", Content: user}}},
		Result: operations.GenerateResult{Outputs: []operations.Output{{Content: reply, TokenIDs: []int{seq, seq}}},
			PromptTokenIDs: []int{7}}}
}

// TestEnrichMatchesByID checks rLLM's enrichment without its positional
// pitfall (§6 item 9): agent steps take the trace whose id they carry
// (trace id, completion id or X-Flock-Step-Id), in any order and across
// named trajectories; a trajectory without steps takes the unclaimed
// traces in call order; agent-set action and reward are kept.
func TestEnrichMatchesByID(t *testing.T) {
	t1, t2, t3 := trace(1, "solve", "42"), trace(2, "judge 42", "correct"), trace(3, "solve again", "43")
	t2.StepID = "judge-step"
	out, err := ParseAgentOutput([]byte(`{"trajectories": [
		{"name": "judge", "steps": [{"id": "judge-step", "reward": 1, "action": {"verdict": "ok"}}]},
		{"name": "solver", "steps": [{"id": "chatcmpl-s:3"}, {"id": "s:1"}]},
		{"name": "extra", "steps": []}],
		"artifacts": {"answer": "42"}, "termination_reason": "env_done"}`))
	if err != nil {
		t.Fatal(err)
	}
	ep := Enrich("task:0", "default", out, []Trace{t1, t2, t3})
	if err := ep.Validate(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		traj, step int
		response   string
		id         string
	}{
		{"judge by step id", 0, 0, "correct", "judge-step"},
		{"solver first step by completion id", 1, 0, "43", "chatcmpl-s:3"},
		{"solver second step by trace id", 1, 1, "42", "s:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ep.Trajectories[tt.traj].Steps[tt.step]
			if s.ModelResponse != tt.response || s.ID != tt.id || len(s.ChatCompletions) != 2 || len(s.PromptTokenIDs) != 1 {
				t.Fatalf("step = %+v", s)
			}
		})
	}
	if j := ep.Trajectories[0].Steps[0]; j.Reward != 1 || string(j.Action) != `{"verdict": "ok"}` {
		t.Fatalf("agent fields lost: %+v", j)
	}
	if n := len(ep.Trajectories[2].Steps); n != 0 {
		t.Fatalf("every trace was claimed, yet the empty trajectory got %d steps", n)
	}
	if ep.Artifacts.Answer != "42" || ep.TerminationReason != grading.TerminationEnvDone || ep.Metrics["n_turns"] != 3 {
		t.Fatalf("episode %+v", ep)
	}

	// No output at all: one trajectory named after the flow takes every
	// trace in call order.
	ep = Enrich("task:1", "external", AgentOutput{Answer: "x"}, []Trace{t1, t2})
	if len(ep.Trajectories) != 1 || ep.Trajectories[0].Name != "external" || len(ep.Trajectories[0].Steps) != 2 ||
		ep.Trajectories[0].Steps[1].ModelResponse != "correct" || !ep.Trajectories[0].Steps[1].Done {
		b, _ := json.Marshal(ep)
		t.Fatalf("episode %s", b)
	}
}

func TestParseAgentOutput(t *testing.T) {
	tests := []struct {
		name, in, answer string
		traj, episode    bool
		wantErr          bool
	}{
		{"string", `"42"`, "42", false, false, false},
		{"answer object", `{"answer": "42"}`, "42", false, false, false},
		{"numeric answer", `{"answer": 42}`, "42", false, false, false},
		{"trajectory", `{"steps": [], "output": "7"}`, "7", true, false, false},
		{"episode", `{"trajectories": [{"steps": []}], "artifacts": {"answer": "9"}}`, "9", false, true, false},
		{"null", `null`, "", false, false, false},
		{"list", `[1, 2]`, "", false, false, true},
		{"bad episode", `{"trajectories": 3}`, "", false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := ParseAgentOutput([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err != nil {
				return
			}
			if out.Answer != tt.answer || (out.Trajectory != nil) != tt.traj || (out.Episode != nil) != tt.episode {
				t.Fatalf("out = %+v", out)
			}
		})
	}
}

func TestLastJSONLine(t *testing.T) {
	got := LastJSONLine([]byte("log line\n{\"answer\": \"a\"}\nprogress 100%\n\n"))
	if string(got) != `{"answer": "a"}` {
		t.Fatalf("got %q", got)
	}
	if LastJSONLine([]byte("no json here\n{broken")) != nil {
		t.Fatal("found JSON in none")
	}
}

// FuzzChatRequest feeds request bodies to the wire parser: it never
// panics, and what it accepts has messages and a model.
func FuzzChatRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"n":2,"stop":"x"}`,
		`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{"}}]},{"role":"tool","tool_call_id":"c","content":"r"}],"tool_choice":{"type":"function","function":{"name":"f"}},"tools":[{"type":"function","function":{"name":"f"}}]}`,
		`{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`,
		`{"messages":[],"top_logprobs":99}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var cr chatRequest
		if json.Unmarshal(b, &cr) != nil {
			return
		}
		g, err := cr.toGenerate("m")
		if err == nil && (len(g.Messages) == 0 || g.Model != "m") {
			t.Fatalf("accepted %s as %+v", b, g)
		}
		_, _ = ParseAgentOutput(b)
	})
}
