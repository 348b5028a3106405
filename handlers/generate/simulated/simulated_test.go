package simulated

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/flockrun/flock/operations"
)

func schema(props string, required ...string) json.RawMessage {
	r, _ := json.Marshal(required)
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{%s},"required":%s}`, props, r))
}

var (
	toolBash     = operations.Tool{Name: "bash", Parameters: schema(`"command":{"type":"string"}`, "command")}
	toolPython   = operations.Tool{Name: "python", Parameters: schema(`"code":{"type":"string"}`, "code")}
	toolTimeout  = operations.Tool{Name: "set_timeout", Parameters: schema(`"timeout":{"type":"integer"}`, "timeout")}
	toolSubmit   = operations.Tool{Name: "submit", Parameters: schema(`"answer":{"type":"string"}`, "answer")}
	toolConclude = operations.Tool{Name: "conclude", Parameters: schema(`"result":{"type":"string"}`, "result")}
	toolAdvise   = operations.Tool{Name: "advise", Parameters: schema(`"advice":{"type":"string"}`, "advice")}
	toolRate     = operations.Tool{Name: "rate_options", Parameters: schema(`"ratings":{"type":"array","items":{"type":"object","properties":{"option_index":{"type":"integer"},"comment":{"type":"string"},"rating":{"type":"number"}}}}`, "ratings")}
	toolWinner   = operations.Tool{Name: "select_winner", Parameters: schema(`"winner_id":{"type":"string"},"reasoning":{"type":"string"}`, "winner_id", "reasoning")}
	actorTools   = []operations.Tool{toolBash, toolPython, toolTimeout, toolSubmit}
)

// role is the Meta of a request whose phase set the role r ("" for none).
func role(r string) map[string]string {
	if r == "" {
		return nil
	}
	return map[string]string{operations.MetaRole: r}
}

func userMsg(s string) []operations.Message {
	return []operations.Message{{Role: operations.RoleUser, Content: s}}
}

func args(tb testing.TB, tc operations.ToolCall) map[string]any {
	tb.Helper()
	var a map[string]any
	if err := json.Unmarshal([]byte(tc.Arguments), &a); err != nil {
		tb.Fatalf("arguments of %s are not JSON: %q", tc.Name, tc.Arguments)
	}
	return a
}

func onlyCall(tb testing.TB, o operations.Output) operations.ToolCall {
	tb.Helper()
	if len(o.ToolCalls) != 1 {
		tb.Fatalf("want one tool call, got %+v", o)
	}
	return o.ToolCalls[0]
}

func TestSimulatedDeterministic(t *testing.T) {
	g := &operations.GenerateRequest{Model: "simulated", N: 3, Tools: actorTools, Messages: []operations.Message{
		{Role: operations.RoleSystem, Content: "You are an agent. <task>List the files.</task>"},
	}}
	in := Input{Task: "List the files.", Request: g}
	a, _ := json.Marshal(Reply(in))
	for range 5 {
		b, _ := json.Marshal(Reply(in))
		if string(a) != string(b) {
			t.Fatalf("not deterministic:\n%s\n%s", a, b)
		}
	}
	outs := Reply(in)
	if len(outs) != 3 {
		t.Fatalf("n not honoured: %d", len(outs))
	}
	for i := range outs {
		for j := i + 1; j < len(outs); j++ {
			if reflect.DeepEqual(outs[i].Content, outs[j].Content) {
				t.Errorf("outputs %d and %d have the same content %q", i, j, outs[i].Content)
			}
		}
	}
}

func TestSimulatedFamilies(t *testing.T) {
	const plain = "Create hello.txt containing hi and submit its word count."
	task := "<task>" + plain + "</task>"
	tests := []struct {
		name  string
		task  string // the run's task; plain when empty
		meta  map[string]string
		g     operations.GenerateRequest
		check func(t *testing.T, outs []operations.Output)
	}{
		{
			name: "actor explores first",
			g:    operations.GenerateRequest{Tools: actorTools, Messages: []operations.Message{{Role: "system", Content: "Agent. " + task}}},
			check: func(t *testing.T, outs []operations.Output) {
				c := onlyCall(t, outs[0])
				if c.Name != "bash" || args(t, c)["command"] != "ls -la" || outs[0].FinishReason != "tool_calls" {
					t.Fatalf("got %+v", outs[0])
				}
			},
		},
		{
			name: "actor acts on the task after exploring",
			g: operations.GenerateRequest{Tools: actorTools, Messages: []operations.Message{
				{Role: "system", Content: "Agent. " + task},
				{Role: "assistant", ToolCalls: []operations.ToolCall{{ID: "1", Name: "bash", Arguments: `{"command":"ls -la"}`}}},
				{Role: "tool", ToolCallID: "1", Content: "total 0"},
			}},
			check: func(t *testing.T, outs []operations.Output) {
				c := onlyCall(t, outs[0])
				if cmd := args(t, c)["command"]; cmd != `printf '%s\n' 'hi' > hello.txt` || !strings.Contains(c.Arguments, "> hello.txt") {
					t.Fatalf("command = %q (%s)", cmd, c.Arguments)
				}
			},
		},
		{
			name: "actor submits after the plan",
			g: operations.GenerateRequest{Tools: actorTools, Messages: []operations.Message{
				{Role: "system", Content: "Agent. " + task},
				{Role: "assistant", ToolCalls: []operations.ToolCall{{ID: "1", Name: "bash", Arguments: `{"command":"ls -la"}`}}},
				{Role: "tool", ToolCallID: "1", Content: "total 0"},
				{Role: "assistant", ToolCalls: []operations.ToolCall{{ID: "2", Name: "bash", Arguments: `{"command":"printf '%s\\n' 'hi' > hello.txt"}`}}},
				{Role: "tool", ToolCallID: "2", Content: ""},
				{Role: "assistant", ToolCalls: []operations.ToolCall{{ID: "3", Name: "bash", Arguments: `{"command":"wc -w < hello.txt"}`}}},
				{Role: "tool", ToolCallID: "3", Content: "1\n\n3 of 100 actions used"},
			}},
			check: func(t *testing.T, outs []operations.Output) {
				c := onlyCall(t, outs[0])
				if c.Name != "submit" || args(t, c)["answer"] != "1" {
					t.Fatalf("got %+v", c)
				}
			},
		},
		{
			name: "subagent concludes with run_bash",
			task: "print the directory.",
			g: operations.GenerateRequest{Tools: []operations.Tool{{Name: "run_bash", Parameters: toolBash.Parameters}, toolConclude}, Messages: []operations.Message{
				{Role: "system", Content: "Sub. task: print the directory."},
				{Role: "assistant", ToolCalls: []operations.ToolCall{{ID: "1", Name: "run_bash", Arguments: `{"command":"ls -la"}`}}},
				{Role: "tool", ToolCallID: "1", Content: "-rw-r--r-- 1 u u 3 Jan 1 00:00 data.csv"},
				{Role: "assistant", ToolCalls: []operations.ToolCall{{ID: "2", Name: "run_bash", Arguments: `{"command":"pwd"}`}}},
				{Role: "tool", ToolCallID: "2", Content: "/work"},
				{Role: "assistant", ToolCalls: []operations.ToolCall{{ID: "3", Name: "run_bash", Arguments: `{"command":"head -n 40 -- data.csv"}`}}},
				{Role: "tool", ToolCallID: "3", Content: "a,b"},
			}},
			check: func(t *testing.T, outs []operations.Output) {
				c := onlyCall(t, outs[0])
				if c.Name != "conclude" || args(t, c)["result"] != "a,b" {
					t.Fatalf("got %+v", c)
				}
			},
		},
		{
			name: "advisor advises the next step",
			g: operations.GenerateRequest{Tools: []operations.Tool{toolAdvise}, ToolChoice: "advise", Messages: []operations.Message{
				{Role: "system", Content: "You guide an agent. Tools: bash, submit. " + task + " Call advise."},
			}},
			check: func(t *testing.T, outs []operations.Output) {
				c := onlyCall(t, outs[0])
				if c.Name != "advise" || !strings.Contains(args(t, c)["advice"].(string), "ls -la") {
					t.Fatalf("got %+v", c)
				}
			},
		},
		{
			name: "rater prefers progress",
			g: operations.GenerateRequest{Tools: []operations.Tool{toolRate}, Messages: []operations.Message{
				{Role: "system", Content: "Rate the options from -2 to 2. " + task + "\n<candidate_options>\n<option_0>\nI will look.\n{\"name\":\"bash\",\"arguments\":{\"command\":\"pwd\"}}\n</option_0>\n<option_1>\nCreate it.\n{\"name\":\"bash\",\"arguments\":{\"command\":\"printf 'hi' > hello.txt\"}}\n</option_1>\n</candidate_options>"},
			}},
			check: func(t *testing.T, outs []operations.Output) {
				c := onlyCall(t, outs[0])
				rs := args(t, c)["ratings"].([]any)
				if c.Name != "rate_options" || len(rs) != 2 {
					t.Fatalf("got %+v", c)
				}
				r0, r1 := rs[0].(map[string]any), rs[1].(map[string]any)
				if r0["option_index"] != 0.0 || r1["option_index"] != 1.0 || r1["rating"].(float64) <= r0["rating"].(float64) {
					t.Fatalf("ratings = %v", rs)
				}
				for _, r := range rs {
					if v := r.(map[string]any)["rating"].(float64); v < -2 || v > 2 {
						t.Fatalf("rating out of range: %v", v)
					}
				}
			},
		},
		{
			name: "text-mode rater answers a json block",
			meta: role(operations.ModelRoleRater),
			g: operations.GenerateRequest{Messages: []operations.Message{
				{Role: "system", Content: "Rate the options and reply with a ```json block holding the rate_options arguments.\nOption 0: ```submit\n1\n```\nOption 1: ```bash\nls\n```"},
			}},
			check: func(t *testing.T, outs []operations.Output) {
				m := regexp.MustCompile("(?s)```json\n(.*?)\n```").FindStringSubmatch(outs[0].Content)
				if m == nil {
					t.Fatalf("no json block in %q", outs[0].Content)
				}
				var v struct {
					Ratings []struct {
						OptionIndex int     `json:"option_index"`
						Rating      float64 `json:"rating"`
					} `json:"ratings"`
				}
				if err := json.Unmarshal([]byte(m[1]), &v); err != nil || len(v.Ratings) != 2 || v.Ratings[0].Rating <= v.Ratings[1].Rating {
					t.Fatalf("ratings %+v (%v)", v, err)
				}
			},
		},
		{
			name: "text-mode actor answers a fenced bash block",
			meta: role(operations.ModelRoleActor),
			g: operations.GenerateRequest{Messages: []operations.Message{
				{Role: "system", Content: "You are an agent. To run a command write ```bash\\n<command>\\n```; to finish write ```submit\\n<answer>\\n```. " + task},
			}},
			check: func(t *testing.T, outs []operations.Output) {
				if !strings.Contains(outs[0].Content, "```bash\nls -la\n```") || len(outs[0].ToolCalls) != 0 {
					t.Fatalf("got %q", outs[0].Content)
				}
			},
		},
		{
			name: "text mode without a role is plain text, whatever the prompt says",
			g: operations.GenerateRequest{Messages: []operations.Message{
				{Role: "system", Content: "You are an agent. To run a command write ```bash\n<command>\n```; to finish write ```submit\n<answer>\n```. Call advise or select_winner. " + task},
				{Role: "user", Content: "hello"},
			}},
			check: func(t *testing.T, outs []operations.Output) {
				if c := outs[0].Content; c == "" || strings.Contains(c, "```") || len(outs[0].ToolCalls) != 0 {
					t.Fatalf("got %+v", outs[0])
				}
			},
		},
		{
			name: "the role wins over the tools offered",
			meta: role(operations.ModelRoleAdvisor),
			g:    operations.GenerateRequest{Tools: []operations.Tool{toolAdvise, toolBash}, Messages: []operations.Message{{Role: "system", Content: "Help. " + task}}},
			check: func(t *testing.T, outs []operations.Output) {
				if c := onlyCall(t, outs[0]); c.Name != "advise" || args(t, c)["advice"] == "" {
					t.Fatalf("got %+v", outs[0])
				}
			},
		},
		{
			name: "judge picks a named candidate",
			g: operations.GenerateRequest{Tools: []operations.Tool{toolWinner}, ToolChoice: "select_winner", Messages: []operations.Message{
				{Role: "user", Content: "Compare agent_101_0 and agent_202_1 and pick the better one."},
			}},
			check: func(t *testing.T, outs []operations.Output) {
				a := args(t, onlyCall(t, outs[0]))
				if w := a["winner_id"]; w != "agent_101_0" && w != "agent_202_1" {
					t.Fatalf("winner = %v", a)
				}
				if a["reasoning"] == "" {
					t.Fatalf("no reasoning: %v", a)
				}
			},
		},
		{
			name: "unknown tool filled from its schema",
			g:    operations.GenerateRequest{Tools: []operations.Tool{{Name: "lookup", Parameters: schema(`"query":{"type":"string"},"limit":{"type":"integer"},"mode":{"type":"string","enum":["fast","slow"]}`)}}, Messages: userMsg("find it")},
			check: func(t *testing.T, outs []operations.Output) {
				a := args(t, onlyCall(t, outs[0]))
				if a["query"] == "" || a["limit"] != 1.0 || (a["mode"] != "fast" && a["mode"] != "slow") {
					t.Fatalf("args = %v", a)
				}
			},
		},
		{
			name: "no tools answers text",
			g:    operations.GenerateRequest{Messages: userMsg("What is the capital of France?")},
			check: func(t *testing.T, outs []operations.Output) {
				if outs[0].Content == "" || len(outs[0].ToolCalls) != 0 || outs[0].FinishReason != "stop" {
					t.Fatalf("got %+v", outs[0])
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.g.Model = "simulated"
			task := tt.task
			if task == "" {
				task = plain
			}
			tt.check(t, Reply(Input{Task: task, Meta: tt.meta, Request: &tt.g}))
		})
	}
}

