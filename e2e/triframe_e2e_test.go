package e2e

// End-to-end triframe runs in process: app.Open on a temp data dir (real
// executor, bbolt store, persistent bash) with scripted models. Each
// scripted line matches a substring of the last user/tool message of the
// request it answers, so parallel generates (with/without advice) get the
// intended replies.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit/testapp"
	"github.com/flockrun/flock/internal/testkit/testrun"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// line is one scripted reply.
type line struct {
	Content   string     `json:"content,omitempty"`
	ToolCalls []toolCall `json:"tool_calls,omitempty"`
	Match     string     `json:"match,omitempty"`
}

type toolCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

func call(match, content, name string, args map[string]any) line {
	return line{Match: match, Content: content, ToolCalls: []toolCall{{Name: name, Arguments: args}}}
}

func text(match, content string) line { return line{Match: match, Content: content} }

// tfRun is a finished triframe run.
type tfRun struct {
	head    state.Run
	entries []phases.Entry
	a       *app.App
}

// runTriframe starts a triframe run with settings whose models are the
// given scripts, and waits for it to end.
func runTriframe(t *testing.T, settings map[string]any, scripts map[string][]line, task string) tfRun {
	t.Helper()
	dir := t.TempDir()
	models := map[string]any{}
	for name, lines := range scripts {
		var b strings.Builder
		for _, l := range lines {
			j, err := json.Marshal(l)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(j)
			b.WriteByte('\n')
		}
		path := filepath.Join(dir, name+".jsonl")
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		models[name] = map[string]any{"provider": "scripted", "script": path}
	}
	settings["models"] = models
	doc, err := json.Marshal(settings)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	a := testapp.Open(t, configs.Server{DataDir: filepath.Join(dir, "data"), ReadRoots: []string{dir}})
	h := testrun.Start(t, a.Executor, workflows.StartRequest{Workflow: "triframe", Settings: doc, Task: task})
	end := testrun.Wait(t, a.Executor, h.ID)
	es, err := a.Store.Entries(ctx, h.ID, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	r := tfRun{head: end, entries: es, a: a}
	t.Logf("run %s: %s (%s) result %s", end.ID, end.Status, end.EndReason, end.Result)
	for _, s := range r.summaries() {
		t.Log("  " + s)
	}
	return r
}

// summaries lists "type: summary" of every entry.
func (r tfRun) summaries() []string {
	var out []string
	for _, e := range r.entries {
		var d struct {
			Summary string `json:"summary"`
		}
		_ = json.Unmarshal(e.Data, &d)
		out = append(out, e.Type+": "+d.Summary)
	}
	return out
}

// has reports whether some entry of type typ has a summary containing sub.
func (r tfRun) has(typ, sub string) bool {
	for _, s := range r.summaries() {
		if strings.HasPrefix(s, typ+": ") && strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func (r tfRun) count(typ string) int {
	n := 0
	for _, e := range r.entries {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func (r tfRun) must(t *testing.T, typ, sub string) {
	t.Helper()
	if !r.has(typ, sub) {
		t.Errorf("no %s entry mentioning %q", typ, sub)
	}
}

func (r tfRun) result(t *testing.T) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(r.head.Result, &s); err != nil {
		t.Fatalf("result %s: %v", r.head.Result, err)
	}
	return s
}

func bash(cmd string) map[string]any { return map[string]any{"command": cmd} }

// TestTriframeToolMode solves a small task with advice, two differing
// options rated by a rater, a low-rating retry, set_timeout, a bash
// timeout and single-option skips, then submits a computed value.
func TestTriframeToolMode(t *testing.T) {
	settings := map[string]any{
		"workflow_type": "triframe",
		"advisors":      []any{map[string]any{"model": "adv"}},
		"actors":        []any{map[string]any{"model": "act"}},
		"raters":        []any{map[string]any{"model": "rat"}},
		"limit_type":    "action",
		"limits":        map[string]any{"actions": 20, "tokens": 1000000, "seconds": 120},
	}
	scripts := map[string][]line{
		"adv": {
			call("", "", "advise", map[string]any{"advice": "ADVICE1: create the file first."}),
			call("", "", "advise", map[string]any{"advice": "ADVICE2: clean up."}),
			call("", "", "advise", map[string]any{"advice": "ADVICE3: try waiting."}),
			call("", "", "advise", map[string]any{"advice": "ADVICE4: count the bytes."}),
			call("", "", "advise", map[string]any{"advice": "ADVICE5: submit."}),
		},
		"act": {
			// Step 1: two differing options.
			call("ADVICE1", "Creating the file as advised.", "bash", bash("printf 'flock\\n' > notes.txt")),
			call("<task>", "Looking around first.", "bash", bash("ls")),
			// Step 2: both options rated badly, then the retry proposes set_timeout (twice: merged).
			call("ADVICE2", "Remove it.", "bash", bash("rm -f notes.txt")),
			call("(no output)", "Remove it quickly.", "bash", bash("rm notes.txt")),
			call("Every proposed action was rated poorly", "Shorter timeout.", "set_timeout", map[string]any{"timeout": 2}),
			call("Every proposed action was rated poorly", "Shorter timeout.", "set_timeout", map[string]any{"timeout": 2}),
			// Step 3: a command that times out (same option twice: no rating).
			call("ADVICE3", "Wait a bit.", "bash", bash("echo started; sleep 30")),
			call("Timeout set to 2 seconds", "Wait a bit.", "bash", bash("echo started; sleep 30")),
			// Step 4: count.
			call("ADVICE4", "Count.", "bash", bash("wc -c < notes.txt")),
			call("timed out", "Count.", "bash", bash("wc -c < notes.txt")),
			// Step 5: submit.
			call("ADVICE5", "Submitting.", "submit", map[string]any{"answer": "6"}),
			call("6", "Submitting.", "submit", map[string]any{"answer": "6"}),
		},
		"rat": {
			call("printf", "", "rate_options", map[string]any{"ratings": []any{
				map[string]any{"option_index": 0, "rating": 2, "comment": "creates the file"},
				map[string]any{"option_index": 1, "rating": 0, "comment": "only looks"}}}),
			call("rm -f", "", "rate_options", map[string]any{"ratings": []any{
				map[string]any{"option_index": 0, "rating": -2, "comment": "destroys the work"},
				map[string]any{"option_index": 1, "rating": -1.5, "comment": "destroys the work"}}}),
		},
	}
	r := runTriframe(t, settings, scripts, "Create notes.txt containing the word flock, then submit the number of bytes in it.")
	if r.head.Status != state.StatusSucceeded || r.head.EndReason != "submitted" || r.result(t) != "6" {
		t.Fatalf("run ended %s (%s) with %s", r.head.Status, r.head.EndReason, r.head.Result)
	}
	b, err := os.ReadFile(filepath.Join(r.head.WorkDir, "notes.txt"))
	if err != nil || string(b) != "flock\n" {
		t.Fatalf("notes.txt = %q, %v", b, err)
	}
	r.must(t, "advice", "ADVICE1")
	r.must(t, "options", "2 option(s): [0] bash: printf")
	r.must(t, "ratings", "[0] 2.00 (n=1) · [1] 0.00 (n=1) → option 0")
	r.must(t, "choice", "bash: printf 'flock\\n' > notes.txt (rated 2.00)")
	r.must(t, "warning", "Every proposed action was rated poorly")
	r.must(t, "options", "1 option(s): [0] set_timeout: 2")
	r.must(t, "tool_output", "Timeout set to 2 seconds")
	r.must(t, "tool_output", "bash timed out: started")
	r.must(t, "tool_output", "bash exit 0: 6")
	r.must(t, "submission", "")
	if n := r.count("ratings"); n != 2 {
		t.Errorf("%d ratings entries, want 2 (the other steps had a single option)", n)
	}
}

// TestTriframeTextModes runs the fenced and the XML text tool modes.
func TestTriframeTextModes(t *testing.T) {
	for _, tc := range []struct {
		name string
		xml  bool
		act  []line
	}{
		{"fenced", false, []line{
			text("", "I will create the file.\n\n```bash\nprintf 'a\\nb\\n' > two.txt\n```"),
			text("", "Now count.\n```sh\nwc -l < two.txt\n```"),
			text("", "The answer is 2.\n```submit\n2\n```"),
		}},
		{"xml", true, []line{
			text("", "I will create the file.\n<bash>printf 'a\\nb\\n' > two.txt</bash>"),
			text("", "A bad timeout first.\n<set_timeout>soon</set_timeout>"),
			text("", "Now count.\n<bash>\nwc -l < two.txt\n</bash>"),
			text("", "<submit>2</submit>"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			settings := map[string]any{
				"actors":          []any{map[string]any{"model": "act"}},
				"enable_advising": false,
				"enable_tool_use": false,
				"enable_xml":      tc.xml,
				"limits":          map[string]any{"actions": 10},
			}
			r := runTriframe(t, settings, map[string][]line{"act": tc.act}, "Create two.txt with two lines, then submit its line count.")
			if r.head.Status != state.StatusSucceeded || r.result(t) != "2" {
				t.Fatalf("run ended %s (%s) with %s", r.head.Status, r.head.EndReason, r.head.Result)
			}
			r.must(t, "tool_output", "bash exit 0: 2")
			if tc.xml {
				r.must(t, "warning", "set_timeout: the block must hold a whole number")
			}
		})
	}
}

// TestTriframeActionLimit ends a run by its action limit.
func TestTriframeActionLimit(t *testing.T) {
	var act []line
	for i := 0; i < 6; i++ {
		act = append(act, call("", "Again.", "bash", bash("echo tick")))
	}
	settings := map[string]any{
		"actors":          []any{map[string]any{"model": "act"}},
		"enable_advising": false,
		"limit_type":      "action",
		"limits":          map[string]any{"actions": 3},
	}
	r := runTriframe(t, settings, map[string][]line{"act": act}, "Say tick forever.")
	if r.head.Status != state.StatusFailed || r.head.EndReason != "limit_actions" {
		t.Fatalf("run ended %s (%s), want failed (limit_actions)", r.head.Status, r.head.EndReason)
	}
	if n := r.count("tool_output"); n != 2 {
		t.Errorf("%d tool outputs before the limit, want 2", n)
	}
	r.must(t, "choice", "bash: echo tick")
}

// TestTriframeIntermediateScoring scores with the task's scorer and reads
// the score log; there is no submit, so the run ends by its limit.
func TestTriframeIntermediateScoring(t *testing.T) {
	settings := map[string]any{
		"actors":               []any{map[string]any{"model": "act"}},
		"enable_advising":      false,
		"intermediate_scoring": true,
		"limits":               map[string]any{"actions": 3},
		"scoring":              map[string]any{"command": "if [ -f out.txt ]; then echo '{\"score\": 1, \"message\": \"out.txt exists\"}'; else echo 0; fi"},
	}
	act := []line{
		call("", "Make it.", "bash", bash("echo done > out.txt")),
		call("", "Check.", "score", map[string]any{}),
		call("", "History.", "score_log", map[string]any{}),
		call("", "More.", "bash", bash("echo more")),
		call("", "More.", "bash", bash("echo more")),
	}
	r := runTriframe(t, settings, map[string][]line{"act": act}, "Create out.txt.")
	if r.head.EndReason != "limit_actions" {
		t.Fatalf("run ended %s (%s), want limit_actions", r.head.Status, r.head.EndReason)
	}
	r.must(t, "tool_output", "score: Score: 1")
	r.must(t, "tool_output", "score_log: {")
	if r.count("score") != 1 {
		t.Errorf("score entries: %d, want 1", r.count("score"))
	}
}

// TestTriframeSubagents launches three subagents (two on the same task),
// waits for them, runs the tournament and submits the winner's result.
func TestTriframeSubagents(t *testing.T) {
	settings := map[string]any{
		"actors":           []any{map[string]any{"model": "act"}},
		"enable_advising":  false,
		"enable_subagents": true,
		"subagents":        map[string]any{"judge": map[string]any{"model": "judge"}},
		"limits":           map[string]any{"actions": 30, "tokens": 1000000},
	}
	agents := []any{
		map[string]any{"task": "SUBTASK-A: write alpha to a.txt", "approach": "printf"},
		map[string]any{"task": "SUBTASK-A: write alpha to a.txt", "approach": "echo"},
		map[string]any{"task": "SUBTASK-B: list the directory", "approach": "ls"},
	}
	act := []line{
		// The main agent (its task mentions MAIN-TASK).
		call("MAIN-TASK", "Delegating.", "launch_subagents", map[string]any{"agents": agents}),
		call("Winner: agent_5_1", "Using the winner's result.", "submit", map[string]any{"answer": "alpha written"}),
		// Subagents (each child has its own cursor over this script).
		call("SUBTASK-A", "Writing.", "bash", bash("echo alpha > a.txt && echo wrote-alpha")),
		call("wrote-alpha", "Done.", "conclude", map[string]any{"result": "a.txt holds alpha"}),
		call("SUBTASK-B", "Listing.", "bash", bash("ls && echo listed-dir")),
		call("listed-dir", "Done.", "conclude", map[string]any{"result": "the directory is empty"}),
	}
	judge := []line{call("", "Both worked; the second explained better.", "select_winner",
		map[string]any{"winner_id": "agent_5_1", "reasoning": "clearer report"})}
	r := runTriframe(t, settings, map[string][]line{"act": act, "judge": judge}, "MAIN-TASK: get alpha into a file using helpers.")
	if r.head.Status != state.StatusSucceeded || r.result(t) != "alpha written" {
		t.Fatalf("run ended %s (%s) with %s", r.head.Status, r.head.EndReason, r.head.Result)
	}
	r.must(t, "subagents", "3 subagents ended, 3 concluded")
	r.must(t, "tournament", "agent_5_1 beats agent_5_0 (judged)")
	r.must(t, "tool_output", "subagents: winner agent_5_1: a.txt holds alpha; winner agent_5_2: the directory is empty")
	for _, k := range []string{"0", "1"} {
		b, err := os.ReadFile(filepath.Join(r.head.WorkDir, "children", "agent_5_"+k, "a.txt"))
		if err != nil || string(b) != "alpha\n" {
			t.Errorf("child %s a.txt = %q, %v", k, b, err)
		}
	}
	kids, err := r.a.Store.Children(context.Background(), r.head.ID)
	if err != nil || len(kids) != 3 {
		t.Fatalf("children %v, %v", kids, err)
	}
	for _, id := range kids {
		h, err := r.a.Store.Run(context.Background(), id)
		if err != nil || h.Status != state.StatusSucceeded || h.EndReason != "concluded" || h.Limits.Actions != 5 {
			t.Errorf("child %s: %s %s limits %+v %v", id, h.Status, h.EndReason, h.Limits, err)
		}
	}
}
