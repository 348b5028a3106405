package bolt

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/storetest"
)

// reportWrites reports logical and page bytes per commit since before.
func reportWrites(b *testing.B, s *Store, before Stats) {
	b.Helper()
	st := s.Stats()
	n := float64(st.Commits - before.Commits)
	if n == 0 {
		return
	}
	b.ReportMetric(float64(st.Bytes-before.Bytes)/n, "B/commit")
	b.ReportMetric(float64(st.PageBytes-before.PageBytes)/n, "pageB/commit")
	b.ReportMetric(n/float64(st.Txs-before.Txs), "commits/tx")
}

func BenchmarkCommitOneRun(b *testing.B) {
	ctx := context.Background()
	s := openTestStore(b)
	storetest.MustCommit(b, s, &state.Commit{RunID: "run", Spec: &state.Spec{Task: "bench"}})
	before := s.Stats()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		c := storetest.Transition("run", uint64(i+1), 0)
		start := time.Now()
		if err := s.Commit(ctx, c); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
	reportWrites(b, s, before)
}

func BenchmarkCommitConcurrent(b *testing.B) {
	ctx := context.Background()
	s := openTestStore(b)
	const runs = 1000
	before := s.Stats()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	b.ResetTimer()
	start := time.Now()
	for r := range runs {
		wg.Go(func() {
			id := fmt.Sprintf("run%04d", r)
			for step := uint64(1); next.Add(1) <= int64(b.N); step++ {
				if err := s.Commit(ctx, storetest.Transition(id, step, 0)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "commits/s")
	reportWrites(b, s, before)
}

func BenchmarkCommitHistory(b *testing.B) {
	for _, history := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("entries=%d", history), func(b *testing.B) {
			ctx := context.Background()
			s := openTestStore(b)
			// Other runs interleave with the measured one, as in a busy store.
			for r := range 20 {
				id := fmt.Sprintf("other%02d", r)
				storetest.MustCommit(b, s, &state.Commit{RunID: id, Run: storetest.Head(id, "wf", "", state.StatusRunning), Entries: storetest.Entries(1, history/10+1)})
			}
			const chunk = 1000
			for seq := 1; seq <= history; seq += chunk {
				c := &state.Commit{RunID: "run", Entries: storetest.Entries(uint64(seq), min(chunk, history-seq+1))}
				for i := range c.Entries {
					c.Entries[i].Data = json.RawMessage(`{"text":"` + strings.Repeat("y", 250) + `"}`)
				}
				for i := range c.Entries {
					step := c.Entries[i].Seq
					c.Ops = append(c.Ops, storetest.Op("run", step, 0, state.OpDone))
				}
				storetest.MustCommit(b, s, c)
			}
			before := s.Stats()
			b.ResetTimer()
			for i := range b.N {
				if err := s.Commit(ctx, storetest.Transition("run", uint64(history+i+1), 0)); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportWrites(b, s, before)
		})
	}
}

// TestTransitionCommitShape keeps the benchmark's commit at the documented
// size.
func TestTransitionCommitShape(t *testing.T) {
	c := storetest.Transition("01JQ8Z6V3K4M5N6P7Q8R9S0T1V", 42, 0)
	r, err := encodeCommit(c)
	if err != nil {
		t.Fatal(err)
	}
	sizes := []struct {
		name    string
		got     int
		lo, hi  int
		explain string
	}{
		{"head", len(r.head), 400, 650, "about 500 B"},
		{"entry", len(r.entries[0]), 250, 400, "about 300 B"},
		{"op", len(r.ops[0]), 250, 450, "about 300 B"},
	}
	for _, sz := range sizes {
		t.Run(sz.name, func(t *testing.T) {
			if sz.got < sz.lo || sz.got > sz.hi {
				t.Fatalf("%d bytes, want %s", sz.got, sz.explain)
			}
		})
	}
}
