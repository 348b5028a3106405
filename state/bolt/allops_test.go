package bolt

import (
	"context"
	"errors"
	"testing"

	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/storetest"
)

// TestAllOps reads a run's 2,050 ops across three pages in journal order,
// stops where the caller breaks, and yields a read error once.
func TestAllOps(t *testing.T) {
	s := openTestStore(t)
	var ops []state.Op
	for step := uint64(1); step <= 41; step++ {
		for i := 0; i < 50; i++ {
			ops = append(ops, storetest.Op("r", step, i, state.OpPending))
		}
	}
	storetest.MustCommit(t, s, &state.Commit{RunID: "r", Run: storetest.Head("r", "wf", "", state.StatusRunning), Ops: ops})
	ctx := context.Background()
	n := 0
	for op, err := range state.AllOps(ctx, s, "r") {
		if err != nil {
			t.Fatal(err)
		}
		if want := ops[n].ID; op.ID != want {
			t.Fatalf("op %d is %s, want %s", n, op.ID, want)
		}
		n++
	}
	if n != len(ops) {
		t.Fatalf("%d ops, want %d", n, len(ops))
	}
	n = 0
	for _, err := range state.AllOps(ctx, s, "r") {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 1500 {
			break
		}
	}
	if n != 1500 {
		t.Fatalf("stopped after %d ops, want 1500", n)
	}
	s.Close()
	errs := 0
	for _, err := range state.AllOps(ctx, s, "r") {
		if !errors.Is(err, state.ErrClosed) {
			t.Fatalf("after Close: %v, want ErrClosed", err)
		}
		errs++
	}
	if errs != 1 {
		t.Fatalf("%d errors yielded, want 1", errs)
	}
}
