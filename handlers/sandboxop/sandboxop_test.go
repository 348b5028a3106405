package sandboxop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers/sandboxop"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/internal/testkit/testapp"
	"github.com/flockrun/flock/internal/testkit/testrun"
	"github.com/flockrun/flock/internal/testkit/testsandbox"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/sandbox"
	_ "github.com/flockrun/flock/sandbox/all"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// openSandbox opens a sandbox service with bash and text2sql over the
// bundled concert database.
func openSandbox(t *testing.T) *sandbox.Service {
	t.Helper()
	db, err := filepath.Abs("../../configs/sandbox/data/concert.sqlite")
	if err != nil {
		t.Fatal(err)
	}
	return testsandbox.Open(t, fmt.Sprintf(`{"resources": {"bash": {"enabled": true}}, "apis": {"text2sql": {"databases": {"concert": %q}}}}`, db), nil)
}

func openApp(t *testing.T, opts ...app.Option) *app.App {
	t.Helper()
	return openAppWith(t, nil, opts...)
}

// loopbackSandbox lets runs name a sandbox_url on 127.0.0.1 (the tests'
// sandboxes), as an operator would in the server settings.
func loopbackSandbox(c *configs.Server) { c.SandboxURLAllowHosts = []string{"127.0.0.1"} }

// openAppWith is openApp with server settings changed by mutate.
func openAppWith(t *testing.T, mutate func(*configs.Server), opts ...app.Option) *app.App {
	t.Helper()
	cfg := configs.Server{DataDir: filepath.Join(t.TempDir(), "data"), Mode: "simulated", WorkflowDirs: []string{"testdata"}}
	if mutate != nil {
		mutate(&cfg)
	}
	return testapp.Open(t, cfg, opts...)
}

