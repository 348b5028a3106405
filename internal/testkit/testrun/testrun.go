// Package testrun starts a real executor for a test, starts runs on it and
// waits for their end, failing the test when any goes wrong: the
// new-start-and-stop and the start-and-wait lines the tests of workflows,
// declarative, the server, the client and the phase sets each wrote. It is
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

// StopTimeout bounds the executor's Stop at the end of a test: it waits
// this long for its runs to stop.
const StopTimeout = 10 * time.Second

// Executor makes an executor with cfg and starts it, failing tb if either
// fails, and stops it when the test ends, reporting an error of Stop as a
// test error. A test that stops and starts executors itself (a restart)
// calls workflows.New directly.
func Executor(tb testing.TB, cfg workflows.Config) *workflows.Executor {
	tb.Helper()
	ex, err := workflows.New(cfg)
	if err != nil {
		tb.Fatalf("new executor: %v", err)
	}
	if err := ex.Start(context.Background()); err != nil {
		tb.Fatalf("start executor: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
		defer cancel()
		if err := ex.Stop(ctx); err != nil {
			tb.Errorf("stop executor: %v", err)
		}
	})
	return ex
}

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
