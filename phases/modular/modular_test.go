package modular

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/agent"
	"github.com/flockrun/flock/phases/phasetest"
)

func TestParseSettings(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		err  string
	}{
		{name: "minimal", doc: `{"generator":{"model":"gpt-4o"}}`},
		{name: "flock keys", doc: `{"workflow_type":"modular","generator":{"model":"m","temp":0,"n":2,"priority":"low"},"limit_type":"time","intermediate_scoring":true,"enable_tool_use":false,"enable_xml":true,"limits":{"seconds":600}}`},
		{name: "intermediate scoring without limits", doc: `{"generator":{"model":"m"},"scoring":{"intermediate":true}}`, err: "intermediate_scoring"},
		{name: "empty document", doc: ``, err: "generator: required"},
		{name: "missing generator", doc: `{"limit_type":"token"}`, err: "generator: required"},
		{name: "generator without model", doc: `{"generator":{"n":1}}`, err: "generator.model: required"},
		{name: "bad limit type", doc: `{"generator":{"model":"m"},"limit_type":"moons"}`, err: "limit_type"},
		{name: "negative threshold", doc: `{"generator":{"model":"m"},"context_trimming_threshold":-1}`, err: "context_trimming_threshold"},
		{name: "keep first too small", doc: `{"generator":{"model":"m"},"keep_first_messages":1}`, err: "keep_first_messages"},
		{name: "timeout too large", doc: `{"generator":{"model":"m"},"timeout":100000}`, err: "timeout"},
		{name: "negative retries", doc: `{"generator":{"model":"m"},"max_retries":-1}`, err: "max_retries"},
		{name: "bad warnings", doc: `{"generator":{"model":"m"},"usage_warnings":[0.9,0.5]}`, err: "usage_warnings"},
		{name: "bad tokenizer", doc: `{"generator":{"model":"m"},"tokenizer":"words"}`, err: "tokenizer"},
		{name: "malformed", doc: `{"generator":`, err: "modular settings"},
		{name: "wrong type names its path", doc: `{"generator":{"model":"m","n":"two"}}`, err: "generator.n: want a whole number, got JSON string"},
		{name: "wrong type at the top", doc: `{"generator":{"model":"m"},"output_limit":"lots"}`, err: "output_limit: want a whole number, got JSON string"},
		{name: "not an object", doc: `[1]`, err: "must be a JSON object, got JSON array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseSettings(json.RawMessage(tt.doc))
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if *s.KeepFirstMessages != DefaultKeepFirstMessages || *s.MaxRetries != DefaultMaxRetries || s.Timeout != DefaultTimeout {
					t.Fatalf("defaults not applied: %+v", s)
				}
				return
			}
			if !errors.Is(err, ErrSettings) || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want ErrSettings naming %q", err, tt.err)
			}
		})
	}
	// The workflow's check is what the engine calls before creating a run.
	if err := Workflow().CheckSettings(json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "generator") {
		t.Fatalf("CheckSettings({}) = %v, want an error naming generator", err)
	}
}

func TestTokenizerFor(t *testing.T) {
	tests := []struct{ setting, model, want string }{
		{"", "gpt-4o", TokenizerO200k},
		{"auto", "gpt-4o-mini-2024-07-18", TokenizerO200k},
		{"auto", "openai/gpt-5", TokenizerO200k},
		{"auto", "o3-mini", TokenizerO200k},
		{"auto", "ft:gpt-4.1-nano:org::id", TokenizerO200k},
		{"auto", "gpt-4-turbo", TokenizerCl100k},
		{"auto", "gpt-3.5-turbo", TokenizerCl100k},
		{"auto", "claude-sonnet-4", TokenizerApprox},
		{"auto", "meta-llama/Llama-3.1-8B-Instruct", TokenizerApprox},
		{"auto", "simulated", TokenizerApprox},
		{"cl100k_base", "claude-3-opus", TokenizerCl100k},
		{"approx", "gpt-4o", TokenizerApprox},
	}
	for _, tt := range tests {
		t.Run(tt.setting+"/"+tt.model, func(t *testing.T) {
			if got := tokenizerFor(tt.setting, tt.model); got != tt.want {
				t.Fatalf("tokenizerFor(%q, %q) = %q, want %q", tt.setting, tt.model, got, tt.want)
			}
		})
	}
}