func TestAnswerFrom(t *testing.T) {
	tests := []struct{ name, out, want string }{
		{"wc with notice", "1\n\n3 of 100 actions used", "1"},
		{"wc with file name", "  3 hello.txt\n", "3"},
		{"tagged text", "<bash-output>\nhello world\n</bash-output>", "hello world"},
		{"a phase's note only", "Exit code: 1", "Exit code: 1"},
		{"empty", "", "done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := answerFrom(tt.out); got != tt.want {
				t.Fatalf("answerFrom(%q) = %q, want %q", tt.out, got, tt.want)
			}
		})
	}
}

func TestParseCreate(t *testing.T) {
	tests := []struct {
		name, task, file, content string
		ok                        bool
	}{
		{"plain", "create hello.txt containing hi and submit its word count", "hello.txt", "hi", true},
		{"quoted content", "Create a file named notes.md with the content 'hello world'.", "notes.md", "hello world", true},
		{"backticked name", "Write `out.txt` containing \"a b c\" then stop", "out.txt", "a b c", true},
		{"parent path refused", "create ../x.txt containing hi", "", "", false},
		{"no file", "make sure it works", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c, ok := parseCreate(tt.task)
			if f != tt.file || c != tt.content || ok != tt.ok {
				t.Fatalf("got %q %q %v", f, c, ok)
			}
		})
	}
}

