package declarative_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/declarative"
	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/handlers/bash"
	"github.com/flockrun/flock/handlers/generate"
	"github.com/flockrun/flock/handlers/task"
	"github.com/flockrun/flock/internal/testkit/testrun"
	"github.com/flockrun/flock/internal/testkit/teststore"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/phasetest"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

const examplesDir = "../configs/workflows"

func TestLoadExampleWorkflows(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(examplesDir, "*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("examples: %v %v", files, err)
	}
	reg := phases.NewRegistry()
	if err := declarative.LoadWorkflowDir(reg, examplesDir); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			wf, err := declarative.LoadWorkflowFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := reg.Lookup(wf.Name)
			if !ok {
				t.Fatalf("%s not registered by LoadWorkflowDir", wf.Name)
			}
			if got.Source != "file:"+f {
				t.Fatalf("source = %q", got.Source)
			}
			if wf.Description == "" || len(wf.Phases) == 0 {
				t.Fatalf("graph = %+v", wf.Graph())
			}
		})
	}
}

// runPhase calls phase name of wf on an in-memory state.
func runPhase(t *testing.T, wf phases.Workflow, name string, st *phasetest.State, settings string, results ...operations.Result) (phases.Output, error) {
	t.Helper()
	spec, ok := wf.Phase(name)
	if !ok {
		t.Fatalf("no phase %q", name)
	}
	if st == nil {
		st = &phasetest.State{}
	}
	if settings == "" {
		settings = "{}"
	}
	in := phases.Input{Run: phases.RunInfo{ID: "r1", Workflow: wf.Name, Phase: name, Step: 1, Task: "the task",
		Settings: json.RawMessage(settings), Now: phasetest.Now}, State: st, Results: results}
	return spec.Run(in)
}

