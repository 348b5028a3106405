package simulated_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit/testrun"
	"github.com/flockrun/flock/internal/testkit/testsandbox"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// The rewording of TestRewordedPromptsSameRuns: what a person changing
// the phases' prompts would change. Every system prompt is replaced by
// other instructions; in every user message and every tool output the
// phases' tags, labels and set sentences are said otherwise (rewordings,
// reTags, reLabels), and a message that is not a tool output gets a
// sentence of its own first. What the prompts quote is left as it is: the
// task, the observations, the calls of the options, the tool outputs
// themselves; so are the model's own turns.

// rewordings are set phrases of the phases' prompts (phases/triframe,
// modular, react, agent, synthesis, synthesis/qa, grading), each with
// another wording.
var rewordings = strings.NewReplacer(
	// phases/triframe and phases/agent
	"Candidate next actions:", "The actions proposed for the next step:",
	"on the scale above", "using the scale you were given",
	"Rate every one of these", "Score all",
	"Transcript of the agent's work so far", "What the agent has done up to now",
	"nothing yet, this is its first action", "no step was taken yet",
	"oldest entries are left out", "earliest records are omitted",
	"Give your advice for the agent's next step.", "What should the agent do next? Advise it.",
	"Your working directory is", "You work in the directory",
	"Tool call:", "Proposed call ->",
	"Invalid tool call:", "Unusable call ->",
	"(no tool call)", "(no call proposed)",
	"Usage:", "Budget spent ->",
	"actions used", "actions consumed",
	"Warning:", "Caution ->",
	"The chosen action had no valid tool call.", "That step could not be carried out: its call was unusable.",
	"Your task:", "The assignment:",
	"Usage so far:", "Spent up to now ->",
	// phases/synthesis (the explorer's prompt)
	"You are exploring an environment through tools to collect facts from which multi-hop questions can be written.",
	"Gather facts by calling tools; questions needing several steps will be written from them.",
	"Seed description:", "About the origin ->",
	"Goal:", "Aim ->",
	"Tips:", "Hints ->",
	"Path so far: none (this is the first action).", "Route up to now: empty, nothing was done yet.",
	"Path so far:", "Route up to now ->",
	"Actions already taken for this seed (forbidden: do not repeat any of them):", "Calls made for this origin already (never repeat one):",
	"Tools:", "Instruments ->",
	"Call exactly one tool. In the message text, state your intent in one sentence.", "Make one call, and say in one sentence what you want from it.",
	"Answer with exactly these tags:", "Reply with these elements only:",
	"Your previous proposal was refused:", "The last suggestion was turned down ->",
	"Propose a different action.", "Suggest something else.",
	"was already taken", "had been made before",
	// synthesis/qa
	"## Seed", "### Origin",
	"## Trajectory", "### Record of calls",
	"## Requirements", "### Rules",
	"## Tips", "### Hints",
	"## Examples", "### Samples",
	"## Reply", "### Answer format",
	"## Regeneration required", "### Try again",
	"What the seed is:", "The origin is ->",
	"This is attempt", "Try number",
	"The previous question was rejected:", "The last question failed ->",
	"(no steps)", "(empty record)",
	"(the call failed; this is an error, not evidence)", "[failed call: not evidence]",
)

// reTags are the elements the phases wrap quoted texts in; they get other
// names (<task> becomes <r-task>, <option_2> <r-option_2>).
var reTags = regexp.MustCompile(`<(/?)(task|main_task|advice|agent_action|warning|operator_message|seed|question|reference|candidate|option_\d+|[a-z_]+-output)>`)

// reLabels are the field labels of the synthesis prompts' steps (and the
// steps' headings); they are said otherwise, their layout kept.
var reLabels = regexp.MustCompile(`(?m)^(\s*)(intent|tool|parameters|observation|Intent|Tool|Parameters|Observation|Step)\b`)

var labelWords = map[string]string{"intent": "aim", "tool": "instrument", "parameters": "arguments", "observation": "finding",
	"Intent": "Aim", "Tool": "Instrument", "Parameters": "Arguments", "Observation": "Finding", "Step": "Stage"}

func rewordText(s string) string {
	s = rewordings.Replace(s)
	s = reTags.ReplaceAllString(s, "<${1}r-${2}>")
	return reLabels.ReplaceAllStringFunc(s, func(m string) string {
		sub := reLabels.FindStringSubmatch(m)
		return sub[1] + labelWords[sub[2]]
	})
}

// reword returns g with its prompts reworded (see rewordings).
func reword(g operations.GenerateRequest) operations.GenerateRequest {
	msgs := make([]operations.Message, len(g.Messages))
	for i, m := range g.Messages {
		afterAssistant := i > 0 && g.Messages[i-1].Role == operations.RoleAssistant
		switch m.Role {
		case operations.RoleSystem:
			m.Content = "Reworded instructions: do the job this conversation is about, carefully, and answer in the form asked."
		case operations.RoleUser:
			m.Content = rewordText(m.Content)
			if !afterAssistant {
				m.Content = "Please read what follows.\n" + m.Content
			}
		case operations.RoleTool:
			m.Content = rewordText(m.Content)
		}
		msgs[i] = m
	}
	g.Messages = msgs
	return g
}