// triframe drives a small advisor -> actors -> raters -> tool loop against
// the simulated provider, running the chosen commands with bash in dir. It
// returns the submitted answer and the number of tool actions.
func triframe(t *testing.T, task, dir string, textMode bool) (string, int) {
	t.Helper()
	call := func(r string, g operations.GenerateRequest) []operations.Output {
		g.Model = "simulated"
		meta := role(r)
		if textMode {
			meta[operations.MetaFormat] = operations.FormatFenced
		}
		return Reply(Input{Task: task, Meta: meta, Request: &g})
	}
	var history []operations.Message // actor view
	var transcript strings.Builder   // advisor and rater view
	actorSys := "You are an autonomous agent on a Linux machine. Use the tools to make progress, one step at a time.\n<task>" + task + "</task>"
	if textMode {
		actorSys += "\nTools are called with fenced blocks: ```bash\\ncommand\\n``` runs a command, ```submit\\nanswer\\n``` submits."
	}
	reBlock := regexp.MustCompile("(?s)```(bash|submit)\n(.*?)\n```")
	for action := 0; action < 10; action++ {
		adv := call(operations.ModelRoleAdvisor, operations.GenerateRequest{
			Tools: []operations.Tool{toolAdvise}, ToolChoice: "advise",
			Messages: []operations.Message{
				{Role: "system", Content: "You advise an agent that has tools bash and submit.\n<task>" + task + "</task>\nCall advise."},
				{Role: "user", Content: transcript.String()},
			},
		})
		advice := args(t, onlyCall(t, adv[0]))["advice"].(string)
		var tools []operations.Tool
		if !textMode {
			tools = actorTools
		}
		with := append([]operations.Message{{Role: "system", Content: actorSys}, {Role: "user", Content: "<advisor>" + advice + "</advisor>"}}, history...)
		without := append([]operations.Message{{Role: "system", Content: actorSys}}, history...)
		type opt struct {
			content, name, arg string
		}
		var opts []opt
		seen := map[opt]bool{}
		for _, msgs := range [][]operations.Message{with, without} {
			for _, o := range call(operations.ModelRoleActor, operations.GenerateRequest{Tools: tools, N: 2, Messages: msgs}) {
				var op opt
				if textMode {
					m := reBlock.FindStringSubmatch(o.Content)
					if m == nil {
						t.Fatalf("no block in %q", o.Content)
					}
					op = opt{o.Content, m[1], m[2]}
				} else {
					c := onlyCall(t, o)
					a := args(t, c)
					op = opt{content: o.Content, name: c.Name}
					if c.Name == "bash" {
						op.arg = a["command"].(string)
					} else {
						op.arg = a["answer"].(string)
					}
				}
				if !seen[op] {
					seen[op] = true
					opts = append(opts, op)
				}
			}
		}
		chosen := opts[0]
		if len(opts) > 1 {
			var b strings.Builder
			b.WriteString("Rate each option from -2 to 2.\n<transcript>\n" + transcript.String() + "</transcript>\n<candidate_options>\n")
			for i, o := range opts {
				fmt.Fprintf(&b, "<option_%d>\n%s\n{\"name\": %q, \"arg\": %q}\n</option_%d>\n", i, o.content, o.name, o.arg, i)
			}
			b.WriteString("</candidate_options>")
			rate := call(operations.ModelRoleRater, operations.GenerateRequest{Tools: []operations.Tool{toolRate}, Messages: []operations.Message{{Role: "system", Content: b.String()}}})
			best, bestR := 0, -10.0
			for _, r := range args(t, onlyCall(t, rate[0]))["ratings"].([]any) {
				m := r.(map[string]any)
				if v := m["rating"].(float64); v > bestR {
					best, bestR = int(m["option_index"].(float64)), v
				}
			}
			chosen = opts[best]
		}
		t.Logf("action %d: %d options, chose %s %q", action, len(opts), chosen.name, chosen.arg)
		if chosen.name == "submit" {
			return chosen.arg, action
		}
		cmd := exec.CommandContext(context.Background(), "bash", "-c", chosen.arg)
		cmd.Dir = dir
		out, _ := cmd.CombinedOutput()
		id := fmt.Sprintf("call_%d", action)
		if textMode {
			history = append(history, operations.Message{Role: "assistant", Content: chosen.content},
				operations.Message{Role: "user", Content: string(out)})
		} else {
			history = append(history,
				operations.Message{Role: "assistant", Content: chosen.content, ToolCalls: []operations.ToolCall{{ID: id, Name: "bash", Arguments: fmt.Sprintf(`{"command":%q}`, chosen.arg)}}},
				operations.Message{Role: "tool", ToolCallID: id, Content: string(out)})
		}
		fmt.Fprintf(&transcript, "<agent>%s</agent>\n<bash-output>%s</bash-output>\n", chosen.arg, out)
	}
	t.Fatalf("no submission after 10 actions; transcript:\n%s", transcript.String())
	return "", 0
}

