// Package testrun starts runs on a real executor and waits for their end,
// failing the test when either goes wrong: the start-and-wait lines the
// tests of workflows, declarative and the phase sets each wrote. It is
// apart from package testkit because it imports the executor.
package testrun

import (
	"context"
	"testing"
	"time"

	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// WaitTimeout bounds Wait: generous, so that a loaded machine (-race,
// parallel packages) does not fail a run that is merely slow; it is there
// so that a run that never ends fails its test instead of hanging it.
const WaitTimeout = 2 * time.Minute

// Start starts the run req asks for on ex and returns its first head.
func Start(tb testing.TB, ex *workflows.Executor, req workflows.StartRequest) state.Run {
	tb.Helper()
	h, err := ex.StartRun(context.Background(), req)
	if err != nil {
		tb.Fatalf("start %s: %v", req.Workflow, err)
	}
	return h
}

// Wait waits for run id on ex to end and returns its last head, whatever
// its status.
func Wait(tb testing.TB, ex *workflows.Executor, id string) state.Run {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	h, err := ex.Wait(ctx, id)
	if err != nil {
		tb.Fatalf("wait %s: %v", id, err)
	}
	return h
}
