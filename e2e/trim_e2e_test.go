package e2e

// Issue 9, point 10: the result of the agent's newest action reaches the
// next prompt even when it is larger than the context budget. A command
// prints 30,000 characters under a 20,000-character (triframe) or
// 5,000-token (modular) budget; the next generate requests, read back from
// the op journal, hold the call and the output clipped head and tail.

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit/testapp"
	"github.com/flockrun/flock/internal/testkit/testrun"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// bigCommand prints 909 numbered lines, 29,997 characters.
const bigCommand = "seq -f 'output line %05g of the listing' 0 908"

const (
	bigHead = "output line 00000 of the listing"
	bigTail = "output line 00908 of the listing"
)

var elided = regexp.MustCompile(`\[\.\.\. (\d+) characters trimmed \.\.\.\]`)

// journalGenerates returns the run's generate ops, in order.
func journalGenerates(t *testing.T, a *app.App, runID string) []state.Op {
	t.Helper()
	ops, err := a.Store.Ops(context.Background(), runID, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []state.Op
	for _, op := range ops {
		if op.Request.Kind == operations.KindGenerate && operations.Generate.Params(op.Request) != nil {
			out = append(out, op)
		}
	}
	return out
}

// checkNextPrompt asserts that msgs hold the call of bigCommand followed
// by its output, clipped head and tail with a marker, and returns the
// prompt's size in characters.
func checkNextPrompt(t *testing.T, label string, msgs []operations.Message) int {
	t.Helper()
	var all strings.Builder
	size := 0
	for _, m := range msgs {
		size += len(m.Content) + len(m.Reasoning)
		all.WriteString(m.Content + "\n")
		for _, c := range m.ToolCalls {
			size += len(c.Name) + len(c.Arguments)
			all.WriteString(c.Name + " " + c.Arguments + "\n")
		}
	}
	text := all.String()
	call := strings.Index(text, "seq -f")
	head := strings.Index(text, bigHead)
	if call < 0 || head < call {
		t.Fatalf("%s: the call (at %d) and its output (at %d) are not both in the prompt:\n%.2000s", label, call, head, text)
	}
	if !strings.Contains(text, bigTail) {
		t.Fatalf("%s: the output's tail %q is missing", label, bigTail)
	}
	m := elided.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("%s: no elision marker in the clipped output", label)
	}
	t.Logf("%s: %d messages, %d characters, marker %s", label, len(msgs), size, m[0])
	return size
}

func TestTriframeNewestOutputSurvivesTrimming(t *testing.T) {
	const threshold = 20000
	settings := map[string]any{
		"workflow_type":              "triframe",
		"advisors":                   []any{map[string]any{"model": "adv"}},
		"actors":                     []any{map[string]any{"model": "act"}},
		"limit_type":                 "action",
		"limits":                     map[string]any{"actions": 10, "seconds": 120},
		"context_trimming_threshold": threshold,
		"output_limit":               threshold,
	}
	scripts := map[string][]line{
		"adv": {
			call("", "", "advise", map[string]any{"advice": "ADVICE1: list everything."}),
			call("", "", "advise", map[string]any{"advice": "ADVICE2: you have the listing; submit."}),
		},
		"act": {
			call("ADVICE1", "Listing.", "bash", bash(bigCommand)),
			call("<task>", "Listing.", "bash", bash(bigCommand)),
			// Both replies of the second step need the output to match.
			call("ADVICE2", "Done.", "submit", map[string]any{"answer": "909"}),
			call(bigTail, "Done.", "submit", map[string]any{"answer": "909"}),
		},
	}
	r := runTriframe(t, settings, scripts, "List the numbered lines, then submit how many there are.")
	if r.head.Status != state.StatusSucceeded || r.result(t) != "909" {
		t.Fatalf("run ended %s (%s), result %s", r.head.Status, r.head.EndReason, r.head.Result)
	}
	gens := journalGenerates(t, r.a, r.head.ID)
	bashStep := uint64(0)
	ops, err := r.a.Store.Ops(context.Background(), r.head.ID, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if op.Request.Kind == operations.KindBash {
			bashStep = op.Step
			if op.Result == nil || operations.Bash.Result(*op.Result) == nil || len(operations.Bash.Result(*op.Result).Stdout) < 29000 {
				t.Fatalf("the command did not print 30,000 characters: %+v", op.Result)
			}
		}
	}
	checked := 0
	for _, op := range gens {
		if op.Step <= bashStep {
			continue
		}
		label := fmt.Sprintf("step %d %s %s", op.Step, op.Request.Meta["role"], op.Request.Meta["advice"])
		if n := checkNextPrompt(t, label, operations.Generate.Params(op.Request).Messages); n > threshold {
			t.Errorf("%s: prompt is %d characters, budget %d", label, n, threshold)
		}
		checked++
	}
	if checked != 3 {
		t.Fatalf("checked %d generates after the command, want 3 (advisor, actor with and without advice)", checked)
	}
}

