package jetstream

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

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

// BenchmarkPublishCeiling measures what the servers alone can do for a
// store layout, without the store or the engine: 100 writers (runs) at
// once, each making 50 transitions one after the other, a transition
// being `msgs` fenced 400-byte publishes to subjects of its own (each
// with Nats-Expected-Last-Subject-Sequence, as every durable write of a
// run must be fenced), waited for one after the other, or as one atomic
// batch (NATS 2.12's Nats-Batch-* headers) acknowledged once, on
// `shards` streams. Every server syncs every write. A commit writes at
// least one fenced message (the run's revision check is a subject's last
// sequence), so msgs=1 is the ceiling of any layout: the rate no engine
// on these servers can pass (docs/benchmarks.md, issue 28.4). Run with
// -benchtime 1x.
func BenchmarkPublishCeiling(b *testing.B) {
	const runs, steps = 100, 50
	type shape struct {
		msgs, shards int
		atomic       bool
	}
	for _, rep := range []int{1, 3} {
		var servers []*server.Server
		var shapes []shape
		if rep == 1 {
			servers = []*server.Server{startServer(b)}
			shapes = []shape{{1, 1, false}, {1, 4, false}, {1, 16, false}, {3, 4, false}, {3, 4, true}}
		} else {
			servers = startCluster(b, 3)
			shapes = []shape{{1, 1, false}, {1, 4, false}, {3, 1, false}, {3, 1, true}}
		}
		for i, sh := range shapes {
			name := fmt.Sprintf("R%d/msgs=%d/shards=%d", rep, sh.msgs, sh.shards)
			if sh.atomic {
				name += "/atomic"
			}
			b.Run(name, func(b *testing.B) {
				nc := connect(b, servers...)
				js, err := jetstream.New(nc)
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				prefix := fmt.Sprintf("ceil%d_%d", rep, i)
				for s := range sh.shards {
					_, err := js.CreateStream(ctx, jetstream.StreamConfig{
						Name:     fmt.Sprintf("%s_%d", prefix, s),
						Subjects: []string{fmt.Sprintf("%s.%d.>", prefix, s)},
						Replicas: rep, Storage: jetstream.FileStorage,
						AllowAtomicPublish: sh.atomic,
					})
					if err != nil {
						b.Fatal(err)
					}
				}
				payload := make([]byte, 400)
				cpu0 := processCPU(b)
				start := time.Now()
				var wg sync.WaitGroup
				errs := make(chan error, runs)
				for r := range runs {
					wg.Go(func() {
						subjects := make([]string, sh.msgs)
						for k := range subjects {
							subjects[k] = fmt.Sprintf("%s.%d.r%d.l%d", prefix, r%sh.shards, r, k)
						}
						last := make([]uint64, sh.msgs)
						for range steps {
							if err := ceilingTransition(nc, subjects, last, payload, sh.atomic); err != nil {
								errs <- err
								return
							}
						}
					})
				}
				wg.Wait()
				elapsed := time.Since(start)
				cpu := processCPU(b) - cpu0
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
				b.ReportMetric(float64(runs*steps)/elapsed.Seconds(), "transitions/s")
				b.ReportMetric(float64(cpu.Microseconds())/float64(runs*steps), "cpu-µs/transition")
			})
		}
	}
}

// ceilingTransition publishes one message to each subject, fenced on the
// subject's last sequence (last, updated from the acknowledgements):
// each waited for in turn, or as one atomic batch.
func ceilingTransition(nc *nats.Conn, subjects []string, last []uint64, payload []byte, atomic bool) error {
	batch := nuid.Next()
	for k, subj := range subjects {
		m := nats.NewMsg(subj)
		m.Data = payload
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(last[k], 10))
		if atomic {
			m.Header.Set("Nats-Batch-Id", batch)
			m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(k+1))
			if k < len(subjects)-1 {
				if err := nc.PublishMsg(m); err != nil {
					return err
				}
				continue
			}
			m.Header.Set("Nats-Batch-Commit", "1")
		}
		resp, err := nc.RequestMsg(m, 10*time.Second)
		if err != nil {
			return fmt.Errorf("publish %s: %w", subj, err)
		}
		var ack struct {
			Seq   uint64 `json:"seq"`
			Error *struct {
				Description string `json:"description"`
			} `json:"error"`
		}
		if err := json.Unmarshal(resp.Data, &ack); err != nil {
			return fmt.Errorf("publish %s: %w", subj, err)
		}
		if ack.Error != nil {
			return fmt.Errorf("publish %s: %s", subj, ack.Error.Description)
		}
		if !atomic {
			last[k] = ack.Seq
			continue
		}
		// An atomic batch takes consecutive sequences ending at the
		// commit's.
		for j := range last {
			last[j] = ack.Seq - uint64(len(last)-1-j)
		}
	}
	return nil
}

// processCPU is the CPU time (user and system) the process used so far:
// the client's and, in process, every server's.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
