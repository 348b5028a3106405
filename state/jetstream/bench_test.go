package jetstream

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/bolt"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// transitionCommit is shaped like one phase transition (as in the bbolt
// store's benchmarks): a head of about 500 B, one entry of about 300 B,
// two pending ops of about 300 B and one event, fenced on the revision
// the previous transition wrote.
func transitionCommit(id string, step, expect uint64) *state.Commit {
	h := &state.Run{
		ID: id, Workflow: "agent.react", Status: state.StatusRunning, Phase: "think", Next: "act",
		Step: step, NumOps: 2, Entries: step,
		Usage:  operations.RunUsage{Tokens: 1234 * int(step), Actions: int(step), Seconds: 12.5, Cost: 0.0123},
		Limits: operations.RunLimits{Tokens: 1_000_000, Actions: 500, Seconds: 3600, Cost: 5},
		Vars: map[string]json.RawMessage{
			"plan":    json.RawMessage(`"inspect the repository, then run the tests"`),
			"attempt": json.RawMessage(`3`),
		},
		WorkDir:   "/var/lib/flock/runs/" + id + "/work",
		CreatedAt: t0, UpdatedAt: t0.Add(time.Duration(step) * time.Second),
	}
	text := strings.Repeat("x", 220)
	e := record.Entry{Seq: step, Type: "message", Phase: "think", Step: step,
		Data: json.RawMessage(`{"role":"assistant","text":"` + text + `"}`)}
	ops := make([]state.Op, 2)
	for i := range ops {
		ops[i] = state.Op{
			ID: state.OpID(id, step, i), RunID: id, Step: step, Index: i, Phase: "think",
			Status: state.OpPending, CreatedAt: t0,
			Request: operations.Request{Kind: operations.KindBash, Meta: map[string]string{"purpose": "explore"},
				Params: &operations.BashRequest{Command: "grep -rn 'func main' . | head -50 && go test ./... 2>&1 | tail -40", TimeoutS: 60}},
		}
	}
	return &state.Commit{RunID: id, ExpectRevision: expect, Run: h, Entries: []record.Entry{e}, Ops: ops,
		Events: []state.Event{{Time: t0, Type: "phase", Phase: "think", Step: step, Message: "think -> act"}}}
}

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
			c := transitionCommit("run", uint64(i+1), rev)
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
							c := transitionCommit(id, step, rev)
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