func TestModularNewestOutputSurvivesTrimming(t *testing.T) {
	const threshold = 5000
	script := writeScript(t,
		`{"content":"Listing.","tool_calls":[{"name":"bash","arguments":{"command":`+quote(bigCommand)+`}}]}`,
		`{"content":"Done.","tool_calls":[{"name":"submit","arguments":{"answer":"909"}}]}`,
	)
	// writeScript puts the script in a temporary directory of the test:
	// their parent is the operator's read root.
	data := t.TempDir()
	a := testapp.Open(t, configs.Server{DataDir: data, ReadRoots: []string{filepath.Dir(data)}})
	settings := scriptedSettings(script, fmt.Sprintf(`"limits":{"actions":10},"context_trimming_threshold":%d,"output_limit":%d`, threshold, 4*threshold))
	h := testrun.Start(t, a.Executor, workflows.StartRequest{Workflow: "modular", Settings: json.RawMessage(settings),
		Task: "List the numbered lines, then submit how many there are."})
	end := testrun.Wait(t, a.Executor, h.ID)
	if end.Status != state.StatusSucceeded || end.EndReason != "submitted" {
		t.Fatalf("run ended %s (%s): %s", end.Status, end.EndReason, end.Error)
	}
	gens := journalGenerates(t, a, h.ID)
	if len(gens) != 2 {
		t.Fatalf("%d generates, want 2", len(gens))
	}
	msgs := operations.Generate.Params(gens[1].Request).Messages
	checkNextPrompt(t, "second generate", msgs)
	// The simulated and scripted models are estimated at bytes/4.
	tokens := 0
	for _, m := range msgs {
		n := len(m.Content)
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
		tokens += (n+3)/4 + 4
	}
	for _, tl := range operations.Generate.Params(gens[1].Request).Tools {
		tokens += (len(tl.Name)+3)/4 + (len(tl.Description)+3)/4 + (len(tl.Parameters)+3)/4 + 4
	}
	if tokens+3 > threshold {
		t.Errorf("second prompt is about %d tokens, budget %d", tokens+3, threshold)
	}
}

// TestOutputLimitOverBudgetRefusedAtStart: the run is refused before it
// exists, with an error naming both keys, in each workflow that trims.
func TestOutputLimitOverBudgetRefusedAtStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := testapp.Open(t, configs.Server{DataDir: t.TempDir()})
	for _, tc := range []struct {
		workflow, settings, budgetKey string
	}{
		{"triframe", `{"actors":[{"model":"m"}],"context_trimming_threshold":20000,"output_limit":100000}`, "context_trimming_threshold"},
		{"modular", `{"generator":{"model":"m"},"context_trimming_threshold":20000,"output_limit":100000}`, "context_trimming_threshold"},
		{"react", `{"model":"m","context_chars":20000,"output_limit":100000}`, "context_chars"},
	} {
		t.Run(tc.workflow, func(t *testing.T) {
			_, err := a.Executor.StartRun(ctx, workflows.StartRequest{Workflow: tc.workflow, Settings: json.RawMessage(tc.settings), Task: "t"})
			if err == nil || !strings.Contains(err.Error(), "output_limit") || !strings.Contains(err.Error(), tc.budgetKey) {
				t.Fatalf("StartRun = %v, want a refusal naming output_limit and %s", err, tc.budgetKey)
			}
		})
	}
	runs, _, err := a.Store.Runs(ctx, state.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 0 {
		t.Fatalf("%d runs were created", len(runs))
	}
}
