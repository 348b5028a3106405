package triframe_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/agent"
	"github.com/flockrun/flock/phases/phasetest"
	"github.com/flockrun/flock/phases/triframe"
)

// bigOutput is n bytes of numbered lines: its first and last lines tell
// whether a clipped copy kept its head and its tail.
func bigOutput(n int) (out, head, tail string) {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "output line %05d of the listing\n", i)
	}
	s := b.String()[:n]
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return s, lines[0], lines[len(lines)-2]
}

var elision = regexp.MustCompile(`\[\.\.\. (\d+) characters trimmed \.\.\.\]`)

// trimHistory is a short history whose newest action printed a huge output.
func trimHistory(t *testing.T, output string) *phasetest.State {
	t.Helper()
	st := &phasetest.State{Limited: operations.RunLimits{Actions: 10}, Used: operations.RunUsage{Actions: 2}}
	add := func(typ string, v any) {
		e := phases.MustEntry(typ, v)
		e.Seq = uint64(len(st.Log) + 1)
		st.Log = append(st.Log, e)
	}
	call := func(id, cmd string) agent.Option {
		c, err := agent.Validate(id, agent.ToolBash, `{"command":"`+cmd+`"}`, nil)
		if err != nil {
			t.Fatal(err)
		}
		return agent.Option{Content: "Running " + cmd + ".", Call: &c}
	}
	add(triframe.EntryTask, triframe.Task{Summary: "task", Task: "List the big directory.", Tools: []string{"bash"}, Mode: agent.ModeTools})
	add(triframe.EntryAdvice, triframe.Advice{Summary: "a", Advice: "Look around first."})
	add(triframe.EntryChoice, triframe.Choice{Summary: "c", Option: call("call_small", "pwd")})
	add(triframe.EntryToolOutput, agent.ToolOutput{Summary: "t", Tool: "bash", CallID: "call_small", Output: "/work"})
	add(triframe.EntryAdvice, triframe.Advice{Summary: "a", Advice: "Now list it."})
	add(triframe.EntryChoice, triframe.Choice{Summary: "c", Option: call("call_big", "ls -R /big")})
	add(triframe.EntryToolOutput, agent.ToolOutput{Summary: "t", Tool: "bash", CallID: "call_big", Output: output,
		Notice: "Usage: 2 of 10 actions used (20%)."})
	add(triframe.EntryAdvice, triframe.Advice{Summary: "a", Advice: "ADVICE-AFTER: count the files."})
	return st
}

func trimInput(st *phasetest.State, phase, settings string, results ...operations.Result) phases.Input {
	return phases.Input{Run: phases.RunInfo{ID: "trim", Workflow: triframe.Name, Phase: phase, Step: 9,
		Task: "List the big directory.", Settings: json.RawMessage(settings), Now: phasetest.Now, WorkDir: "/work"},
		State: st, Results: results}
}

func promptSize(msgs []operations.Message) int {
	n := 0
	for _, m := range msgs {
		n += agent.Size(m)
	}
	return n
}

// checkClipped asserts that content holds the head and the tail of the
// output with an elision marker counting what was cut.
func checkClipped(t *testing.T, content, head, tail string) {
	t.Helper()
	if !strings.Contains(content, head) || !strings.Contains(content, tail) {
		t.Fatalf("clipped output lost its head %q or its tail %q:\n%s", head, tail, agent.Line(content, 300))
	}
	m := elision.FindStringSubmatch(content)
	if m == nil {
		t.Fatalf("clipped output has no elision marker")
	}
	if m[1] == "0" {
		t.Fatalf("elision marker counts nothing: %s", m[0])
	}
}

