package bolt

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/storetest"
)

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
		op := state.Op{ID: state.OpID("r1", step, 0), RunID: "r1", Step: step, Status: state.OpPending,
			Request: operations.NewGenerate(operations.GenerateRequest{Model: "m", Messages: window})}
		before := s.Stats().Bytes
		storetest.MustCommit(t, s, &state.Commit{RunID: "r1", Ops: []state.Op{op}})
		writes = append(writes, s.Stats().Bytes-before)
		got, err := s.StepOps(ctx, "r1", step)
		if err != nil {
			t.Fatal(err)
		}
		storetest.SameJSON(t, "sliding op", got[0], op)
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