func TestCounters(t *testing.T) {
	tests := []struct {
		name, tokenizer, text string
		want                  int
	}{
		{name: "o200k", tokenizer: TokenizerO200k, text: "hello world", want: 2},
		{name: "cl100k", tokenizer: TokenizerCl100k, text: "hello world", want: 2},
		{name: "approx", tokenizer: TokenizerApprox, text: "hello world", want: 3},
		{name: "empty", tokenizer: TokenizerO200k, text: "", want: 0},
		{name: "invalid utf-8", tokenizer: TokenizerO200k, text: "a\xffb", want: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := newCounter(tt.tokenizer)(tt.text); got != tt.want {
				t.Fatalf("count(%q) = %d, want %d", tt.text, got, tt.want)
			}
		})
	}
}

// history builds a log of n steps with outputs of varying size, an invalid
// attempt answered by a warning, a no-call choice and a set_timeout.
func history(n int) []phases.Entry {
	log := []phases.Entry{phases.MustEntry(EntryTask, Task{Summary: "task", Task: "t"})}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("c%d", i)
		switch i % 5 {
		case 1:
			log = append(log,
				phases.MustEntry(EntryChoice, Choice{Option: agent.Option{Invalid: "bad"}, Attempt: &operations.ToolCall{ID: id, Name: "bash", Arguments: "{}"}}),
				phases.MustEntry(EntryWarning, Warning{Warning: agent.NewWarning("rejected"), CallID: id}))
		case 3:
			log = append(log,
				phases.MustEntry(EntryChoice, Choice{Option: agent.Option{Content: strings.Repeat("musing ", i)}}),
				phases.MustEntry(EntryWarning, Warning{Warning: agent.NewWarning("no call")}))
		default:
			c := agent.Call{ID: id, Name: "bash", Arguments: json.RawMessage(fmt.Sprintf(`{"command":"echo %d"}`, i))}
			log = append(log,
				phases.MustEntry(EntryChoice, Choice{Option: agent.Option{Content: "step", Call: &c}}),
				phases.MustEntry(EntryToolOutput, ToolOutput{ToolOutput: agent.ToolOutput{Tool: "bash", CallID: id,
					Output: strings.Repeat(fmt.Sprintf("output line %d\n", i), 1+i*7%23)}}))
		}
	}
	return log
}

// TestPromptInvariants checks, over many budgets, that a prompt keeps the
// first messages, marks trimming, pairs every call with its answer, stays
// within budget when the budget allows, and ends with the usage message.
func TestPromptInvariants(t *testing.T) {
	for _, mode := range []string{`true`, `false`} {
		for _, threshold := range []int{200, 700, 1500, 4000, 100000} {
			for _, keep := range []int{2, 3, 4, 7} {
				name := fmt.Sprintf("tools=%s/threshold=%d/keep=%d", mode, threshold, keep)
				t.Run(name, func(t *testing.T) {
					doc := fmt.Sprintf(`{"generator":{"model":"gpt-4o"},"enable_tool_use":%s,"context_trimming_threshold":%d,"keep_first_messages":%d}`, mode, threshold, keep)
					s, err := ParseSettings(json.RawMessage(doc))
					if err != nil {
						t.Fatal(err)
					}
					st := &phasetest.State{Log: history(30), Limited: operations.RunLimits{Tokens: 1000}}
					c, err := buildConversation(st, &s, "the task")
					if err != nil {
						t.Fatal(err)
					}
					count := newCounter(s.tokenizer())
					ctx := plan(c, &s, count, usageMessage(&s, operations.RunUsage{Tokens: 800}, st.Limited))
					msgs := prompt(c, ctx, &s)
					checkPrompt(t, c, ctx, msgs, &s, count)
				})
			}
		}
	}
}

