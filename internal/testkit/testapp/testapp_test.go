package testapp

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// TestOpenClosesAtEnd runs a script run on an App that a subtest opened:
// once the subtest has ended, its App is closed, so the data directory
// opens again (bbolt holds a lock on the file while it is open) and the
// run is in it, succeeded.
func TestOpenClosesAtEnd(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	cfg := configs.Server{DataDir: data, Mode: "simulated"}
	var id string
	t.Run("open", func(t *testing.T) {
		a := Open(t, cfg)
		h, err := a.Executor.StartRun(t.Context(), workflows.StartRequest{Workflow: "script", Settings: []byte(`{"commands":["echo one"]}`)})
		if err != nil {
			t.Fatal(err)
		}
		id = h.ID
		if end, err := a.Executor.Wait(t.Context(), id); err != nil || end.Status != state.StatusSucceeded {
			t.Fatalf("run: %+v %v", end, err)
		}
	})
	a, err := app.Open(context.Background(), cfg, nil, app.WithoutResume())
	if err != nil {
		t.Fatalf("the data directory is still held after the test: %v", err)
	}
	defer a.Close(context.Background())
	h, err := a.Store.Run(t.Context(), id)
	if err != nil || h.Status != state.StatusSucceeded {
		t.Fatalf("run after reopen: %+v %v", h, err)
	}
}
