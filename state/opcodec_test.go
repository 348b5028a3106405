package state

import (
	"context"
	"encoding/json"
	"fmt"
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
	// their new messages plus the open tail chunk they join (a few small
	// messages), whatever the history length.
	if written[0] < 7000 {
		t.Fatalf("first step wrote %d bytes, expected the prompts", written[0])
	}
	for i, n := range written[1:] {
		if n > 5000 {
			t.Fatalf("step %d wrote %d bytes for a prompt that only grew by one message", i+2, n)
		}
	}
	all, err := s.Ops(ctx, "r1", "", 0)
	if err != nil || len(all) != 6 || len(all[5].Request.Generate.Messages) != 14 {
		t.Fatalf("Ops: %v %d", err, len(all))
	}
}

// TestSlidingPromptChunks journals prompts of many small messages whose
// window slides, as a trimmed agent history does: each step writes a small
// fraction of the prompt.
func TestSlidingPromptChunks(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	var all []operations.Message
	for i := 0; i < 2000; i++ {
		all = append(all, operations.Message{Role: operations.RoleUser, Content: fmt.Sprintf("message number %d with some text", i)})
	}
	var prompt, total int
	var writes []uint64
	for step := uint64(1); step <= 40; step++ {
		lo := int(step) * 5
		window := append([]operations.Message{{Role: operations.RoleSystem, Content: "system"}}, all[lo:lo+600]...)
		op := Op{ID: OpID("r1", step, 0), RunID: "r1", Step: step, Status: OpPending,
			Request: operations.NewGenerate(operations.GenerateRequest{Model: "m", Messages: window})}
		before := s.Stats().Bytes
		mustCommit(t, s, &Commit{RunID: "r1", Ops: []Op{op}})
		writes = append(writes, s.Stats().Bytes-before)
		got, err := s.StepOps(ctx, "r1", step)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, "sliding op", got[0], op)
		b, _ := json.Marshal(window)
		prompt = len(b)
	}
	for _, w := range writes[1:] {
		total += int(w)
	}
	avg := total / (len(writes) - 1)
	if avg > prompt/5 {
		t.Fatalf("a sliding step writes %d bytes on average for a %d-byte prompt", avg, prompt)
	}
	t.Logf("prompt %d bytes, %d bytes written per step", prompt, avg)
}

// TestCompletingAnOpWritesItsResult journals a large request pending, then
// done: completion writes the result, not the request again.
func TestCompletingAnOpWritesItsResult(t *testing.T) {
	s := openTestStore(t)
	req := operations.NewWriteFile("out/results.jsonl", strings.Repeat("x", 20000), true)
	op := Op{ID: OpID("r1", 1, 0), RunID: "r1", Step: 1, Status: OpPending, Request: req}
	mustCommit(t, s, &Commit{RunID: "r1", Ops: []Op{op}})
	before := s.Stats().Bytes
	done := op
	done.Status, done.Attempts = OpDone, 1
	done.Result = &operations.Result{Kind: operations.KindWriteFile, WriteFile: &operations.WriteFileResult{Path: "/w/out/results.jsonl", Bytes: 20000}}
	mustCommit(t, s, &Commit{RunID: "r1", Ops: []Op{done}})
	if n := s.Stats().Bytes - before; n > 1000 {
		t.Fatalf("completing the op wrote %d bytes", n)
	}
	got, err := s.StepOps(context.Background(), "r1", 1)
	if err != nil || len(got) != 1 {
		t.Fatal(err)
	}
	sameJSON(t, "completed op", got[0], done)
	// Journaling it pending again (a re-dispatch) clears the result.
	mustCommit(t, s, &Commit{RunID: "r1", Ops: []Op{op}})
	got, _ = s.StepOps(context.Background(), "r1", 1)
	if got[0].Status != OpPending || got[0].Result != nil {
		t.Fatalf("re-pended op: %+v", got[0])
	}
}
