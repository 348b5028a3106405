package generate

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"testing"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/operations"
)

// journal is a run's op journal held in memory, as a restarted server
// finds it in its store.
type journal []handlers.JournalOp

func (j journal) Run(_ context.Context, id string) (handlers.RunHead, error) {
	return handlers.RunHead{}, fmt.Errorf("run %s: not found", id)
}

func (j journal) StepOps(context.Context, string, uint64) ([]handlers.JournalOp, error) {
	return nil, fmt.Errorf("not kept")
}

func (j journal) Ops(_ context.Context, id string) iter.Seq2[handlers.JournalOp, error] {
	return func(yield func(handlers.JournalOp, error) bool) {
		for _, op := range j {
			if strings.HasPrefix(op.ID, id+"/") && !yield(op, nil) {
				return
			}
		}
	}
}

// TestScriptedResumesFromJournal restarts the handler (a new process) in
// the middle of a run: the script continues after the replies the journal
// already holds instead of starting over.
func TestScriptedResumesFromJournal(t *testing.T) {
	s := scriptSettings(t,
		`{"content": "one"}`,
		`{"content": "two", "n": 2}`,
		`{"content": "tool", "match": "ran ls"}`,
		`{"content": "three"}`,
		`{"content": "four"}`,
	)
	gen := func(msg string, n int) operations.GenerateRequest {
		return operations.GenerateRequest{Model: "s", Messages: userMsg(msg), N: n}
	}
	done := func(id string, g operations.GenerateRequest) handlers.JournalOp {
		return handlers.JournalOp{ID: id, Done: true, Request: operations.NewGenerate(g)}
	}
	j := journal{
		done("run/1/0", gen("a", 1)),
		done("run/2/0", gen("b", 2)),
		done("run/3/0", gen("we ran ls", 1)),
		{ID: "run/4/0", Request: operations.NewGenerate(gen("c", 1))},
	}
	h := New(Options{Journal: j})
	env := handlers.Env{RunID: "run", OpID: "run/4/0", Settings: s}
	r := mustGen(t, h.Handle(context.Background(), env, operations.NewGenerate(gen("c", 1))))
	if r.Outputs[0].Content != "three" {
		t.Fatalf("after a restart the script answered %q, want %q", r.Outputs[0].Content, "three")
	}
	env.OpID = "run/5/0"
	if r := mustGen(t, h.Handle(context.Background(), env, operations.NewGenerate(gen("d", 1)))); r.Outputs[0].Content != "four" {
		t.Fatalf("next reply %q", r.Outputs[0].Content)
	}
	// Without a journal the cursor starts over (the documented fallback).
	fresh := New(Options{})
	if r := mustGen(t, fresh.Handle(context.Background(), handlers.Env{RunID: "run", Settings: s}, operations.NewGenerate(gen("c", 1)))); r.Outputs[0].Content != "one" {
		t.Fatalf("fresh handler answered %q", r.Outputs[0].Content)
	}
}