// runCalls runs the sandboxcalls workflow and returns its sandbox results.
func runCalls(t *testing.T, a *app.App, settings string) (state.Run, []operations.SandboxResult) {
	t.Helper()
	h := testrun.Start(t, a.Executor, workflows.StartRequest{Workflow: "sandboxcalls", Task: "q", Settings: json.RawMessage(settings)})
	end := testrun.Wait(t, a.Executor, h.ID)
	ops, err := a.Store.Ops(context.Background(), h.ID, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []operations.SandboxResult
	for _, op := range ops {
		if op.Result == nil || operations.Sandbox.Result(*op.Result) == nil {
			t.Fatalf("op %s has no sandbox result: %+v", op.ID, op.Result)
		}
		out = append(out, *operations.Sandbox.Result(*op.Result))
	}
	return end, out
}

// checkCalls checks the envelopes of the sandboxcalls workflow.
func checkCalls(t *testing.T, end state.Run, res []operations.SandboxResult) {
	t.Helper()
	if end.Status != state.StatusSucceeded {
		t.Fatalf("run ended %s: %s", end.Status, end.Error)
	}
	if len(res) != 4 {
		t.Fatalf("%d sandbox results, want 4", len(res))
	}
	if res[0].Code != 0 || !strings.Contains(string(res[0].Data), "rows") {
		t.Fatalf("text2sql:execute = %d %s %s", res[0].Code, res[0].Message, res[0].Data)
	}
	var meta struct {
		Tool string `json:"tool"`
	}
	if err := json.Unmarshal(res[0].Meta, &meta); err != nil || meta.Tool != "text2sql:execute" {
		t.Fatalf("meta = %s, want tool text2sql:execute", res[0].Meta)
	}
	var out struct {
		Stdout string `json:"stdout"`
	}
	if err := json.Unmarshal(res[2].Data, &out); err != nil || res[2].Code != 0 || strings.TrimSpace(out.Stdout) != "kept" {
		t.Fatalf("second bash:run = %d %s %s: the run's session did not keep the file", res[2].Code, res[2].Message, res[2].Data)
	}
	if res[3].Code != sandbox.CodeInvalidInput {
		t.Fatalf("DELETE = code %d %s, want %d", res[3].Code, res[3].Message, sandbox.CodeInvalidInput)
	}
	if end.Usage.Actions != 4 {
		t.Fatalf("actions = %d, want 4 (every answered sandbox call)", end.Usage.Actions)
	}
}

// sessions lists the bash sessions of every worker on svc.
func workerSessions(svc *sandbox.Service, worker string) int {
	env := svc.ListSessions(sandbox.Caller{Worker: worker})
	data, _ := json.Marshal(env.Data)
	var d struct {
		Count int `json:"count"`
	}
	_ = json.Unmarshal(data, &d)
	return d.Count
}

// TestSandboxOpInProcess runs sandbox ops on the server's own service: a
// stateless text2sql call, two bash calls on the run's session created on
// first use, and a refused statement as the envelope's code; the session
// is destroyed when the run ends.
func TestSandboxOpInProcess(t *testing.T) {
	svc := openSandbox(t)
	a := openApp(t, app.WithSandbox(svc))
	end, res := runCalls(t, a, `{}`)
	checkCalls(t, end, res)
	testkit.WaitFor(t, "the run's session to be destroyed", func() bool { return workerSessions(svc, end.ID) == 0 })
}

// TestSandboxOpOverHTTP runs the same ops over HTTP against a sandbox
// served alone (flock sandbox) with sandbox_url, and gets the same
// envelopes; the server hosts no service.
func TestSandboxOpOverHTTP(t *testing.T) {
	svc := openSandbox(t)
	url := testsandbox.Serve(t, svc, configs.Server{})
	a := openAppWith(t, loopbackSandbox)
	end, res := runCalls(t, a, `{"sandbox_url": "`+url+`"}`)
	checkCalls(t, end, res)
	testkit.WaitFor(t, "the run's session to be destroyed", func() bool { return workerSessions(svc, end.ID) == 0 })

	// The same calls in-process answer the same data.
	local := openApp(t, app.WithSandbox(svc))
	lend, lres := runCalls(t, local, `{}`)
	for i := range res {
		// The data name the worker: the run's id.
		got := strings.ReplaceAll(string(res[i].Data), end.ID, "RUN")
		want := strings.ReplaceAll(string(lres[i].Data), lend.ID, "RUN")
		// A bash session's cwd is its own workspace.
		stateless := i == 0 || i == 3
		if res[i].Code != lres[i].Code || res[i].Message != lres[i].Message || (stateless && got != want) {
			t.Fatalf("call %d: over HTTP %d %s, in-process %d %s", i, res[i].Code, res[i].Data, lres[i].Code, lres[i].Data)
		}
	}
}

// TestSandboxOpNeedsASandbox refuses a run offering sandbox tools with no
// hosted service and no sandbox_url, naming sandbox_url, and a bad URL.
func TestSandboxOpNeedsASandbox(t *testing.T) {
	a := openApp(t)
	ctx := context.Background()
	_, err := a.Executor.StartRun(ctx, workflows.StartRequest{Workflow: "sandboxcalls", Task: "q",
		Settings: json.RawMessage(`{"tools": ["text2sql:execute", "submit"]}`)})
	if !errors.Is(err, sandboxop.ErrNoSandbox) || !strings.Contains(err.Error(), "sandbox_url") {
		t.Fatalf("start = %v, want ErrNoSandbox naming sandbox_url", err)
	}
	_, err = a.Executor.StartRun(ctx, workflows.StartRequest{Workflow: "sandboxcalls", Task: "q",
		Settings: json.RawMessage(`{"sandbox_url": "ftp://x"}`)})
	if !errors.Is(err, sandboxop.ErrBadURL) {
		t.Fatalf("start = %v, want ErrBadURL", err)
	}
	// Without tools in the settings the run starts, and its op fails
	// naming sandbox_url.
	end := testrun.Start(t, a.Executor, workflows.StartRequest{Workflow: "sandboxcalls", Task: "q"})
	testrun.Wait(t, a.Executor, end.ID)
	ops, err := a.Store.Ops(ctx, end.ID, "", 10)
	if err != nil || len(ops) == 0 || ops[0].Result == nil || !strings.Contains(ops[0].Result.Error, "sandbox_url") {
		t.Fatalf("ops = %+v (%v), want an error naming sandbox_url", ops, err)
	}
}

// TestSandboxOpRecreatesSession: a run whose session is gone (the sandbox
// lost it, as after a resume) gets a new one and the message says so.
func TestSandboxOpRecreatesSession(t *testing.T) {
	svc := openSandbox(t)
	a := openApp(t, app.WithSandbox(svc))
	dir := t.TempDir()
	// The marker of an earlier session of this run's work directory.
	if err := os.MkdirAll(filepath.Join(dir, ".sandbox-sessions"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".sandbox-sessions", "bash"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h := testrun.Start(t, a.Executor, workflows.StartRequest{Workflow: "sandboxcalls", Task: "q", WorkDir: dir})
	testrun.Wait(t, a.Executor, h.ID)
	ops, err := a.Store.Ops(context.Background(), h.ID, "", 10)
	if err != nil || len(ops) < 3 {
		t.Fatalf("ops = %d (%v)", len(ops), err)
	}
	if m := operations.Sandbox.Result(*ops[1].Result).Message; !strings.HasPrefix(m, "[session recreated") {
		t.Fatalf("first bash message = %q, want the recreated note", m)
	}
	if m := operations.Sandbox.Result(*ops[2].Result).Message; strings.Contains(m, "recreated") {
		t.Fatalf("second bash message = %q, want no note", m)
	}
}

// TestSandboxToolSchemasAtStart: a run offering sandbox tools gets their
// schemas from the sandbox's registry in its journaled settings
// (sandbox_tools), in-process and over HTTP alike; an unknown tool
// refuses the run.
func TestSandboxToolSchemasAtStart(t *testing.T) {
	svc := openSandbox(t)
	url := testsandbox.Serve(t, svc, configs.Server{})
	want, _ := svc.Tool("text2sql:execute")
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		a        *app.App
		settings string
	}{
		{"in-process", openApp(t, app.WithSandbox(svc)), `{"tools": ["text2sql:execute", "submit"]}`},
		{"http", openAppWith(t, loopbackSandbox), `{"sandbox_url": "` + url + `", "tools": ["text2sql:execute", "submit"]}`},
	} {
		h, err := c.a.Executor.StartRun(ctx, workflows.StartRequest{Workflow: "sandboxcalls", Task: "q", Settings: json.RawMessage(c.settings)})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		spec, err := c.a.Store.Spec(ctx, h.ID)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			SandboxTools map[string]struct {
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"sandbox_tools"`
		}
		if err := json.Unmarshal(spec.Settings, &doc); err != nil {
			t.Fatal(err)
		}
		got := doc.SandboxTools["text2sql:execute"]
		if string(got.Parameters) != string(want.Parameters) || got.Description != want.Description || len(doc.SandboxTools) != 1 {
			t.Fatalf("%s: sandbox_tools = %+v, want the registry's schema %s", c.name, doc.SandboxTools, want.Parameters)
		}
		_, err = c.a.Executor.StartRun(ctx, workflows.StartRequest{Workflow: "sandboxcalls", Task: "q",
			Settings: json.RawMessage(strings.Replace(c.settings, "text2sql:execute", "text2sql:nope", 1))})
		if !errors.Is(err, sandboxop.ErrUnknownTool) {
			t.Fatalf("%s: unknown tool: %v, want ErrUnknownTool", c.name, err)
		}
	}
}

// TestTriframeSandboxToolInProcess runs triframe on the scripted model
// against the server's own sandbox: the actor, offered text2sql-execute
// with the registry's schema, calls it; the call runs as a sandbox op and
// the next actor prompt holds its rows, after which it submits them.
func TestTriframeSandboxToolInProcess(t *testing.T) {
	agentSandboxRun(t, "triframe", map[string]any{"actors": []any{map[string]any{"model": "m"}}, "enable_advising": false}, "[[6]]")
}

// TestModularSandboxToolInProcess is TestTriframeSandboxToolInProcess
// with the modular workflow (whose last user message is its usage note,
// so the second reply matches any request; the goldens show the rows in
// the prompt).
func TestModularSandboxToolInProcess(t *testing.T) {
	agentSandboxRun(t, "modular", map[string]any{"generator": map[string]any{"model": "m"}}, "")
}

// agentSandboxRun runs workflow with the settings agent (plus the scripted
// model m and tools text2sql:execute) on the server's own sandbox and
// checks the one sandbox call and the submit, which the script gives to
// the request whose last user or tool message holds match.
func agentSandboxRun(t *testing.T, workflow string, agent map[string]any, match string) {
	t.Helper()
	svc := openSandbox(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "script.jsonl")
	lines := `{"tool_calls": [{"name": "text2sql-execute", "arguments": {"db_id": "concert", "query": "SELECT count(*) AS n FROM singer"}}]}
{"match": "` + match + `", "tool_calls": [{"name": "submit", "arguments": {"answer": "6"}}]}
`
	if err := os.WriteFile(script, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := configs.Server{DataDir: filepath.Join(dir, "data"), Mode: "simulated", ReadRoots: []string{dir}}
	a := testapp.Open(t, cfg, app.WithSandbox(svc))
	agent["models"] = map[string]any{"m": map[string]any{"provider": "scripted", "script": script}}
	agent["tools"] = []string{"text2sql:execute"}
	settings, _ := json.Marshal(agent)
	h := testrun.Start(t, a.Executor, workflows.StartRequest{Workflow: workflow, Task: "How many singers are in the concert database?", Settings: settings})
	end := testrun.Wait(t, a.Executor, h.ID)
	ops, err := a.Store.Ops(context.Background(), h.ID, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if end.Status != state.StatusSucceeded {
		for _, op := range ops {
			if op.Result != nil {
				t.Logf("op %s: %s", op.Result.Kind, op.Result.Error)
			}
		}
		t.Fatalf("run ended %s: %s", end.Status, end.Error)
	}
	var sandboxOps, submitted int
	for _, op := range ops {
		if op.Result == nil {
			continue
		}
		switch {
		case operations.Sandbox.Result(*op.Result) != nil:
			sandboxOps++
			if operations.Sandbox.Result(*op.Result).Code != 0 || !strings.Contains(string(operations.Sandbox.Result(*op.Result).Data), "6") {
				t.Fatalf("sandbox op = %d %s %s", operations.Sandbox.Result(*op.Result).Code, operations.Sandbox.Result(*op.Result).Message, operations.Sandbox.Result(*op.Result).Data)
			}
		case op.Result.Kind == operations.KindSubmit:
			submitted++
		}
	}
	if sandboxOps != 1 || submitted != 1 {
		t.Fatalf("%d sandbox ops and %d submits, want 1 and 1", sandboxOps, submitted)
	}
}
