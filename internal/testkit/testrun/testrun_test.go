package testrun_test

import (
	"context"
	"errors"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit/testapp"
	"github.com/flockrun/flock/internal/testkit/testrun"
	"github.com/flockrun/flock/internal/testkit/teststore"
	"github.com/flockrun/flock/phases"
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

// TestExecutorStopsAtEnd: the executor Executor starts runs a workflow
// to its end, and is stopped when the (sub)test that made it ends.
func TestExecutorStopsAtEnd(t *testing.T) {
	st := teststore.Open(t)
	reg := phases.NewRegistry()
	reg.MustRegister(phases.Workflow{Name: "done", Start: "p", Phases: []phases.PhaseSpec{{Name: "p",
		Run: func(phases.Input) (phases.Output, error) { return phases.Output{End: &phases.End{}}, nil }}}})
	var ex *workflows.Executor
	t.Run("open", func(t *testing.T) {
		ex = testrun.Executor(t, workflows.Config{Store: st, Registry: reg, RunsDir: t.TempDir()})
		h := testrun.Start(t, ex, workflows.StartRequest{Workflow: "done"})
		if end := testrun.Wait(t, ex, h.ID); end.Status != state.StatusSucceeded {
			t.Fatalf("end %+v, want succeeded", end)
		}
	})
	_, err := ex.StartRun(context.Background(), workflows.StartRequest{Workflow: "done"})
	if !errors.Is(err, workflows.ErrStopped) {
		t.Fatalf("start after the test ended: %v, want ErrStopped", err)
	}
}
