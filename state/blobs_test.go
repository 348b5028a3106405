package state

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/operations"
)

// TestGenerateMessagesStoredOnce journals generate ops whose prompts share a
// long history, as an agent's do step after step: the shared messages are
// written once, and every op reads back whole.
func TestGenerateMessagesStoredOnce(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	history := []operations.Message{
		{Role: operations.RoleSystem, Content: strings.Repeat("You are a careful agent. ", 200)},
		{Role: operations.RoleUser, Content: strings.Repeat("Task: count the words. ", 100)},
	}
	var written []uint64
	for step := uint64(1); step <= 6; step++ {
		history = append(history, operations.Message{Role: operations.RoleAssistant, Content: strings.Repeat("step ", 60+int(step))},
			operations.Message{Role: operations.RoleTool, Content: "ok", ToolCallID: "c"})
		req := operations.NewGenerate(operations.GenerateRequest{Model: "m", Messages: append([]operations.Message(nil), history...)})
		op := Op{ID: OpID("r1", step, 0), RunID: "r1", Step: step, Status: OpPending, Request: req, CreatedAt: time.Unix(0, 0).UTC()}
		before := s.Stats().Bytes
		mustCommit(t, s, &Commit{RunID: "r1", Ops: []Op{op}})
		done := op
		done.Status = OpDone
		done.Result = &operations.Result{Kind: operations.KindGenerate, Generate: &operations.GenerateResult{Outputs: []operations.Output{{Content: "fine"}}}}
		mustCommit(t, s, &Commit{RunID: "r1", Ops: []Op{done}})
		written = append(written, s.Stats().Bytes-before)

		got, err := s.StepOps(ctx, "r1", step)
		if err != nil || len(got) != 1 {
			t.Fatalf("step %d: %v %d", step, err, len(got))
		}
		sameJSON(t, "op read back", got[0], done)
		if req.Generate.Messages[0].Content == "" {
			t.Fatal("the caller's request was modified")
		}
	}
	// The first step stores the system and task prompts; later steps add
	// only their new assistant message, whatever the history length.
	if written[0] < 7000 {
		t.Fatalf("first step wrote %d bytes, expected the prompts", written[0])
	}
	for i, n := range written[1:] {
		if n > 3000 {
			t.Fatalf("step %d wrote %d bytes for a prompt that only grew by one message", i+2, n)
		}
	}
	all, err := s.Ops(ctx, "r1", "", 0)
	if err != nil || len(all) != 6 || len(all[5].Request.Generate.Messages) != 14 {
		t.Fatalf("Ops: %v %d", err, len(all))
	}
}
