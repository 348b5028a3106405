package teststore

import (
	"context"
	"testing"

	"github.com/flockrun/flock/state"
)

// TestOpenAtSurvivesReopen writes a run, closes the store as a stopping
// server would and opens the same directory again: the run is there.
func TestOpenAtSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	st := OpenAt(t, dir)
	ctx := context.Background()
	run := state.Run{ID: "r1", Workflow: "w", Status: state.StatusRunning}
	if err := st.Commit(ctx, &state.Commit{RunID: run.ID, Run: &run, Spec: &state.Spec{}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	again := OpenAt(t, dir)
	got, err := again.Run(ctx, "r1")
	if err != nil || got.Workflow != "w" {
		t.Fatalf("after reopen: %+v %v", got, err)
	}
}
