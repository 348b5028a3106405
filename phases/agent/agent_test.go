package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/flockrun/flock/operations"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name, tool, args string
		allowed          []string
		want             string // canonical arguments; "" means an error
		err              error
	}{
		{"bash", ToolBash, `{"command":"ls"}`, nil, `{"command":"ls"}`, nil},
		{"bash empty", ToolBash, `{"command":"  "}`, nil, "", ErrBadArguments},
		{"bash not offered", ToolBash, `{"command":"ls"}`, []string{ToolSubmit}, "", ErrUnknownTool},
		{"unknown", "rm", `{}`, nil, "", ErrUnknownTool},
		{"not an object", ToolBash, `["ls"]`, nil, "", ErrBadArguments},
		{"html kept", ToolBash, `{"command":"a > b && c"}`, nil, `{"command":"a > b && c"}`, nil},
		{"timeout string", ToolSetTimeout, `{"timeout":"45"}`, nil, `{"timeout":45}`, nil},
		{"timeout float integral", ToolSetTimeout, `{"timeout":45.0}`, nil, `{"timeout":45}`, nil},
		{"timeout fraction", ToolSetTimeout, `{"timeout":4.5}`, nil, "", ErrBadArguments},
		{"timeout negative", ToolSetTimeout, `{"timeout":-1}`, nil, "", ErrBadArguments},
		{"submit number", ToolSubmit, `{"answer":6}`, nil, `{"answer":"6"}`, nil},
		{"submit empty allowed", ToolSubmit, `{"answer":""}`, nil, `{"answer":""}`, nil},
		{"submit missing", ToolSubmit, `{}`, nil, "", ErrBadArguments},
		{"score no args", ToolScore, ``, nil, `{}`, nil},
		{"ratings clamped", ToolRateOptions, `{"ratings":[{"option_index":1,"rating":7,"comment":"x"}]}`, nil, `{"ratings":[{"option_index":1,"rating":2,"comment":"x"}]}`, nil},
		{"ratings double encoded", ToolRateOptions, `{"ratings":"[{\"option_index\":0,\"rating\":-1}]"}`, nil, `{"ratings":[{"option_index":0,"rating":-1,"comment":""}]}`, nil},
		{"ratings bad index", ToolRateOptions, `{"ratings":[{"option_index":-1,"rating":1}]}`, nil, "", ErrBadArguments},
		{"ratings empty", ToolRateOptions, `{"ratings":[]}`, nil, "", ErrBadArguments},
		{"agents", ToolLaunchSubagents, `{"agents":[{"task":"t","approach":"a"}]}`, nil, `{"agents":[{"task":"t","approach":"a","include_task_description":false}]}`, nil},
		{"agents no task", ToolLaunchSubagents, `{"agents":[{"approach":"a"}]}`, nil, "", ErrBadArguments},
		{"winner number", ToolSelectWinner, `{"winner_id":2}`, nil, `{"winner_id":"2","reasoning":""}`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Validate("id1", tc.tool, tc.args, tc.allowed)
			if tc.want == "" {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(c.Arguments) != tc.want || c.ID != "id1" {
				t.Errorf("got %s (id %q), want %s", c.Arguments, c.ID, tc.want)
			}
		})
	}
}

func TestParseOutput(t *testing.T) {
	out := operations.Output{Content: " thinking ", ToolCalls: []operations.ToolCall{{ID: "c1", Name: "bash", Arguments: `{"command":"ls"}`}}}
	p := ParseOutput(out, ModeTools, []string{ToolBash})
	if p.Call == nil || p.Call.ID != "c1" || p.Content != "thinking" {
		t.Fatalf("tools: %+v", p)
	}
	p = ParseOutput(out, ModeTools, []string{ToolSubmit})
	if p.Call != nil || !strings.Contains(p.Invalid, "unknown tool") {
		t.Fatalf("not offered: %+v", p)
	}
	p = ParseOutput(operations.Output{Content: "ok\n<submit>7</submit>"}, ModeXML, []string{ToolSubmit})
	if p.Call == nil || p.Content != "ok" || Describe(*p.Call) != "submit: 7" {
		t.Fatalf("xml: %+v", p)
	}
	p = ParseOutput(operations.Output{Content: "```set_timeout\nabc\n```"}, ModeFenced, []string{ToolSetTimeout})
	if p.Call != nil || p.Invalid == "" {
		t.Fatalf("invalid: %+v", p)
	}
}

