package state

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
)

// TestCountRuns counts heads by status, including a run whose result and
// vars hold a "status" key of their own and runs whose status changed.
func TestCountRuns(t *testing.T) {
	s := openTestStore(t)
	ctx := context.Background()
	if c, err := s.CountRuns(ctx); err != nil || c != (RunCounts{}) {
		t.Fatalf("empty store: %+v, %v", c, err)
	}
	statuses := []Status{StatusRunning, StatusRunning, StatusPaused, StatusSucceeded, StatusFailed, StatusFailed, StatusCancelled}
	for i, st := range statuses {
		h := testHead(fmt.Sprintf("run%02d", i), "wf", "", st)
		if st == StatusSucceeded {
			h.Result = json.RawMessage(`{"status":"failed"}`)
			h.Vars = map[string]json.RawMessage{"v": json.RawMessage(`{"status":"running"}`)}
		}
		mustCommit(t, s, &Commit{RunID: h.ID, Run: h})
	}
	// run00 ends: running -> succeeded.
	h := testHead("run00", "wf", "", StatusSucceeded)
	mustCommit(t, s, &Commit{RunID: h.ID, Run: h})
	got, err := s.CountRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := RunCounts{Total: 7, Running: 1, Paused: 1, Succeeded: 2, Failed: 2, Cancelled: 1}
	if got != want {
		t.Fatalf("CountRuns = %+v, want %+v", got, want)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.CountRuns(cctx); err == nil {
		t.Fatal("CountRuns with a cancelled context succeeded")
	}
}

// BenchmarkCountRuns counts 100,000 runs.
func BenchmarkCountRuns(b *testing.B) {
	s := openTestStore(b)
	seedRuns(b, s, 100_000)
	b.ResetTimer()
	for b.Loop() {
		c, err := s.CountRuns(context.Background())
		if err != nil || c.Total != 100_000 {
			b.Fatalf("%+v, %v", c, err)
		}
	}
}

// seedRuns commits n small heads from 32 goroutines, so the store groups
// them into few transactions.
func seedRuns(tb testing.TB, s Store, n int) {
	tb.Helper()
	statuses := []Status{StatusSucceeded, StatusFailed, StatusCancelled, StatusRunning}
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 32 {
				h := testHead(fmt.Sprintf("r%07d", i), "wf", "", statuses[i%len(statuses)])
				if err := s.Commit(context.Background(), &Commit{RunID: h.ID, Run: h}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
}