// rewordPhases wraps every phase of the registered workflows so that the
// generate requests it asks for are reworded, for the rest of the test.
// The counter counts the requests reworded.
func rewordPhases(t *testing.T, count *atomic.Int64) {
	t.Helper()
	type saved struct {
		wf  *phases.Workflow
		i   int
		run phases.Phase
	}
	var undo []saved
	for _, wf := range phases.Default.List() {
		for i := range wf.Phases {
			run := wf.Phases[i].Run
			undo = append(undo, saved{wf, i, run})
			wf.Phases[i].Run = func(in phases.Input) (phases.Output, error) {
				out, err := run(in)
				for j, op := range out.Ops {
					if g := operations.Generate.Params(op); g != nil {
						r := reword(*g)
						out.Ops[j].Params = &r
						count.Add(1)
					}
				}
				return out, err
			}
		}
	}
	t.Cleanup(func() {
		for _, u := range undo {
			u.wf.Phases[u.i].Run = u.run
		}
	})
}

// demo is one of the simulated demos: a workflow, its settings and task,
// on a server with or without the offline sandbox.
type demo struct {
	name, workflow, task string
	settings             func(dir string) map[string]any
	sandbox              bool
}

// repo is the repository's root.
func repo(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// exampleSettings is settings.example.json, the README's quick start.
func exampleSettings(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo(t), "settings.example.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func seeds(t *testing.T) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo(t), "examples/synthesis/seeds.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// run runs d in a fresh data directory under dir and returns its
// trajectory (see trajectory).
func run(t *testing.T, d demo, dir string) []string {
	t.Helper()
	ctx := context.Background()
	cfg := configs.Server{DataDir: filepath.Join(dir, "data"), Mode: "simulated",
		ReadRoots: []string{repo(t), dir}, WriteRoots: []string{dir}}
	var opts []app.Option
	if d.sandbox {
		opts = append(opts, app.WithSandbox(testsandbox.OpenFixtures(t, "")))
	}
	a, err := app.Open(ctx, cfg, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_ = a.Close(cctx)
	}()
	doc, err := json.Marshal(d.settings(dir))
	if err != nil {
		t.Fatal(err)
	}
	h := testrun.Start(t, a.Executor, workflows.StartRequest{Workflow: d.workflow, Settings: doc, Task: d.task})
	end := testrun.Wait(t, a.Executor, h.ID)
	if end.Status != state.StatusSucceeded {
		t.Fatalf("%s: run ended %s (%s): %s", d.name, end.Status, end.EndReason, end.Error)
	}
	return trajectory(t, a.Store, h.ID, dir)
}

// trajectory lists what happened in the run id and its descendants, one
// line per run end and per operation, runs named by their place in the
// tree (a child by the name its parent's spawn gave it): each operation's
// phase, kind, labels, request and result, with a generate's prompt left
// out (that is what the rewording changes) and, of its result, what the
// model answered (its usage is estimated from the prompt's length). Ids,
// directories, times and durations are replaced by placeholders.
func trajectory(t *testing.T, st state.Store, id, dir string) []string {
	t.Helper()
	ctx := context.Background()
	names := map[string]string{id: "run"}
	var lines []string
	queue := []string{id}
	for len(queue) > 0 {
		rid := queue[0]
		queue = queue[1:]
		head, err := st.Run(ctx, rid)
		if err != nil {
			t.Fatal(err)
		}
		ops, err := st.Ops(ctx, rid, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			req := op.Request
			var res operations.Result
			if op.Result != nil {
				res = *op.Result
			}
			if sp := operations.Spawn.Result(res); sp != nil {
				if p := operations.Spawn.Params(req); p != nil && sp.RunID != "" {
					names[sp.RunID] = names[rid] + "/" + p.Name
					queue = append(queue, sp.RunID)
				}
			}
			if g := operations.Generate.Params(req); g != nil {
				c := *g
				c.Messages = nil
				req.Params = &c
				if gr := operations.Generate.Result(res); gr != nil {
					res.Data = &operations.GenerateResult{Outputs: gr.Outputs}
				}
			}
			if w := operations.WriteFile.Params(req); w != nil {
				// Written files hold times and usage; what they are made
				// of is in the other operations.
				c := *w
				c.Content = fmt.Sprintf("(%d lines)", strings.Count(w.Content, "\n"))
				req.Params = &c
			}
			if f := operations.ReadFile.Result(res); f != nil {
				// Lines that concurrent runs append come in the order they
				// finished.
				c := *f
				lines := strings.Split(c.Content, "\n")
				sort.Strings(lines)
				c.Content = strings.Join(lines, "\n")
				res.Data = &c
			}
			if sp := operations.Spawn.Result(res); sp != nil {
				c := *sp
				c.Result, c.Usage = nil, operations.RunUsage{}
				res.Data = &c
			}
			b, err := json.Marshal(map[string]any{"op": fmt.Sprintf("%s %d/%d %s", names[rid], op.Step, op.Index, op.Phase),
				"request": req, "result": res})
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, string(b))
		}
		lines = append(lines, fmt.Sprintf("%s ended %s (%s) %s", names[rid], head.Status, head.EndReason, head.Error))
	}
	ids := make([]string, 0, len(names))
	for rid := range names {
		ids = append(ids, rid)
	}
	sort.Slice(ids, func(i, j int) bool { return len(ids[i]) > len(ids[j]) })
	var r []string
	for _, rid := range ids {
		r = append(r, rid, "<"+names[rid]+">")
	}
	r = append(r, dir, "<dir>")
	norm := strings.NewReplacer(r...)
	for i, l := range lines {
		l = norm.Replace(l)
		l = reDate.ReplaceAllString(l, "<date>")
		l = reMeasure.ReplaceAllString(l, `$1$2$3:0`)
		lines[i] = l
	}
	return lines
}

var (
	// reDate is a listing's modification time (ls -l), a file name's
	// time stamp, a time, a sandbox call's trace id.
	reDate = regexp.MustCompile(`[A-Z][a-z]{2} +\d{1,2} +(\d\d:\d\d|\d{4})|\d{8}_\d{6}|\d{4}-\d\d-\d\dT[0-9:.]+Z|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	// reMeasure is a field that measures time, or tokens and cost (the
	// simulated provider estimates a prompt's tokens from its length),
	// or a file's size, in JSON or in JSON quoted in a string.
	reMeasure = regexp.MustCompile(`(\\?")([a-z_/]*seconds|[a-z_/]*_ms|[a-z_/]*_s|tokens|prompt_tokens|completion_tokens|cost|bytes)(\\?"):[0-9.e+-]+`)
)

// TestRewordedPromptsSameRuns runs each simulated demo twice: as its
// phases write their prompts, and with every prompt reworded (reword, a
// transform over the generate requests the phases ask for). The simulated
// model is steered by the requests' role metadata and reads the run's
// task and the data the prompts quote, never their wording, so the two
// runs are the same: every operation of every run of the tree (its phase,
// labels, request and result, the model's answers), and every run's end.
// The demos are the README's triframe quick start (in tool mode and in
// XML text mode), modular, the synthesis offline example
// (examples/synthesis) and the react rollout of examples/sandbox on the
// offline sandbox.
func TestRewordedPromptsSameRuns(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not available")
	}
	const task = "Create a file hello.txt containing the word flock, then submit the number of bytes in it."
	demos := []demo{
		{name: "triframe quick start", workflow: "triframe", task: task,
			settings: func(string) map[string]any { return exampleSettings(t) }},
		{name: "triframe xml", workflow: "triframe", task: task,
			settings: func(string) map[string]any {
				s := exampleSettings(t)
				s["enable_tool_use"], s["enable_xml"] = false, true
				return s
			}},
		{name: "modular", workflow: "modular", task: task,
			settings: func(string) map[string]any {
				return map[string]any{"generator": map[string]any{"model": "simulated"}, "limits": map[string]any{"actions": 20}}
			}},
		{name: "synthesis offline", workflow: "synthesis", sandbox: true,
			settings: func(dir string) map[string]any {
				return map[string]any{"seeds": seeds(t), "output_dir": filepath.Join(dir, "out"),
					"available_tools": []string{"text2sql:*", "rag:search"}, "model_name": "simulated", "min_depth": 3,
					"max_selected_traj": 2, "seed_description": "a topic of the sample concert catalogue",
					"sampling_tips":  []string{"Follow names from one result into the next search."},
					"synthesis_tips": "Ask for a value that only the last step reveals."}
			}},
		{name: "react rollout", workflow: "rollout", sandbox: true,
			settings: func(dir string) map[string]any {
				return map[string]any{"data_path": filepath.Join(repo(t), "examples/sandbox/bench.jsonl"),
					"benchmark_name": "concerts", "num_chains": 1, "output_dir": filepath.Join(dir, "out"),
					"agent": map[string]any{"workflow": "react", "settings": map[string]any{"model": "simulated", "max_turns": 6,
						"tools": []string{"text2sql:list_databases", "text2sql:execute", "rag:search", "submit"}}}}
			}},
	}
	plain := map[string][]string{}
	for _, d := range demos {
		plain[d.name] = run(t, d, filepath.Join(t.TempDir(), "plain"))
	}
	var reworded atomic.Int64
	rewordPhases(t, &reworded)
	for _, d := range demos {
		t.Run(d.name, func(t *testing.T) {
			before := reworded.Load()
			got := run(t, d, filepath.Join(t.TempDir(), "plain"))
			if reworded.Load() == before {
				t.Fatal("no prompt was reworded")
			}
			want := plain[d.name]
			for i := 0; i < max(len(got), len(want)); i++ {
				var g, w string
				if i < len(got) {
					g = got[i]
				}
				if i < len(want) {
					w = want[i]
				}
				if g != w {
					t.Fatalf("with reworded prompts, line %d of %d differs:\n got %s\nwant %s", i, len(want), g, w)
				}
			}
			t.Logf("%d lines the same", len(want))
		})
	}
}
