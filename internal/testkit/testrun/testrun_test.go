package testrun_test

import (
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit/testapp"
	"github.com/flockrun/flock/internal/testkit/testrun"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// TestStartAndWait starts a script run whose second command fails and
// waits for it: Wait returns the ended head, failed, whatever the status.
func TestStartAndWait(t *testing.T) {
	a := testapp.Open(t, configs.Server{DataDir: t.TempDir(), Mode: "simulated"})
	h := testrun.Start(t, a.Executor, workflows.StartRequest{Workflow: "script", Settings: []byte(`{"commands":["echo one","exit 3"]}`)})
	if h.Status != state.StatusRunning {
		t.Fatalf("first head %+v, want running", h)
	}
	end := testrun.Wait(t, a.Executor, h.ID)
	if end.ID != h.ID || end.Status != state.StatusFailed {
		t.Fatalf("end %+v, want %s failed", end, h.ID)
	}
}
