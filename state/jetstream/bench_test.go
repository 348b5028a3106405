package jetstream

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/bolt"
	"github.com/flockrun/flock/state/storetest"
)

// benchStores runs fn against the bbolt store (fsync on every commit),
// the JetStream store on one server (R1) and on a three-node in-process
// cluster (R3), every server syncing every write, and R1 on a server that
// does not sync (to show what the syncs cost). Each call of fn gets a
// fresh store.
func benchStores(b *testing.B, fn func(b *testing.B, s state.Store)) {
	b.Run("bolt", func(b *testing.B) {
		s, err := bolt.Open(filepath.Join(b.TempDir(), "flock.db"), bolt.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		fn(b, s)
	})
	solo := []*server.Server{startServer(b)}
	b.Run("R1", func(b *testing.B) { fn(b, openStore(b, solo, Options{Replicas: 1})) })
	// Not durable: what the store costs without the server's fsyncs
	// (docs/benchmarks.md), never how flock runs.
	opts := soloOptions(b)
	opts.SyncAlways = false
	nosync := []*server.Server{runServer(b, opts)}
	b.Run("R1-nosync", func(b *testing.B) { fn(b, openStore(b, nosync, Options{Replicas: 1})) })
	cluster := startCluster(b, 3)
	b.Run("R3", func(b *testing.B) { fn(b, openStore(b, cluster, Options{Replicas: 3})) })
}

// BenchmarkCommitOneRun: one run's transitions, one after the other; the
// latency of a commit is what a run waits per phase transition.
func BenchmarkCommitOneRun(b *testing.B) {
	benchStores(b, func(b *testing.B, s state.Store) {
		ctx := context.Background()
		if err := s.Commit(ctx, &state.Commit{RunID: "run", Spec: &state.Spec{Task: "bench"}}); err != nil {
			b.Fatal(err)
		}
		lat := make([]time.Duration, 0, b.N)
		var rev uint64
		b.ResetTimer()
		for i := range b.N {
			c := storetest.Transition("run", uint64(i+1), rev)
			start := time.Now()
			if err := s.Commit(ctx, c); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
			rev = c.Run.Revision
		}
		b.StopTimer()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
		if sr, ok := s.(state.StatsReporter); ok {
			st := sr.Stats()
			b.ReportMetric(float64(st.Bytes)/float64(st.Commits), "B/commit")
		}
	})
}

// BenchmarkCommitConcurrent: transitions of many runs at once (each run's
// own commits in order), as a node driving many runs makes them.
func BenchmarkCommitConcurrent(b *testing.B) {
	for _, runs := range []int{100, 1000} {
		b.Run(fmt.Sprintf("runs=%d", runs), func(b *testing.B) {
			benchStores(b, func(b *testing.B, s state.Store) {
				ctx := context.Background()
				var next atomic.Int64
				var wg sync.WaitGroup
				errs := make(chan error, runs)
				b.ResetTimer()
				start := time.Now()
				for r := range runs {
					wg.Go(func() {
						id := fmt.Sprintf("run%04d", r)
						var rev uint64
						for step := uint64(1); next.Add(1) <= int64(b.N); step++ {
							c := storetest.Transition(id, step, rev)
							if err := s.Commit(ctx, c); err != nil {
								errs <- err
								return
							}
							rev = c.Run.Revision
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
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "transitions/s")
			})
		})
	}
}