func mustParse(t *testing.T, src string) phases.Workflow {
	t.Helper()
	wf, err := declarative.ParseWorkflow("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

func bashResult(exit int, stdout string) operations.Result {
	return operations.Result{Kind: operations.KindBash, Data: &operations.BashResult{ExitCode: exit, Stdout: stdout}}
}

func TestDeclarativePhaseSemantics(t *testing.T) {
	wf := mustParse(t, `
name: sem
settings: {limit: 2, words: [a, "b c"]}
vars: {n: 0}
phases:
  - name: one
    set:
      n: vars.n + 1
      double: vars.n * 2            # sees the n set just above
      ks: 'keys({"z": 1, "a": 2, "m": 3})'
    append:
      - type: note
        data: {n: "${vars.n}", text: "n is ${vars.n}, task ${task}", raw: "$${not evaluated}"}
      - if: false
        type: skipped
        data: x
    ops:
      - kind: bash
        for_each: settings.words
        if: item != "skip"
        params:
          command: echo ${shell(item)} ${index}
          session: s${index}
        meta: {i: "${index}"}
      - kind: log
        params: {content: "notes: ${len(history('note'))}, entries ${entries}"}
    transitions:
      - if: vars.n >= settings.limit
        end: {reason: "done at ${vars.n}", result: {n: "${vars.n}", outs: "${map(results, .stdout)}"}}
      - if: len(results) > 0 && results[0].exit_code != 0
        end: {failed: true, reason: "exit ${results[0].exit_code}"}
      - next: one
`)
	out, err := runPhase(t, wf, "one", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for k, v := range out.Set {
		got[k] = string(v)
	}
	want := map[string]string{"n": "1", "double": "2", "ks": `["a","m","z"]`}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("set %s = %s, want %s", k, got[k], v)
		}
	}
	if len(out.Append) != 1 || string(out.Append[0].Data) != `{"n":1,"raw":"${not evaluated}","text":"n is 1, task the task"}` {
		t.Errorf("append = %+v", out.Append)
	}
	if len(out.Ops) != 3 || operations.Bash.Params(out.Ops[0]).Command != "echo 'a' 0" || operations.Bash.Params(out.Ops[1]).Command != "echo 'b c' 1" ||
		operations.Bash.Params(out.Ops[1]).Session != "s1" || out.Ops[1].Meta["i"] != "1" || operations.Log.Params(out.Ops[2]).Content != "notes: 1, entries 1" {
		b, _ := json.Marshal(out.Ops)
		t.Errorf("ops = %s", b)
	}
	if out.Next != "one" || out.End != nil {
		t.Errorf("next = %q end = %+v", out.Next, out.End)
	}

	st := &phasetest.State{Vars: map[string]json.RawMessage{"n": json.RawMessage("1")}}
	out, err = runPhase(t, wf, "one", st, `{"limit": 2}`, bashResult(0, "a"), bashResult(0, "b"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Next != "" || out.End == nil || out.End.Reason != "done at 2" || string(out.End.Result) != `{"n":2,"outs":["a","b"]}` {
		t.Fatalf("end = %+v %s", out.End, out.End.Result)
	}
	out, err = runPhase(t, wf, "one", nil, `{"limit": 5}`, bashResult(3, ""))
	if err != nil || out.End == nil || !out.End.Failed || out.End.Reason != "exit 3" {
		t.Fatalf("failed end = %+v, %v", out.End, err)
	}
}

func TestDeclarativeRuntimeErrors(t *testing.T) {
	tests := []struct {
		name, phase, settings, want string
	}{
		{name: "bad arithmetic", phase: "a", want: "t.yaml:6: phase a: set x:"},
		{name: "no transition", phase: "b", want: "t.yaml:8: phase b: transitions: no transition matched"},
		{name: "bad param type", phase: "c", settings: `{"t": "soon"}`, want: "t.yaml:14: phase c: op 0 (bash): "},
		{name: "settings not an object", phase: "a", settings: `[1]`, want: "settings: want a JSON object"},
	}
	// b and c are unreachable from a: build a workflow where all are reachable.
	wf := mustParse(t, strings.Replace(`
name: rt
phases:
  - name: a
    set:
      x: settings.missing + 1
    next: b
  - name: b
    transitions:
      - if: len(results) > 5
        next: c
  - name: c
    ops:
      - kind: bash
        params: {timeout_s: "${settings.t}", command: x}
    next: a
`, "\t", "", -1))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runPhase(t, wf, tt.phase, nil, tt.settings)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// brokenFiles are workflow files that must fail to load, with the line
// the error must name and a part of its message.
var brokenFiles = []struct {
	name, src string
	line      int
	msg       string
}{
	{name: "not yaml", src: "name: [x\n", line: 1, msg: ""},
	{name: "top is a list", src: "- a\n- b\n", line: 1, msg: "want a mapping at the top"},
	{name: "no name", src: "phases:\n  - name: a\n", line: 1, msg: "name: required"},
	{name: "no phases", src: "name: x\n", line: 1, msg: "at least one phase"},
	{name: "unknown top field", src: "name: x\nphase:\n  - name: a\n", line: 2, msg: "unknown field"},
	{name: "unknown phase field", src: "name: x\nphases:\n  - name: a\n    nxt: a\n", line: 4, msg: "unknown field"},
	{name: "bad condition", src: "name: x\nphases:\n  - name: a\n    transitions:\n      - if: vars.n >>> 2\n        next: a\n", line: 5, msg: "expression \"vars.n >>> 2\""},
	{name: "condition not bool", src: "name: x\nphases:\n  - name: a\n    transitions:\n      - if: len(results)\n        next: a\n", line: 5, msg: "expected bool"},
	{name: "unknown variable", src: "name: x\nphases:\n  - name: a\n    set:\n      y: nosuch + 1\n", line: 5, msg: "unknown name nosuch"},
	{name: "clock disabled", src: "name: x\nphases:\n  - name: a\n    set:\n      t: now()\n", line: 5, msg: "unknown name now"},
	{name: "date disabled", src: "name: x\nphases:\n  - name: a\n    set:\n      t: date('2020-01-01')\n", line: 5, msg: "unknown name date"},
	{name: "bad template", src: "name: x\nphases:\n  - name: a\n    ops:\n      - kind: log\n        params:\n          content: \"${results[}\"\n", line: 7, msg: "expression \"results[\""},
	{name: "unclosed template", src: "name: x\nphases:\n  - name: a\n    ops:\n      - kind: log\n        params: {content: \"${task\"}\n", line: 6, msg: "missing } to close ${"},
	{name: "unknown op kind", src: "name: x\nphases:\n  - name: a\n    ops:\n      - kind: shell\n", line: 5, msg: "op kind \"shell\""},
	{name: "unknown param", src: "name: x\nphases:\n  - name: a\n    ops:\n      - kind: bash\n        params:\n          cmd: ls\n", line: 7, msg: "unknown field \"cmd\""},
	{name: "literal param type", src: "name: x\nphases:\n  - name: a\n    ops:\n      - kind: bash\n        params:\n          command: ls\n          timeout_s: soon\n", line: 8, msg: "field \"timeout_s\""},
	{name: "undeclared target", src: "name: x\nphases:\n  - name: a\n    next: b\n", line: 4, msg: "undeclared phase \"b\""},
	{name: "unreachable", src: "name: x\nphases:\n  - name: a\n  - name: b\n", line: 4, msg: "unreachable"},
	{name: "duplicate phase", src: "name: x\nphases:\n  - name: a\n  - name: a\n", line: 4, msg: "declared twice"},
	{name: "bad start", src: "name: x\nstart: b\nphases:\n  - name: a\n", line: 1, msg: "start: phase \"b\""},
	{name: "dead transition", src: "name: x\nphases:\n  - name: a\n    transitions:\n      - next: a\n      - end: {}\n", line: 6, msg: "never taken"},
	{name: "next and end", src: "name: x\nphases:\n  - name: a\n    transitions:\n      - next: a\n        end: {}\n", line: 5, msg: "not both"},
	{name: "next and transitions", src: "name: x\nphases:\n  - name: a\n    next: a\n    transitions:\n      - end: {}\n", line: 4, msg: "not both"},
	{name: "set twice", src: "name: x\nphases:\n  - name: a\n    set:\n      v: 1\n      v: 2\n", line: 6, msg: ""},
	{name: "bad var name", src: "name: x\nphases:\n  - name: a\n    set:\n      \"a-b\": 1\n", line: 5, msg: "not an identifier"},
	{name: "append without type", src: "name: x\nphases:\n  - name: a\n    append:\n      - data: 1\n", line: 5, msg: "type required"},
	{name: "expression in vars", src: "name: x\nvars: {a: \"${task}\"}\nphases:\n  - name: a\n", line: 2, msg: "literal"},
	{name: "alias in template", src: "name: x\nphases:\n  - name: a\n    ops:\n      - kind: log\n        params: &p {content: x}\n      - kind: log\n        params: *p\n", line: 8, msg: "alias"},
	{name: "too many nodes", src: "name: x\nphases:\n  - name: a\n    set:\n      v: " + strings.Repeat("1+", 3000) + "1\n", line: 5, msg: "exceeds maximum allowed nodes"},
	{name: "two documents", src: "name: x\n---\nname: y\n", line: 1, msg: "exactly one"},
	{name: "null phase", src: "name: 0\nphases:\n  -", line: 1, msg: "phase: name required"},
	{name: "bad name", src: "name: a b\nphases:\n  - name: a\n", line: 1, msg: "space or slash"},
	{name: "json syntax", src: "{\"name\": \"x\", \"phases\": [{\"name\": \"a\",}\n", line: 1, msg: ""},
	{name: "json bad expr", src: "{\"name\": \"x\",\n \"phases\": [{\"name\": \"a\",\n   \"set\": {\"v\": \"1 +\"}}]}\n", line: 3, msg: "expression \"1 +\""},
}

func TestLoadErrors(t *testing.T) {
	for _, tt := range brokenFiles {
		t.Run(tt.name, func(t *testing.T) {
			_, err := declarative.ParseWorkflow("broken.yaml", []byte(tt.src))
			if err == nil {
				t.Fatal("loaded")
			}
			var fe *declarative.WorkflowFileError
			if !errors.As(err, &fe) || !errors.Is(err, declarative.ErrWorkflowFile) {
				t.Fatalf("err %T %v is not a *WorkflowFileError", err, err)
			}
			if fe.File != "broken.yaml" || fe.Line != tt.line {
				t.Fatalf("err at %s:%d, want line %d: %v", fe.File, fe.Line, tt.line, err)
			}
			if !strings.HasPrefix(err.Error(), "broken.yaml:") || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err = %v, want %q", err, tt.msg)
			}
		})
	}
}

func TestLoadJSON(t *testing.T) {
	dir := t.TempDir()
	src := `{
	"name": "json-flow",
	"description": "written in JSON",
	"phases": [
		{"name": "hello",
		 "ops": [{"kind": "bash", "params": {"command": "echo ${task}"}}],
		 "next": "done"},
		{"name": "done",
		 "transitions": [{"end": {"result": "${results[0].stdout}"}}]}
	]
}
`
	path := filepath.Join(dir, "flow.json")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := phases.NewRegistry()
	if err := declarative.LoadWorkflowDir(reg, dir); err != nil {
		t.Fatal(err)
	}
	wf, ok := reg.Lookup("json-flow")
	if !ok || wf.Source != "file:"+path {
		t.Fatalf("lookup: %v %+v", ok, wf)
	}
	out, err := runPhase(t, *wf, "hello", nil, "")
	if err != nil || operations.Bash.Params(out.Ops[0]).Command != "echo the task" || out.Next != "done" {
		t.Fatalf("out = %+v, %v", out, err)
	}
}

func TestLoadWorkflowDirErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("name: dup\nphases:\n  - name: a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.yml"), []byte("name: dup\nphases:\n  - name: a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("ignored"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := declarative.LoadWorkflowDir(phases.NewRegistry(), dir)
	if !errors.Is(err, phases.ErrDuplicate) || !strings.Contains(err.Error(), "b.yml") {
		t.Fatalf("err = %v", err)
	}
	if err := declarative.LoadWorkflowDir(phases.NewRegistry(), filepath.Join(dir, "missing")); err == nil {
		t.Fatal("missing dir loaded")
	}
}

func TestCheckSettings(t *testing.T) {
	wf, err := declarative.LoadWorkflowFile(filepath.Join(examplesDir, "retry-until-green.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, settings, want string
	}{
		{name: "ok", settings: `{"test_command": "true"}`},
		{name: "missing", settings: `{}`, want: "test_command: required by workflow retry-until-green"},
		{name: "null", settings: `{"test_command": null}`, want: "test_command: required"},
		{name: "not an object", settings: `"x"`, want: "settings: want a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := wf.CheckSettings(json.RawMessage(tt.settings))
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// execEnv builds an executor on a bbolt store in t.TempDir() with real
// bash, a simulated generate handler and the example workflows registered.
func execEnv(t *testing.T) *execHarness {
	t.Helper()
	reg := phases.NewRegistry()
	if err := declarative.LoadWorkflowDir(reg, examplesDir); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	st := teststore.OpenAt(t, dir)
	hs := map[operations.Kind]handlers.Handler{
		operations.KindBash:     bash.New(bash.Options{}),
		operations.KindGenerate: generate.New(generate.Options{Mode: "simulated"}),
	}
	th := task.New()
	for _, k := range task.Kinds() {
		hs[k] = th
	}
	ex := testrun.Executor(t, workflows.Config{Store: st, Registry: reg, Handlers: handlers.FromMap(hs), RunsDir: filepath.Join(dir, "runs"), Concurrency: map[string]int{"bash": 4}})
	return &execHarness{t: t, ex: ex}
}

// execHarness starts runs on an executor and waits for their end.
type execHarness struct {
	t  *testing.T
	ex *workflows.Executor
}

func (e *execHarness) start(wf, settings, taskText string) state.Run {
	e.t.Helper()
	if settings == "" {
		settings = "{}"
	}
	return testrun.Start(e.t, e.ex, workflows.StartRequest{Workflow: wf, Settings: json.RawMessage(settings), Task: taskText})
}

func (e *execHarness) wait(id string) state.Run {
	e.t.Helper()
	return testrun.Wait(e.t, e.ex, id)
}

func TestDeclarativeExamplesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real shells")
	}
	e := execEnv(t)
	tests := []struct {
		name, workflow, settings, task string
		status                         state.Status
		reason                         string
		result                         string
	}{
		{name: "green after a fix", workflow: "retry-until-green",
			settings: `{"test_command": "test -f fixed", "fix_command": "touch fixed"}`,
			status:   state.StatusSucceeded, reason: "tests_pass", result: `{"attempts":2,"exit_code":0,"passed":true}`},
		{name: "green at once", workflow: "retry-until-green", settings: `{"test_command": "echo ok"}`,
			status: state.StatusSucceeded, reason: "tests_pass", result: `{"attempts":1,"exit_code":0,"passed":true}`},
		{name: "gives up", workflow: "retry-until-green",
			settings: `{"test_command": "exit 4", "fix_command": "true", "max_attempts": 2}`,
			status:   state.StatusFailed, reason: "tests_failing_after_2_attempts", result: `{"attempts":2,"exit_code":4,"passed":false}`},
		{name: "no fix", workflow: "retry-until-green", settings: `{"test_command": "false"}`,
			status: state.StatusFailed, reason: "tests_failing_no_fix", result: `{"attempts":1,"exit_code":1,"passed":false}`},
		{name: "model fix", workflow: "retry-until-green",
			settings: `{"test_command": "false", "model": "simulated", "max_attempts": 2}`,
			status:   state.StatusFailed, reason: "tests_failing_after_2_attempts", result: `{"attempts":2,"exit_code":1,"passed":false}`},
		{name: "parallel ok", workflow: "parallel-commands",
			settings: `{"commands": ["sleep 0.3; echo a", "sleep 0.3; echo b", "sleep 0.3; echo c"]}`,
			status:   state.StatusSucceeded, reason: "completed", result: `{"commands":3,"failed":0}`},
		{name: "parallel failure", workflow: "parallel-commands", settings: `{"commands": ["echo a", "exit 3"]}`,
			status: state.StatusFailed, reason: "1 of 2 commands failed", result: `{"commands":2,"exit_codes":[0,3],"failed":1}`},
		{name: "agent submits", workflow: "bash-agent", task: "create hello.txt containing hi and submit its word count",
			status: state.StatusSucceeded, reason: "submitted", result: `"1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := e.start(tt.workflow, tt.settings, tt.task)
			end := e.wait(h.ID)
			if end.Status != tt.status || end.EndReason != tt.reason || string(end.Result) != tt.result {
				t.Fatalf("end = %s %q result %s, error %q; want %s %q %s", end.Status, end.EndReason, end.Result, end.Error,
					tt.status, tt.reason, tt.result)
			}
		})
	}
}

func TestWorkflowFileSettingsKeys(t *testing.T) {
	src := "name: keys\nrequired: [b]\nsettings:\n  a: 1\nphases:\n  - name: p\n    set:\n      x: settings.c + settings[\"d\"]\n"
	wf, err := declarative.ParseWorkflow("keys.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(wf.Settings), "[a b c d]"; got != want {
		t.Fatalf("Settings = %s, want %s", got, want)
	}
	got := configs.SettingsWarnings(json.RawMessage(`{"a":1,"b":{"any":1},"c":1,"d":1,"cc":1,"limits":{"tokens":1}}`), wf.Name, wf.Settings)
	if want := []string{`unknown settings key "cc" (did you mean "c"?)`}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("warnings = %q, want %q", got, want)
	}
	empty, err := declarative.ParseWorkflow("empty.yaml", []byte("name: empty\nphases:\n  - name: p\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := configs.SettingsWarnings(json.RawMessage(`{"x":1}`), empty.Name, empty.Settings); fmt.Sprint(got) != `[unknown settings key "x"]` {
		t.Fatalf("a file reading no settings: warnings = %q", got)
	}
}