func checkPrompt(t *testing.T, c conversation, ctx Context, msgs []operations.Message, s *Settings, count counter) {
	t.Helper()
	if msgs[0].Role != operations.RoleSystem || !strings.Contains(msgs[1].Content, "<task>") {
		t.Fatalf("prompt does not start with the system prompt and the task")
	}
	if ctx.KeepFirst < min(*s.KeepFirstMessages, len(c.msgs)) {
		t.Fatalf("kept %d first messages, want at least %d", ctx.KeepFirst, *s.KeepFirstMessages)
	}
	for i := 0; i < ctx.KeepFirst; i++ {
		if msgs[i].Content != c.msgs[i].Content {
			t.Fatalf("first message %d not kept", i)
		}
	}
	if k := ctx.KeepFirst; k < len(c.msgs) && c.answers[k] {
		t.Fatalf("message %d answers the last kept first message but was not kept with it", k)
	}
	if from := ctx.KeepFirst + ctx.Dropped; ctx.Dropped > 0 && from < len(c.msgs) && c.answers[from] {
		t.Fatalf("the recent part starts with message %d, an answer whose turn was dropped", from)
	}
	hasNote := strings.HasPrefix(msgs[ctx.KeepFirst].Content, "[History trimmed:")
	if hasNote != (ctx.Dropped > 0) {
		t.Fatalf("notice present = %v, dropped = %d", hasNote, ctx.Dropped)
	}
	if last := msgs[len(msgs)-1]; last.Content != ctx.Usage {
		t.Fatalf("last message is not the usage message: %q", last.Content)
	}
	open := map[string]bool{}
	for i, m := range msgs {
		switch {
		case m.Role == operations.RoleTool:
			if !open[m.ToolCallID] {
				t.Fatalf("message %d answers call %q that is not open", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		case len(open) > 0:
			t.Fatalf("message %d (%s) follows unanswered calls %v", i, m.Role, open)
		}
		for _, tc := range m.ToolCalls {
			open[tc.ID] = true
		}
	}
	if len(open) > 0 {
		t.Fatalf("unanswered calls at the end: %v", open)
	}
	measure := c.measure(count)
	total := count.toolsTokens(tools(s)) + replyTokens
	firstSize := total + measure(operations.Message{Role: operations.RoleUser, Content: ctx.Usage})
	for i, m := range msgs {
		total += measure(m)
		if i < ctx.KeepFirst {
			firstSize += measure(m)
		}
	}
	if firstSize+60 < s.ContextTrimmingThreshold && total > s.ContextTrimmingThreshold {
		t.Fatalf("prompt has %d tokens, budget %d", total, s.ContextTrimmingThreshold)
	}
	if ctx.Dropped == 0 && total != ctx.Tokens {
		t.Fatalf("planned %d tokens, prompt has %d", ctx.Tokens, total)
	}
}

// TestRecordedTokens checks that token counts recorded in entries equal
// what counting the replayed messages gives.
func TestRecordedTokens(t *testing.T) {
	s, err := ParseSettings(json.RawMessage(`{"generator":{"model":"gpt-4o"}}`))
	if err != nil {
		t.Fatal(err)
	}
	count := newCounter(s.tokenizer())
	res := operations.Result{Kind: operations.KindGenerate, Data: &operations.GenerateResult{Outputs: []operations.Output{
		{Content: "Listing the files first.", ToolCalls: []operations.ToolCall{{ID: "x", Name: "bash", Arguments: `{"command": "ls -la"}`}}}}}}
	in := phases.Input{Run: phases.RunInfo{Settings: json.RawMessage(`{"generator":{"model":"gpt-4o"}}`), Step: 3},
		State: &phasetest.State{}, Results: []operations.Result{res}}
	out, err := typed.Phase(Discriminator)(in)
	if err != nil {
		t.Fatal(err)
	}
	var ch Choice
	if err := out.Append[0].Decode(&ch); err != nil {
		t.Fatal(err)
	}
	if want := count.contentTokens(choiceMessage(ch, s.Mode(), s.OutputLimit)); ch.Tokens != want || want == 0 {
		t.Fatalf("recorded %d tokens, counting gives %d", ch.Tokens, want)
	}
	c, err := buildConversation(&phasetest.State{Log: out.Append}, &s, "t")
	if err != nil {
		t.Fatal(err)
	}
	if n := c.known[fingerprint(c.msgs[2])]; n != ch.Tokens {
		t.Fatalf("conversation uses %d recorded tokens, want %d", n, ch.Tokens)
	}
}

func TestRegistered(t *testing.T) {
	w, ok := phases.Default.Lookup(Name)
	if !ok {
		t.Fatal("modular is not registered")
	}
	g := w.Graph()
	if g.Start != PhaseInit || len(g.Phases) != 6 {
		t.Fatalf("graph = %+v", g)
	}
}

// withTokens records token counts in a log's choices and tool outputs, as
// the discriminator and tool_output do.
func withTokens(t testing.TB, s *Settings, log []phases.Entry) []phases.Entry {
	count := newCounter(s.tokenizer())
	out := make([]phases.Entry, len(log))
	for i, e := range log {
		switch e.Type {
		case EntryChoice:
			var ch Choice
			if err := e.Decode(&ch); err != nil {
				t.Fatal(err)
			}
			ch.Tokens = count.contentTokens(choiceMessage(ch, s.Mode(), s.OutputLimit))
			e = phases.MustEntry(e.Type, ch)
		case EntryToolOutput:
			var o ToolOutput
			if err := e.Decode(&o); err != nil {
				t.Fatal(err)
			}
			e = phases.MustEntry(e.Type, toolOutput(s, o.ToolOutput))
		}
		out[i] = e
	}
	return out
}

// BenchmarkPrompter measures a prompter step at 500 actions of history
// with a real tokenizer, with token counts recorded in the entries (as in
// runs) and without (every message tokenized again).
func BenchmarkPrompter(b *testing.B) {
	doc := json.RawMessage(`{"generator":{"model":"gpt-4o"},"context_trimming_threshold":20000}`)
	s, err := ParseSettings(doc)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		log  []phases.Entry
	}{{"live", history(500)}, {"recorded", withTokens(b, &s, history(500))}} {
		b.Run(bc.name, func(b *testing.B) {
			in := phases.Input{Run: phases.RunInfo{Settings: doc, Task: "t"}, State: &phasetest.State{Log: bc.log}}
			prompter := typed.Phase(Prompter) // as the workflow declares it
			for b.Loop() {
				if _, err := prompter(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestNewestOutputSurvivesTrimming: the newest call and its 30,000-byte
// output stay in the next prompt, the output clipped head and tail with a
// marker counting the cut, and the prompt stays within its token budget
// (issue 9, point 10); whether the action is the first of the run (inside
// keep_first_messages) or a later one.
func TestNewestOutputSurvivesTrimming(t *testing.T) {
	const threshold = 5000
	var b strings.Builder
	for i := 0; b.Len() < 30000; i++ {
		fmt.Fprintf(&b, "output line %05d of the listing\n", i)
	}
	big := b.String()[:30000]
	lines := strings.Split(big, "\n")
	head, tail := lines[0], lines[len(lines)-2]
	bigCall := func(id string) []phases.Entry {
		c := agent.Call{ID: id, Name: "bash", Arguments: json.RawMessage(`{"command":"ls -R /big"}`)}
		return []phases.Entry{
			phases.MustEntry(EntryChoice, Choice{Summary: "c", Option: agent.Option{Content: "Listing it.", Call: &c}}),
			phases.MustEntry(EntryToolOutput, ToolOutput{ToolOutput: agent.ToolOutput{Summary: "t", Tool: "bash", CallID: id, Output: big}}),
		}
	}
	for _, tc := range []struct {
		name string
		log  []phases.Entry
		doc  string
	}{
		{"first action", append(history(0), bigCall("call_big")...), `{"generator":{"model":"gpt-4o"},"context_trimming_threshold":5000}`},
		{"later action", append(history(12), bigCall("call_big")...), `{"generator":{"model":"gpt-4o"},"context_trimming_threshold":5000}`},
		{"text mode", append(history(12), bigCall("call_big")...), `{"generator":{"model":"gpt-4o"},"context_trimming_threshold":5000,"enable_tool_use":false}`},
		{"approx tokens", append(history(12), bigCall("call_big")...), `{"generator":{"model":"claude"},"context_trimming_threshold":5000}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.log {
				tc.log[i].Seq = uint64(i + 1)
			}
			st := &phasetest.State{Log: tc.log, Vars: map[string]json.RawMessage{}, Limited: operations.RunLimits{Tokens: 100000}}
			in := phases.Input{Run: phases.RunInfo{ID: "trim", Workflow: Name, Step: 40, Task: "List the big directory.",
				Settings: json.RawMessage(tc.doc), Now: phasetest.Now, WorkDir: "/work"}, State: st}
			out, err := typed.Phase(Prompter)(in)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range out.Set {
				st.Vars[k] = v
			}
			out, err = typed.Phase(Generator)(in)
			if err != nil {
				t.Fatal(err)
			}
			msgs := operations.Generate.Params(out.Ops[0]).Messages
			s, err := ParseSettings(in.Run.Settings)
			if err != nil {
				t.Fatal(err)
			}
			count := newCounter(s.tokenizer())
			total := count.toolsTokens(tools(&s)) + replyTokens
			call, result := -1, -1
			for i, m := range msgs {
				total += count.contentTokens(m) + perMessageTokens
				switch {
				case m.Role == operations.RoleAssistant && strings.Contains(m.Content+fmt.Sprint(m.ToolCalls), "ls -R /big"):
					call = i
				case strings.Contains(m.Content, head):
					result = i
				}
			}
			if total > threshold {
				t.Errorf("prompt is %d tokens, budget %d", total, threshold)
			}
			if call < 0 || result != call+1 {
				t.Fatalf("call at %d, result at %d in %d messages", call, result, len(msgs))
			}
			r := msgs[result].Content
			if !strings.Contains(r, tail) || !strings.Contains(r, " characters trimmed ...]") {
				t.Fatalf("result not clipped head and tail: %s", agent.Line(r, 300))
			}
			if s.Mode() == agent.ModeTools && msgs[result].ToolCallID != "call_big" {
				t.Fatalf("result answers %q, want call_big", msgs[result].ToolCallID)
			}
		})
	}
}

// TestOutputLimitOverBudget: output_limit above what the token budget
// holds is refused, naming both keys; unset, it defaults to at most that.
func TestOutputLimitOverBudget(t *testing.T) {
	_, err := ParseSettings(json.RawMessage(`{"generator":{"model":"m"},"context_trimming_threshold":20000,"output_limit":100000}`))
	if !errors.Is(err, ErrSettings) || !strings.Contains(err.Error(), "output_limit") || !strings.Contains(err.Error(), "context_trimming_threshold") {
		t.Fatalf("err = %v, want ErrSettings naming output_limit and context_trimming_threshold", err)
	}
	s, err := ParseSettings(json.RawMessage(`{"generator":{"model":"m"},"context_trimming_threshold":1000}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.OutputLimit != 4000 {
		t.Fatalf("output_limit = %d, want 4000 (1000 tokens at 4 bytes each)", s.OutputLimit)
	}
}
