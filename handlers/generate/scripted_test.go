package generate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/operations"
)

// scriptSettings writes lines to a script file and declares model "s" on it.
func scriptSettings(tb testing.TB, lines ...string) *configs.RunSettings {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "script.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	s := &configs.RunSettings{Models: map[string]configs.Model{"s": {Provider: "scripted", Script: p, InputPrice: 1, OutputPrice: 2}}}
	s.ApplyDefaults()
	return s
}

func scripted(h *Handler, s *configs.RunSettings, run string, g operations.GenerateRequest) operations.Result {
	g.Model = "s"
	return h.Handle(context.Background(), handlers.Env{RunID: run, Settings: s}, genReq(g))
}

func TestScriptedInOrder(t *testing.T) {
	s := scriptSettings(t,
		`# a comment`,
		`{"content": "first", "reasoning": "r1"}`,
		``,
		`{"tool_calls": [{"name": "bash", "arguments": {"command": "ls -la"}}], "usage": {"prompt_tokens": 100, "completion_tokens": 10}}`,
		`{"tool_calls": [{"id": "x1", "name": "submit", "arguments": "{broken"}]}`,
	)
	h := New(Options{})
	r1 := mustGen(t, scripted(h, s, "run", operations.GenerateRequest{Messages: userMsg("a")}))
	if r1.Outputs[0].Content != "first" || r1.Outputs[0].Reasoning != "r1" || r1.Outputs[0].FinishReason != "stop" || r1.Usage.PromptTokens == 0 {
		t.Fatalf("reply 1 = %+v", r1)
	}
	r2 := mustGen(t, scripted(h, s, "run", operations.GenerateRequest{Messages: userMsg("b")}))
	tc := onlyCall(t, r2.Outputs[0])
	if tc.Name != "bash" || tc.Arguments != `{"command":"ls -la"}` || tc.ID == "" || r2.Outputs[0].FinishReason != "tool_calls" {
		t.Fatalf("reply 2 = %+v", r2.Outputs[0])
	}
	if r2.Usage.PromptTokens != 100 || r2.Usage.CompletionTokens != 10 || r2.Usage.Cost != 100*1/1e6+10*2/1e6 {
		t.Fatalf("usage 2 = %+v", r2.Usage)
	}
	r3 := mustGen(t, scripted(h, s, "run", operations.GenerateRequest{Messages: userMsg("c")}))
	if tc := onlyCall(t, r3.Outputs[0]); tc.ID != "x1" || tc.Arguments != "{broken" {
		t.Fatalf("reply 3 = %+v", tc)
	}
	r4 := scripted(h, s, "run", operations.GenerateRequest{Messages: userMsg("d")})
	if r4.Error != `scripted model "s": script exhausted after 3 replies` {
		t.Fatalf("exhausted error = %q", r4.Error)
	}
	// Another run has its own cursor; CloseRun starts a run over.
	if r := mustGen(t, scripted(h, s, "other", operations.GenerateRequest{Messages: userMsg("a")})); r.Outputs[0].Content != "first" {
		t.Fatalf("other run = %+v", r)
	}
	h.CloseRun(context.Background(), "run")
	if r := mustGen(t, scripted(h, s, "run", operations.GenerateRequest{Messages: userMsg("a")})); r.Outputs[0].Content != "first" {
		t.Fatalf("after CloseRun = %+v", r)
	}
}

func TestScriptedMatch(t *testing.T) {
	s := scriptSettings(t,
		`{"content": "rated", "match": "<option_0>"}`,
		`{"content": "advice", "match": "advise"}`,
		`{"content": "anything"}`,
	)
	h := New(Options{})
	var wg sync.WaitGroup
	got := make([]string, 2)
	for i, prompt := range []string{"please advise", "rate these <option_0> <option_1>"} {
		wg.Go(func() {
			got[i] = mustGen(t, scripted(h, s, "run", operations.GenerateRequest{Messages: userMsg(prompt)})).Outputs[0].Content
		})
	}
	wg.Wait()
	if got[0] != "advice" || got[1] != "rated" {
		t.Fatalf("got %q", got)
	}
	// Match reads the last user or tool message, not the system prompt.
	g := operations.GenerateRequest{Messages: []operations.Message{{Role: "system", Content: "advise"}, {Role: "tool", Content: "output"}}}
	if r := mustGen(t, scripted(h, s, "run2", g)); r.Outputs[0].Content != "anything" {
		t.Fatalf("got %q", r.Outputs[0].Content)
	}
}