// TestNewestOutputSurvivesTrimming: a 30,000-character output under a
// 20,000-character budget stays in every next prompt (actor with and
// without advice, advisor, raters) with its call, clipped head and tail,
// and every prompt stays within the budget (issue 9, point 10).
func TestNewestOutputSurvivesTrimming(t *testing.T) {
	const threshold = 20000
	output, head, tail := bigOutput(30000)
	for _, mode := range []struct {
		name, extra string
		tools       bool
	}{
		{"tools", "", true},
		{"fenced", `,"enable_tool_use":false`, false},
		{"xml", `,"enable_tool_use":false,"enable_xml":true`, false},
	} {
		settings := fmt.Sprintf(`{"advisors":[{"model":"adv"}],"actors":[{"model":"act"}],"raters":[{"model":"rat"}],
			"limit_type":"action","context_trimming_threshold":%d,"output_limit":%d%s}`, threshold, threshold, mode.extra)
		t.Run(mode.name+"/actor", func(t *testing.T) {
			out, err := runPhase(trimInput(trimHistory(t, output), triframe.PhaseActor, settings))
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Ops) != 2 {
				t.Fatalf("%d ops, want 2 (with and without advice)", len(out.Ops))
			}
			for _, op := range out.Ops {
				msgs := operations.Generate.Params(op).Messages
				if n := promptSize(msgs); n > threshold {
					t.Errorf("%s advice: prompt is %d characters, budget %d", op.Meta["advice"], n, threshold)
				}
				var call, result int = -1, -1
				for i, m := range msgs {
					switch {
					case m.Role == operations.RoleAssistant && (strings.Contains(m.Content, "ls -R /big") ||
						len(m.ToolCalls) == 1 && m.ToolCalls[0].ID == "call_big"):
						call = i
					case strings.Contains(m.Content, head):
						result = i
					}
				}
				if call < 0 || result != call+1 {
					t.Fatalf("%s advice: call at %d, result at %d; prompt:\n%s", op.Meta["advice"], call, result, dump(msgs))
				}
				if mode.tools && (msgs[result].Role != operations.RoleTool || msgs[result].ToolCallID != "call_big") {
					t.Fatalf("result is not the tool message answering call_big: %+v", msgs[result].Role)
				}
				checkClipped(t, msgs[result].Content, head, tail)
				if op.Meta["advice"] == "with" && !strings.Contains(msgs[len(msgs)-1].Content, "ADVICE-AFTER") {
					t.Fatalf("the advice given after the output is missing")
				}
			}
		})
		t.Run(mode.name+"/advisor", func(t *testing.T) {
			out, err := runPhase(trimInput(trimHistory(t, output), triframe.PhaseAdvisor, settings))
			if err != nil {
				t.Fatal(err)
			}
			msgs := operations.Generate.Params(out.Ops[0]).Messages
			if n := promptSize(msgs); n > threshold {
				t.Errorf("advisor prompt is %d characters, budget %d", n, threshold)
			}
			all := dump(msgs)
			if !strings.Contains(all, "Tool call: bash") || !strings.Contains(all, "ls -R /big") {
				t.Fatalf("advisor prompt lost the newest call:\n%s", agent.Line(all, 2000))
			}
			checkClipped(t, all, head, tail)
		})
		t.Run(mode.name+"/raters", func(t *testing.T) {
			opts := func(cmd string) operations.Output {
				if mode.tools {
					return operations.Output{ToolCalls: []operations.ToolCall{{ID: "o" + cmd, Name: "bash", Arguments: `{"command":"` + cmd + `"}`}}}
				}
				if mode.extra != "" && strings.Contains(mode.extra, "xml") {
					return operations.Output{Content: "<bash><command>" + cmd + "</command></bash>"}
				}
				return operations.Output{Content: "```bash\n" + cmd + "\n```"}
			}
			res := operations.Result{Kind: operations.KindGenerate, Meta: map[string]string{"role": "actor", "index": "0", "advice": "with"},
				Data: &operations.GenerateResult{Outputs: []operations.Output{opts("wc -l"), opts("du -sh")}}}
			out, err := runPhase(trimInput(trimHistory(t, output), triframe.PhaseAdvisorRatings, settings, res))
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Ops) != 1 {
				t.Fatalf("%d ops, want one rater generate (next %q)", len(out.Ops), out.Next)
			}
			msgs := operations.Generate.Params(out.Ops[0]).Messages
			if n := promptSize(msgs); n > threshold {
				t.Errorf("rater prompt is %d characters, budget %d", n, threshold)
			}
			all := dump(msgs)
			if !strings.Contains(all, "ls -R /big") {
				t.Fatalf("rater prompt lost the newest call:\n%s", agent.Line(all, 2000))
			}
			checkClipped(t, all, head, tail)
		})
	}
}

func dump(msgs []operations.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString("[" + m.Role + "] " + m.Content)
		for _, c := range m.ToolCalls {
			b.WriteString(" {call " + c.ID + " " + c.Name + " " + c.Arguments + "}")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestSettingsTypeErrorsNamePath: a value of the wrong type is named by
// its path (the settings decoder, phases/settings), nested ones included.
func TestSettingsTypeErrorsNamePath(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"actors":[{"model":"a"},{"model":7}]}`, "triframe settings: actors[1].model: want a string, got JSON number"},
		{`{"actors":[{"model":"a"}],"subagents":{"max_agents":"4"}}`, "triframe settings: subagents.max_agents: want a whole number, got JSON string"},
		{`{"actors":[{"model":"a"}],"enable_advising":"yes"}`, "triframe settings: enable_advising: want true or false, got JSON string"},
	} {
		_, err := triframe.ParseSettings(json.RawMessage(tc.doc))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v, want %q", tc.doc, err, tc.want)
		}
	}
}

// TestOutputLimitOverBudget: an output_limit larger than the context
// budget is refused before the run starts, naming both keys; left unset,
// output_limit defaults to at most the budget.
func TestOutputLimitOverBudget(t *testing.T) {
	base := `{"actors":[{"model":"act"}]`
	err := triframe.Workflow().CheckSettings(json.RawMessage(base + `,"context_trimming_threshold":20000,"output_limit":100000}`))
	if err == nil || !strings.Contains(err.Error(), "output_limit") || !strings.Contains(err.Error(), "context_trimming_threshold") {
		t.Fatalf("CheckSettings = %v, want an error naming output_limit and context_trimming_threshold", err)
	}
	for _, tt := range []struct {
		name string
		doc  string
		want int
	}{
		{"equal", base + `,"context_trimming_threshold":20000,"output_limit":20000}`, 20000},
		{"default under small budget", base + `,"context_trimming_threshold":5000}`, 5000},
		{"defaults", base + `}`, triframe.DefaultOutputLimit},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := triframe.ParseSettings(json.RawMessage(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if s.OutputLimit != tt.want {
				t.Fatalf("output_limit = %d, want %d", s.OutputLimit, tt.want)
			}
		})
	}
}

// runPhase calls in.Run.Phase as the workflow declares it.
func runPhase(in phases.Input) (phases.Output, error) {
	wf := triframe.Workflow()
	spec, ok := wf.Phase(in.Run.Phase)
	if !ok {
		return phases.Output{}, fmt.Errorf("no phase %q", in.Run.Phase)
	}
	return spec.Run(in)
}
