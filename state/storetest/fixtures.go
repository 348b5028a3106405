package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
)

// T0 is the time of every fixture's timestamps.
var T0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// MustCommit commits c to s, failing tb if the store refuses it.
func MustCommit(tb testing.TB, s state.Store, c *state.Commit) {
	tb.Helper()
	if err := s.Commit(context.Background(), c); err != nil {
		tb.Fatalf("Commit(%s): %v", c.RunID, err)
	}
}

// SameJSON fails tb unless got and want encode to the same JSON.
func SameJSON(tb testing.TB, what string, got, want any) {
	tb.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		tb.Fatalf("%s: marshal got: %v", what, err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		tb.Fatalf("%s: marshal want: %v", what, err)
	}
	if string(g) != string(w) {
		tb.Fatalf("%s:\n got %.2000s\nwant %.2000s", what, g, w)
	}
}

// Head is the fixture head of run id: status, parent and a phase, usage,
// vars and a work dir filled in.
func Head(id, workflow, parent string, status state.Status) *state.Run {
	return &state.Run{
		ID:        id,
		Workflow:  workflow,
		ParentID:  parent,
		Status:    status,
		Phase:     "think",
		Next:      "act",
		Usage:     operations.RunUsage{Tokens: 10},
		Vars:      map[string]json.RawMessage{"x": json.RawMessage(`{"a":1}`)},
		WorkDir:   "/tmp/" + id,
		CreatedAt: T0,
		UpdatedAt: T0,
	}
}

// Entries is n fixture journal entries numbered from first.
func Entries(first uint64, n int) []record.Entry {
	es := make([]record.Entry, n)
	for i := range es {
		seq := first + uint64(i)
		es[i] = record.Entry{Seq: seq, Type: "message", Phase: "think", Step: seq,
			Data: json.RawMessage(fmt.Sprintf(`{"text":"entry %d"}`, seq))}
	}
	return es
}

// Op is the fixture bash op index of step of run; a done one carries its
// result.
func Op(run string, step uint64, index int, status state.OpStatus) state.Op {
	op := state.Op{
		ID: state.OpID(run, step, index), RunID: run, Step: step, Index: index,
		Phase: "think", Status: status, CreatedAt: T0,
		Request: operations.Request{Kind: operations.KindBash, Params: &operations.BashRequest{Command: "ls"}},
	}
	if status == state.OpDone {
		fin := T0.Add(time.Second)
		op.Attempts, op.FinishedAt = 1, &fin
		op.Result = &operations.Result{Kind: operations.KindBash, Data: &operations.BashResult{Stdout: "a\n"}}
	}
	return op
}

// Events is n fixture phase events, unnumbered (the store numbers them).
func Events(n int) []state.Event {
	es := make([]state.Event, n)
	for i := range es {
		es[i] = state.Event{Time: T0, Type: "phase", Phase: "think", Message: fmt.Sprint("event ", i)}
	}
	return es
}

// Transition is a commit shaped like one phase transition of run id, the
// unit of the stores' benchmarks: a head of about 500 B, one entry of
// about 300 B, two pending ops of about 300 B and one event, fenced on
// expect (the revision the previous transition wrote; 0 for none).
func Transition(id string, step, expect uint64) *state.Commit {
	h := &state.Run{
		ID: id, Workflow: "agent.react", Status: state.StatusRunning, Phase: "think", Next: "act",
		Step: step, NumOps: 2, Entries: step,
		Usage:  operations.RunUsage{Tokens: 1234 * int(step), Actions: int(step), Seconds: 12.5, Cost: 0.0123},
		Limits: operations.RunLimits{Tokens: 1_000_000, Actions: 500, Seconds: 3600, Cost: 5},
		Vars: map[string]json.RawMessage{
			"plan":    json.RawMessage(`"inspect the repository, then run the tests"`),
			"attempt": json.RawMessage(`3`),
		},
		WorkDir:   "/var/lib/flock/runs/" + id + "/work",
		CreatedAt: T0, UpdatedAt: T0.Add(time.Duration(step) * time.Second),
	}
	text := strings.Repeat("x", 220)
	e := record.Entry{Seq: step, Type: "message", Phase: "think", Step: step,
		Data: json.RawMessage(`{"role":"assistant","text":"` + text + `"}`)}
	ops := make([]state.Op, 2)
	for i := range ops {
		ops[i] = state.Op{
			ID: state.OpID(id, step, i), RunID: id, Step: step, Index: i, Phase: "think",
			Status: state.OpPending, CreatedAt: T0,
			Request: operations.Request{Kind: operations.KindBash, Meta: map[string]string{"purpose": "explore"},
				Params: &operations.BashRequest{Command: "grep -rn 'func main' . | head -50 && go test ./... 2>&1 | tail -40", TimeoutS: 60}},
		}
	}
	return &state.Commit{RunID: id, ExpectRevision: expect, Run: h, Entries: []record.Entry{e}, Ops: ops,
		Events: []state.Event{{Time: T0, Type: "phase", Phase: "think", Step: step, Message: "think -> act"}}}
}