func TestScriptedFanOut(t *testing.T) {
	s := scriptSettings(t,
		`{"content": "a"}`,
		`{"content": "b", "n": 2}`,
		`{"content": "c"}`,
	)
	h := New(Options{})
	r := mustGen(t, scripted(h, s, "run", operations.GenerateRequest{N: 3, Messages: userMsg("x")}))
	var got []string
	for _, o := range r.Outputs {
		got = append(got, o.Content)
	}
	if strings.Join(got, ",") != "a,b,b" {
		t.Fatalf("outputs = %v", got)
	}
	r2 := scripted(h, s, "run", operations.GenerateRequest{N: 2, Messages: userMsg("x")})
	if !strings.Contains(r2.Error, "script exhausted after 3 replies") {
		t.Fatalf("error = %q", r2.Error)
	}
}

func TestScriptedErrors(t *testing.T) {
	h := New(Options{})
	s := scriptSettings(t, `{"error": "rate limited by script"}`)
	if r := scripted(h, s, "run", operations.GenerateRequest{Messages: userMsg("x")}); r.Error != `scripted model "s": rate limited by script` {
		t.Fatalf("error line = %q", r.Error)
	}
	bad := scriptSettings(t, `{"content": "ok"}`, `{"contnet": "typo"}`)
	r := scripted(h, bad, "run", operations.GenerateRequest{Messages: userMsg("x")})
	if !strings.Contains(r.Error, "invalid script") || !strings.Contains(r.Error, ":2:") {
		t.Fatalf("bad script error = %q", r.Error)
	}
	if err := h.CheckSettings(bad, []string{"s"}); !errors.Is(err, ErrScript) {
		t.Fatalf("CheckSettings = %v", err)
	}
	missing := &configs.RunSettings{Models: map[string]configs.Model{"s": {Provider: "scripted"}}}
	if r := scripted(h, missing, "run", operations.GenerateRequest{}); !strings.Contains(r.Error, "needs a script") {
		t.Fatalf("no script error = %q", r.Error)
	}
}

// TestScriptedBadLineNeverQuoted checks that a script line that cannot be
// parsed is reported by file, line and what is wrong, never by its bytes:
// a script may hold a key pasted by mistake.
func TestScriptedBadLineNeverQuoted(t *testing.T) {
	const secret = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
	tests := []struct{ name, line, want string }{
		{"bare text", secret, "not valid JSON"},
		{"secret as a key", `{"` + secret + `": 1}`, "unknown key"},
		{"secret as an unquoted value", `{"content": ` + secret + `}`, "not valid JSON"},
		{"secret where a number belongs", `{"n": "` + secret + `"}`, "n has the wrong type"},
		{"secret in a list", `["` + secret + `"]`, "not a JSON object"},
		{"secret as a string", `"` + secret + `"`, "not a JSON object"},
		{"secret after the object", `{"content": "ok"} ` + secret, "not valid JSON"},
		{"secret in a nested key", `{"usage": {"` + secret + `": 1}}`, "unknown key in usage"},
		{"secret in a tool call", `{"tool_calls": [{"name": "x", "` + secret + `": 1}]}`, "in a tool call"},
		{"secret as a tool call", `{"tool_calls": ["` + secret + `"]}`, "tool_calls has the wrong type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := scriptSettings(t, `{"content": "ok"}`, tt.line)
			path := s.Models["s"].Script
			h := New(Options{})
			r := scripted(h, s, "run", operations.GenerateRequest{Messages: userMsg("x")})
			err := h.CheckSettings(s, []string{"s"})
			for _, msg := range []string{r.Error, fmt.Sprint(err)} {
				if !strings.Contains(msg, path+":2: ") || !strings.Contains(msg, tt.want) {
					t.Fatalf("error = %q, want %s:2: %s", msg, path, tt.want)
				}
				if strings.Contains(msg, "sk-live") || strings.Contains(msg, "4f9a8b") {
					t.Fatalf("the error quotes the line: %q", msg)
				}
			}
		})
	}
}