func TestSimulatedTriframeFinishesTask(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not available")
	}
	for _, textMode := range []bool{false, true} {
		t.Run(fmt.Sprintf("text_mode=%v", textMode), func(t *testing.T) {
			dir := t.TempDir()
			answer, actions := triframe(t, "Create hello.txt containing hi and submit its word count.", dir, textMode)
			b, err := os.ReadFile(filepath.Join(dir, "hello.txt"))
			if err != nil || string(b) != "hi\n" {
				t.Fatalf("hello.txt = %q, %v", b, err)
			}
			if answer != "1" || actions > 5 {
				t.Fatalf("answer %q after %d actions", answer, actions)
			}
		})
	}
}

func TestSimulatedExploresWithoutInstructions(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not available")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("the answer is 42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	answer, actions := triframe(t, "Look around and report what you find.", dir, false)
	if answer != "the answer is 42" || actions != 3 {
		t.Fatalf("answer %q after %d actions", answer, actions)
	}
}

func FuzzSimulate(f *testing.F) {
	f.Add("Create hello.txt containing hi and submit its word count.", "1\n", "<option_0> submit <option_1> ls", 2)
	f.Add("", "", "", 0)
	f.Add("task: write `a.txt` containing \"x", "<bash-output>", "Option 3: ```bash", 5)
	f.Fuzz(func(t *testing.T, task, output, last string, n int) {
		n = n % 4
		for _, tools := range [][]operations.Tool{nil, actorTools, {toolAdvise}, {toolRate}, {toolWinner}, {{Name: "x", Parameters: json.RawMessage(last)}}} {
			g := &operations.GenerateRequest{Model: "simulated", N: n, Tools: tools, Messages: []operations.Message{
				{Role: "system", Content: "<task>" + task + "</task> bash submit rate_options"},
				{Role: "assistant", Content: "```bash\n" + output + "\n```", ToolCalls: []operations.ToolCall{{Name: "bash", Arguments: output}}},
				{Role: "tool", Content: output},
				{Role: "user", Content: last},
			}}
			for _, r := range []string{"", operations.ModelRoleActor, operations.ModelRoleAdvisor, operations.ModelRoleRater, operations.ModelRoleJudge, "other"} {
				outs := Reply(Input{Task: task, Meta: role(r), Request: g})
				if len(outs) != max(1, n) {
					t.Fatalf("outputs = %d", len(outs))
				}
				for _, o := range outs {
					for _, tc := range o.ToolCalls {
						if !json.Valid([]byte(tc.Arguments)) {
							t.Fatalf("invalid arguments %q", tc.Arguments)
						}
					}
				}
			}
		}
	})
}
