package echokind_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/declarative"
	"github.com/flockrun/flock/handlers/internal/echokind" // the one import a new kind needs
	"github.com/flockrun/flock/internal/testkit/testrun"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// TestNewKindIsOnePackage runs the kind "echo", added by package echokind
// alone, through the real server: a workflow file emits it with typed
// params and reads its result fields; the executor applies its effects
// (an action, tokens, an entry) with no code for it; the journal keeps its
// typed result; its handler is provisioned, validates runs and is cleaned
// up.
func TestNewKindIsOnePackage(t *testing.T) {
	ctx := context.Background()
	provisioned, cleaned := echokind.Lifecycle.Provisioned.Load(), echokind.Lifecycle.Cleaned.Load()
	cfg := configs.Server{DataDir: filepath.Join(t.TempDir(), "data"), Mode: "simulated", WorkflowDirs: []string{"testdata"}}
	a, err := app.Open(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = a.Close(ctx)
		}
	})
	if got := echokind.Lifecycle.Provisioned.Load() - provisioned; got != 1 {
		t.Fatalf("echo handler provisioned %d times, want 1", got)
	}

	h := testrun.Start(t, a.Executor, workflows.StartRequest{Workflow: "echoes", Task: "hi"})
	end := testrun.Wait(t, a.Executor, h.ID)
	if end.Status != state.StatusSucceeded || end.EndReason != "echoed" {
		t.Fatalf("run ended %s (%s): %s", end.Status, end.EndReason, end.Error)
	}
	var result struct {
		Said  string `json:"said"`
		Count int    `json:"count"`
	}
	if err := json.Unmarshal(end.Result, &result); err != nil || result.Said != "simulated: hi hi" || result.Count != 2 {
		t.Fatalf("result = %s (%v), want the echo's fields", end.Result, err)
	}
	if end.Usage.Actions != 1 || end.Usage.Tokens != 2 {
		t.Fatalf("usage = %+v, want 1 action and 2 tokens from the echo's effects", end.Usage)
	}
	entries, err := a.Store.Entries(ctx, h.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, e := range entries {
		if e.Type == echokind.EntryType {
			var r echokind.Result
			if err := e.Decode(&r); err != nil {
				t.Fatal(err)
			}
			said = append(said, r.Echo)
		}
	}
	if len(said) != 1 || said[0] != "simulated: hi hi" {
		t.Fatalf("echo entries = %q", said)
	}
	ops, err := a.Store.Ops(ctx, h.ID, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 1 || ops[0].Request.Kind != echokind.Kind || ops[0].Result == nil {
		t.Fatalf("ops = %+v", ops)
	}
	if p := echokind.Echo.Params(ops[0].Request); p == nil || p.Text != "hi" || p.Times != 2 {
		t.Fatalf("journaled request payload = %#v", ops[0].Request.Params)
	}
	if r := echokind.Echo.Result(*ops[0].Result); r == nil || r.Count != 2 {
		t.Fatalf("journaled result payload = %#v", ops[0].Result.Data)
	}

	// The handler validates runs at start.
	_, err = a.Executor.StartRun(ctx, workflows.StartRequest{Workflow: "echoes", Settings: json.RawMessage(`{"echo":"refuse"}`)})
	if !errors.Is(err, workflows.ErrBadRequest) || !errors.Is(err, echokind.ErrRefused) {
		t.Fatalf("refused settings: %v, want a bad request wrapping ErrRefused", err)
	}

	closed = true
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := echokind.Lifecycle.Cleaned.Load() - cleaned; got != 1 {
		t.Fatalf("echo handler cleaned up %d times, want 1", got)
	}
}

// TestCompilerKnowsEchoParams checks that a workflow file's echo params are
// checked against the registered payload type.
func TestCompilerKnowsEchoParams(t *testing.T) {
	src := "name: x\nphases:\n  - name: a\n    ops:\n      - kind: echo\n        params: {txt: hi}\n"
	_, err := declarative.ParseWorkflow("x.yaml", []byte(src))
	if err == nil || !strings.Contains(err.Error(), `unknown field "txt" (known: text, times)`) {
		t.Fatalf("err = %v, want the echo params named", err)
	}
	src = "name: x\nphases:\n  - name: a\n    ops:\n      - kind: echo\n        params: {text: hi, times: many}\n"
	if _, err := declarative.ParseWorkflow("x.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), "times") {
		t.Fatalf("err = %v, want times refused as not a number", err)
	}
}

// TestEchoWire checks the kind's wire form round-trips through the
// operations codec, typed.
func TestEchoWire(t *testing.T) {
	req := echokind.Echo.New(echokind.Request{Text: "a"})
	b, err := json.Marshal(req)
	if err != nil || string(b) != `{"type":"echo","params":{"text":"a"}}` {
		t.Fatalf("wire = %s (%v)", b, err)
	}
	var back operations.Request
	if err := json.Unmarshal(b, &back); err != nil || echokind.Echo.Params(back).Text != "a" {
		t.Fatalf("back = %#v (%v)", back, err)
	}
	if err := back.Validate(); err != nil {
		t.Fatal(err)
	}
	if !echokind.Kind.Valid() {
		t.Fatal("echo is not a valid kind")
	}
}
