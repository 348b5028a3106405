package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit/testapp"
	"github.com/flockrun/flock/internal/testkit/testrun"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// modularRun starts a modular run in an in-process App (real executor,
// bbolt store, pty bash) and waits for its end.
func modularRun(t *testing.T, settings, task string) (state.Run, []phases.Entry) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// writeScript puts scripts in the test's temporary directories: their
	// parent is the operator's read root.
	data := t.TempDir()
	a := testapp.Open(t, configs.Server{DataDir: data, ReadRoots: []string{filepath.Dir(data)}})
	h := testrun.Start(t, a.Executor, workflows.StartRequest{Workflow: "modular", Settings: json.RawMessage(settings), Task: task})
	end := testrun.Wait(t, a.Executor, h.ID)
	entries, err := a.Store.Entries(ctx, h.ID, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	return end, entries
}

// writeScript writes scripted-model replies, one JSON object per line.
func writeScript(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func scriptedSettings(script, extra string) string {
	s := `{"generator":{"model":"agent"},"models":{"agent":{"provider":"scripted","script":` + quote(script) + `}}`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// summaries lists "type: summary" of the entries, for assertions and logs.
func summaries(entries []phases.Entry) []string {
	var out []string
	for _, e := range entries {
		var v struct {
			Summary string `json:"summary"`
			Answer  string `json:"answer"`
		}
		_ = json.Unmarshal(e.Data, &v)
		out = append(out, e.Type+": "+v.Summary+v.Answer)
	}
	return out
}

func hasEntry(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// TestModularScriptedSolvesTask runs the modular agent on a scripted
// model through a small real task: it creates a file, survives an empty
// reply, an invalid call and a command that overruns its timeout, changes
// the timeout twice and submits a value computed by a command.
func TestModularScriptedSolvesTask(t *testing.T) {
	script := writeScript(t,
		`{"content":"First I create the file.","tool_calls":[{"name":"bash","arguments":{"command":"printf 'hello flock' > greeting.txt"}}]}`,
		`{"content":""}`,
		`{"content":"Checking the size.","tool_calls":[{"name":"bash","arguments":{"cmd":"wc -c greeting.txt"}}]}`,
		`{"content":"Short timeout to test the interruption.","tool_calls":[{"name":"set_timeout","arguments":{"timeout":1}}]}`,
		`{"content":"This overruns.","tool_calls":[{"name":"bash","arguments":{"command":"echo started; sleep 20; echo never"}}]}`,
		`{"content":"Back to a sane timeout.","tool_calls":[{"name":"set_timeout","arguments":{"timeout":30}}]}`,
		`{"content":"Counting characters.","tool_calls":[{"name":"bash","arguments":{"command":"wc -c < greeting.txt"}}]}`,
		`{"content":"The file has 11 characters.","tool_calls":[{"name":"submit","arguments":{"answer":"11"}}]}`,
	)
	start := time.Now()
	end, entries := modularRun(t, scriptedSettings(script, `"limits":{"actions":20}`),
		"Create greeting.txt containing 'hello flock' (no newline), then submit the number of characters in it.")
	list := summaries(entries)
	t.Logf("entries:\n%s", strings.Join(list, "\n"))
	if end.Status != state.StatusSucceeded || end.EndReason != "submitted" {
		t.Fatalf("run ended %s (%s): %s", end.Status, end.EndReason, end.Error)
	}
	var result string
	if err := json.Unmarshal(end.Result, &result); err != nil || result != "11" {
		t.Fatalf("result = %s, want \"11\"", end.Result)
	}
	got, err := os.ReadFile(filepath.Join(end.WorkDir, "greeting.txt"))
	if err != nil || string(got) != "hello flock" {
		t.Fatalf("greeting.txt = %q, %v", got, err)
	}
	for _, want := range []string{
		"warning: no usable output",
		"warning: invalid call",
		"tool_output: timeout set to 1 s",
		"tool_output: bash timed out: started",
		"tool_output: timeout set to 30 s",
		"tool_output: bash output: 11",
		"submission: 11",
	} {
		if !hasEntry(list, want) {
			t.Errorf("no entry starting with %q", want)
		}
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("run took %s; the 1 s timeout did not interrupt sleep 20", d)
	}
	if end.Usage.Actions != 4 {
		t.Errorf("actions = %d, want 4 (three bash commands and the submission)", end.Usage.Actions)
	}
}

// TestModularScriptedTextMode runs the same kind of task with tools
// written as fenced blocks, and as XML elements.
func TestModularScriptedTextMode(t *testing.T) {
	tests := []struct {
		name, extra  string
		bash, submit func(string) string
	}{
		{name: "fenced", extra: `"enable_tool_use":false`,
			bash:   func(c string) string { return "```bash\n" + c + "\n```" },
			submit: func(a string) string { return "```submit\n" + a + "\n```" }},
		{name: "xml", extra: `"enable_tool_use":false,"enable_xml":true`,
			bash:   func(c string) string { return "<bash>\n" + c + "\n</bash>" },
			submit: func(a string) string { return "<submit>" + a + "</submit>" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := func(text string) string { return `{"content":` + quote(text) + `}` }
			script := writeScript(t,
				line("I will write the numbers.\n\n"+tt.bash("seq 1 5 > numbers.txt")),
				line("Now I sum them.\n\n"+tt.bash("awk '{s += $1} END {print s}' numbers.txt")),
				line("The sum is 15.\n\n"+tt.submit("15")),
			)
			end, entries := modularRun(t, scriptedSettings(script, tt.extra), "Write the numbers 1 to 5 into numbers.txt and submit their sum.")
			list := summaries(entries)
			t.Logf("entries:\n%s", strings.Join(list, "\n"))
			var result string
			_ = json.Unmarshal(end.Result, &result)
			if end.Status != state.StatusSucceeded || result != "15" {
				t.Fatalf("run ended %s (%s), result %s: %s", end.Status, end.EndReason, end.Result, end.Error)
			}
			if !hasEntry(list, "tool_output: bash output: 15") {
				t.Fatal("the sum command's output is missing")
			}
		})
	}
}

// TestModularLimitEndsRun checks that the engine's action limit ends a
// modular run that would otherwise go on.
func TestModularLimitEndsRun(t *testing.T) {
	var lines []string
	for i := 0; i < 10; i++ {
		lines = append(lines, `{"content":"Again.","tool_calls":[{"name":"bash","arguments":{"command":"echo tick >> ticks.txt"}}]}`)
	}
	end, entries := modularRun(t, scriptedSettings(writeScript(t, lines...), `"limits":{"actions":3}`), "Tick forever.")
	if end.Status != state.StatusFailed || end.EndReason != state.ReasonLimitActions {
		t.Fatalf("run ended %s (%s), want failed (%s)", end.Status, end.EndReason, state.ReasonLimitActions)
	}
	got, _ := os.ReadFile(filepath.Join(end.WorkDir, "ticks.txt"))
	if n := strings.Count(string(got), "tick"); n != 3 {
		t.Fatalf("%d ticks, want 3\n%s", n, strings.Join(summaries(entries), "\n"))
	}
}

// TestModularRetriesBounded checks that a model that never answers usably
// ends the run with a clear reason instead of looping.
func TestModularRetriesBounded(t *testing.T) {
	script := writeScript(t, `{"content":""}`, `{"content":""}`, `{"content":""}`)
	end, entries := modularRun(t, scriptedSettings(script, `"max_retries":2`), "Do something.")
	if end.Status != state.StatusFailed || end.EndReason != "no_usable_output" {
		t.Fatalf("run ended %s (%s), want failed (no_usable_output)\n%s", end.Status, end.EndReason, strings.Join(summaries(entries), "\n"))
	}
}

// TestModularSimulated runs the modular workflow on the built-in
// simulated model, as `flock run --workflow modular` does, to the end.
func TestModularSimulated(t *testing.T) {
	end, entries := modularRun(t, `{"generator":{"model":"simulated"},"limits":{"actions":20}}`,
		"Create hello.txt containing hi, then submit its word count.")
	list := summaries(entries)
	t.Logf("entries:\n%s", strings.Join(list, "\n"))
	var result string
	_ = json.Unmarshal(end.Result, &result)
	if end.Status != state.StatusSucceeded || end.EndReason != "submitted" || result != "1" {
		t.Fatalf("run ended %s (%s), result %s: %s", end.Status, end.EndReason, end.Result, end.Error)
	}
}