func TestParseStructured(t *testing.T) {
	tests := []struct {
		name, content string
		mode          Mode
		ok            bool
	}{
		{"json block", "Ratings:\n```json\n{\"ratings\":[{\"option_index\":0,\"rating\":1}]}\n```", ModeFenced, true},
		{"tool block", "```rate_options\n{\"ratings\":[{\"option_index\":0,\"rating\":1}]}\n```", ModeFenced, true},
		{"xml", "<rate_options>{\"ratings\":[{\"option_index\":0,\"rating\":1}]}</rate_options>", ModeXML, true},
		{"bare", "I rate: {\"ratings\":[{\"option_index\":0,\"rating\":1}]} done", ModeFenced, true},
		{"garbage", "I like option 0", ModeFenced, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseStructured(operations.Output{Content: tc.content}, tc.mode, ToolRateOptions)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestTrim(t *testing.T) {
	s := strings.Repeat("a", 50) + strings.Repeat("b", 50)
	got := Trim(s, 20)
	if !strings.HasPrefix(got, strings.Repeat("a", 10)) || !strings.HasSuffix(got, strings.Repeat("b", 10)) || !strings.Contains(got, "[... 80 characters trimmed ...]") {
		t.Fatalf("Trim = %q", got)
	}
	if Trim("short", 20) != "short" || Trim(s, 0) != s {
		t.Fatal("no-op cases changed the text")
	}
	u := strings.Repeat("é", 30)
	if got := Trim(u, 11); !strings.HasPrefix(got, "éé\n") {
		t.Fatalf("rune boundary: %q", got)
	}
	// Trimming a trimmed text counts what the first cut removed too.
	long := strings.Repeat("a", 5000) + strings.Repeat("b", 5000)
	for _, limit := range []int{100, 1000, 3000} {
		got := Trim(Trim(long, 4000), limit)
		want := fmt.Sprintf("[... %d characters trimmed ...]", len(long)-limit)
		if strings.Count(got, "characters trimmed") != 1 || !strings.Contains(got, want) {
			t.Errorf("Trim(Trim(10000, 4000), %d) = %q, want one marker %q", limit, got, want)
		}
	}
	// A cut through the marker takes the whole marker.
	once := Trim(long, 4000)
	i := strings.Index(once, "[...")
	for _, limit := range []int{2*i + 2, 2*i - 2, 2 * (i + 10)} {
		got := Trim(once, limit)
		if strings.Count(got, "characters trimmed") != 1 || !strings.Contains(got, "b\n") && !strings.HasSuffix(got, "b") {
			t.Errorf("Trim(once, %d) = %q", limit, got)
		}
	}
}

func TestFormatResult(t *testing.T) {
	score := 0.5
	tests := []struct {
		name string
		res  operations.Result
		want string
	}{
		{"bash ok", operations.Result{Kind: operations.KindBash, Data: &operations.BashResult{Stdout: "hi\n"}}, "hi"},
		{"bash fail", operations.Result{Kind: operations.KindBash, Data: &operations.BashResult{Stdout: "a", Stderr: "boom", ExitCode: 2}}, "a\nError: boom\nExit code: 2"},
		{"bash timeout", operations.Result{Kind: operations.KindBash, Data: &operations.BashResult{Stdout: "part", TimedOut: true, ExitCode: 124}}, "part\nThe command timed out and was interrupted; the output above is what it printed before that.\nExit code: 124"},
		{"bash silent", operations.Result{Kind: operations.KindBash, Data: &operations.BashResult{}}, "(no output)"},
		{"python", operations.Result{Kind: operations.KindPython, Data: &operations.PythonResult{Output: "1", Error: "ZeroDivisionError"}}, "1\nError: ZeroDivisionError"},
		{"score", operations.Result{Kind: operations.KindScore, Data: &operations.ScoreResult{Score: &score, Message: "half"}}, "Score: 0.5\nhalf"},
		{"score log empty", operations.Result{Kind: operations.KindScoreLog, Data: &operations.ScoreLogResult{}}, "No scores recorded yet."},
		{"op error", operations.Result{Kind: operations.KindBash, Error: "no shell"}, "Error: no shell"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := FormatResult(tc.res, 100); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestUsageNotice(t *testing.T) {
	l := operations.RunLimits{Tokens: 1000, Actions: 10}
	th := Warnings(0.8, 0.95, "submit")
	tests := []struct {
		name string
		lt   LimitType
		u    operations.RunUsage
		want string
	}{
		{"low", LimitTokens, operations.RunUsage{Tokens: 100}, "Usage: 100 of 1000 tokens used (10%)."},
		{"80", LimitTokens, operations.RunUsage{Tokens: 850}, "Usage: 850 of 1000 tokens used (85%).\nWarning: over 80% of your budget is spent. Focus on finishing: submit soon."},
		{"95", LimitActions, operations.RunUsage{Actions: 10}, "Usage: 10 of 10 actions used (100%).\nWarning: you are about to run out of budget (over 95% spent). Your next action should be to submit."},
		{"no limit", LimitSeconds, operations.RunUsage{Seconds: 12.7}, "Usage: 12 seconds used (no limit set)."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := UsageNotice(tc.lt, tc.u, l, th); got != tc.want {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
	for in, want := range map[string]LimitType{"token": LimitTokens, "action": LimitActions, "time": LimitSeconds, "cost": LimitCost, "": LimitTokens} {
		if got, err := ParseLimitType(in); err != nil || got != want {
			t.Errorf("ParseLimitType(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseLimitType("tokenz"); err == nil {
		t.Error("bad limit type accepted")
	}
}

func msg(role, content string) operations.Message {
	return operations.Message{Role: role, Content: content}
}

func TestBudgetFit(t *testing.T) {
	call := operations.Message{Role: operations.RoleAssistant, Content: "aaaa", ToolCalls: []operations.ToolCall{{ID: "c1", Name: "bash", Arguments: "{}"}}}
	res := operations.Message{Role: operations.RoleTool, ToolCallID: "c1", Content: strings.Repeat("r", 400)}
	msgs := []operations.Message{msg("system", "sys"), msg("user", "task"), msg("user", "advice one"), call, res, msg("user", "advice two")}
	note := len(DefaultNote)
	tests := []struct {
		name    string
		b       Budget
		dropped int
		roles   string
	}{
		{"everything fits", Budget{Limit: 1000, KeepFirst: 2}, 0, "system user user assistant tool user"},
		// The note counts against the budget when it is inserted.
		{"no note needed when everything fits", Budget{Limit: 437, KeepFirst: 2}, 0, "system user user assistant tool user"},
		{"call and result go together, note counted", Budget{Limit: 436, KeepFirst: 2}, 3, "system user user user"},
		{"call dropped with its result", Budget{Limit: 30 + note, KeepFirst: 2}, 3, "system user user user"},
		{"per message trim makes room", Budget{Limit: 200, KeepFirst: 2, PerMessage: 100}, 0, "system user user assistant tool user"},
		// The newest call and its result stay, clipped (issue 9, point 10).
		{"last turn kept and clipped", Budget{Limit: 350, KeepFirst: 2, KeepLast: 3}, 1, "system user user assistant tool user"},
		{"last turn from its tool message", Budget{Limit: 350, KeepFirst: 2, KeepLast: 2}, 1, "system user user assistant tool user"},
		{"last turn overlapping the first", Budget{Limit: 300, KeepFirst: 5, KeepLast: 3}, 0, "system user user assistant tool user"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, dropped := tc.b.Fit(msgs)
			var roles []string
			for _, m := range got {
				roles = append(roles, m.Role)
			}
			if dropped != tc.dropped || strings.Join(roles, " ") != tc.roles {
				t.Fatalf("dropped %d roles %v, want %d %q", dropped, roles, tc.dropped, tc.roles)
			}
			if dropped > 0 && got[2].Content != DefaultNote {
				t.Errorf("note missing: %q", got[2].Content)
			}
			if tc.b.KeepLast > 0 {
				total := 0
				for _, m := range got {
					total += Size(m)
				}
				if total > tc.b.Limit {
					t.Errorf("prompt is %d, budget %d", total, tc.b.Limit)
				}
				r := got[len(got)-2].Content
				if !strings.HasPrefix(r, "rrr") || !strings.HasSuffix(r, "rrr") || !strings.Contains(r, " characters trimmed ...]") {
					t.Errorf("result not clipped head and tail: %q", r)
				}
			}
		})
	}
}

func TestModelRequest(t *testing.T) {
	var m Model
	if err := json.Unmarshal([]byte(`{"model":"gpt","temp":0.5,"n":2,"max_tokens":100,"stop":["x"],"logprobs":3,"priority":"high","logit_bias":{"1":2}}`), &m); err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	g := m.Request([]operations.Message{msg("user", "hi")}, Tools(ToolBash), "auto")
	if g.Model != "gpt" || *g.Temperature != 0.5 || g.N != 2 || g.MaxTokens != 100 || !g.Logprobs || g.TopLogprobs != 3 || g.ToolChoice != "auto" || len(g.Tools) != 1 {
		t.Fatalf("request %+v", g)
	}
	if g := (Model{Model: "m"}).Request(nil, nil, "required"); g.ToolChoice != "" || g.Temperature != nil || g.N != 1 {
		t.Fatalf("defaults %+v", g)
	}
	for _, bad := range []Model{{}, {Model: "m", N: -1}, {Model: "m", ReasoningEffort: "max"}} {
		if err := bad.Validate(); !errors.Is(err, ErrBadModel) {
			t.Errorf("%+v: err = %v", bad, err)
		}
	}
}

func TestToolset(t *testing.T) {
	tests := []struct {
		ts   Toolset
		want string
	}{
		{Toolset{}, "bash python set_timeout submit"},
		{Toolset{IntermediateScoring: true}, "bash python set_timeout score score_log"},
		{Toolset{Subagents: true}, "bash python set_timeout submit launch_subagents"},
		{Toolset{Conclude: true, Subagents: true}, "bash python set_timeout conclude"},
	}
	for _, tc := range tests {
		if got := strings.Join(tc.ts.Names(), " "); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.ts, got, tc.want)
		}
		for _, tool := range Tools(tc.ts.Names()...) {
			if !json.Valid(tool.Parameters) {
				t.Errorf("%s: invalid schema", tool.Name)
			}
		}
	}
}

func ExampleParseOutput() {
	out := operations.Output{Content: "First I look around.\n\n```bash\nls -la\n```"}
	p := ParseOutput(out, ModeFenced, Toolset{}.Names())
	fmt.Println(p.Content)
	fmt.Println(Describe(*p.Call))
	fmt.Println(string(p.Call.Arguments))
	fmt.Println(RenderText(*p.Call, ModeXML))
	// Output:
	// First I look around.
	// bash: ls -la
	// {"command":"ls -la"}
	// <bash>
	// ls -la
	// </bash>
}
