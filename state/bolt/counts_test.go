package bolt

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/storetest"
)

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
func seedRuns(tb testing.TB, s state.Store, n int) {
	tb.Helper()
	statuses := []state.Status{state.StatusSucceeded, state.StatusFailed, state.StatusCancelled, state.StatusRunning}
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 32 {
				h := storetest.Head(fmt.Sprintf("r%07d", i), "wf", "", statuses[i%len(statuses)])
				if err := s.Commit(context.Background(), &state.Commit{RunID: h.ID, Run: h}); err != nil {
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
