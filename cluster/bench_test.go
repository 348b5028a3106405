package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// stepClock records, per run, when each phase call of test.steps began:
// the gaps between calls are the engine's cost per transition (a phase
// call, a durable commit, the next call).
var stepClock = struct {
	mu    sync.Mutex
	calls map[string][]time.Time
}{calls: map[string][]time.Time{}}

// stepsWorkflow takes as many steps as its task says, each a phase call
// and a commit with no operation.
func stepsWorkflow() phases.Workflow {
	p := func(in phases.Input) (phases.Output, error) {
		stepClock.mu.Lock()
		stepClock.calls[in.Run.ID] = append(stepClock.calls[in.Run.ID], time.Now())
		stepClock.mu.Unlock()
		n, err := strconv.Atoi(in.Run.Task)
		if err != nil {
			return phases.Output{}, err
		}
		if int(in.Run.Step) < n {
			return phases.Output{Next: "p"}, nil
		}
		return phases.Output{}, nil
	}
	return phases.Workflow{Name: "test.steps", Start: "p",
		Phases: []phases.PhaseSpec{{Name: "p", Run: p, Next: []string{"p"}}}}
}

func init() { phases.Default.MustRegister(stepsWorkflow()) }

// engineLoad runs `runs` runs of `steps` transitions on the executors
// (round robin) and returns transitions/s, the p50 gap between a run's
// phase calls and the CPU time the process (the engine, the store and,
// for JetStream, every embedded NATS server) spent per transition.
func engineLoad(b *testing.B, exs []*workflows.Executor, st state.Reader, runs, steps int) (float64, time.Duration, time.Duration) {
	b.Helper()
	ctx := context.Background()
	ids := make([]string, runs)
	cpu0 := cpuTime(b)
	began := time.Now()
	// The runs are started at once, each from a goroutine of its own, so
	// that all of them are live together whatever a start costs: started
	// one after another, the first runs of a store whose starts take a few
	// round trips finish before the last begin.
	var wg sync.WaitGroup
	errs := make([]error, runs)
	for i := range ids {
		wg.Go(func() {
			h, err := exs[i%len(exs)].StartRun(ctx, workflows.StartRequest{Workflow: "test.steps", Task: strconv.Itoa(steps)})
			ids[i], errs[i] = h.ID, err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	testkit.CheckFor(b, 10*time.Minute, func() error {
		for _, id := range ids {
			h, err := st.Run(ctx, id)
			if err != nil {
				return err
			}
			if !h.Status.Terminal() {
				return fmt.Errorf("run %s at step %d", id, h.Step)
			}
		}
		return nil
	})
	elapsed := time.Since(began)
	cpu := cpuTime(b) - cpu0
	// The window, for counting the syscalls of the load in a trace
	// (strace -f -ttt; see docs/benchmarks.md).
	b.Logf("%d runs × %d transitions from %.6f to %.6f (unix s)", runs, steps,
		float64(began.UnixNano())/1e9, float64(began.Add(elapsed).UnixNano())/1e9)
	var gaps []time.Duration
	stepClock.mu.Lock()
	for _, id := range ids {
		calls := stepClock.calls[id]
		for i := 1; i < len(calls); i++ {
			gaps = append(gaps, calls[i].Sub(calls[i-1]))
		}
		delete(stepClock.calls, id)
	}
	stepClock.mu.Unlock()
	slices.Sort(gaps)
	return float64(runs*steps) / elapsed.Seconds(), gaps[len(gaps)/2], cpu / time.Duration(runs*steps)
}

// cpuTime is the CPU time (user and system) the process used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkClusterEngine measures the engine through each store: one run
// of 200 transitions alone (p50 latency), then 100 concurrent runs of 50
// transitions (throughput), on bbolt (one process), on a single embedded
// NATS node (R1) and on a 3-node cluster (R3, runs started round robin on
// the nodes). Run with -benchtime 1x: each sub-benchmark is one workload.
func BenchmarkClusterEngine(b *testing.B) {
	const runs, steps = 100, 50
	report := func(b *testing.B, exs []*workflows.Executor, st state.Reader) {
		_, p50, _ := engineLoad(b, exs[:1], st, 1, 200)
		tps, loadP50, cpu := engineLoad(b, exs, st, runs, steps)
		b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms/transition")
		b.ReportMetric(tps, "transitions/s")
		b.ReportMetric(float64(loadP50.Microseconds())/1000, "p50-ms/transition-under-load")
		b.ReportMetric(float64(cpu.Microseconds()), "cpu-µs/transition-under-load")
	}
	b.Run("bolt", func(b *testing.B) {
		for range b.N {
			a, err := app.Open(context.Background(), configs.Server{DataDir: filepath.Join(b.TempDir(), "data")}, nil)
			if err != nil {
				b.Fatal(err)
			}
			report(b, []*workflows.Executor{a.Executor}, a.Store)
			_ = a.Close(context.Background())
		}
	})
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("R%d", n), func(b *testing.B) {
			for range b.N {
				c := startCluster(b, clusterOpts{n: n, ackWait: 3 * time.Second, sweep: time.Minute})
				exs := make([]*workflows.Executor, n)
				for i, nd := range c.nodes {
					exs[i] = nd.a.Executor
				}
				report(b, exs, c.nodes[0].store)
				per := make([]int64, n)
				for i, nd := range c.nodes {
					per[i], _ = nd.m.Dispatcher.Stats()
				}
				b.Logf("claims received per node: %v", per)
				c.close()
			}
		})
	}
}

// BenchmarkClusterTakeover kills a node driving runs 20 times (SIGKILL as
// far as one process allows: its store refuses writes, its NATS server and
// connections vanish), restarting it each time, and reports the time
// from the kill until each of its runs is driven by another node: AckWait
// (1 s) plus the lease, plus JetStream's leader election (4–9 s) when the
// dead node led a stream the run needs. Run with -benchtime 1x.
func BenchmarkClusterTakeover(b *testing.B) {
	const kills, ackWait = 20, time.Second
	for range b.N {
		c := startCluster(b, clusterOpts{ackWait: ackWait, sweep: time.Minute})
		ctx := context.Background()
		var all []time.Duration
		leaderKills := 0
		for k := range kills {
			var ids []string
			for i := range 3 {
				settings, _ := json.Marshal(map[string]any{"commands": []string{"sleep 30"}})
				h, err := c.nodes[i].a.Executor.StartRun(ctx, workflows.StartRequest{Workflow: "script", Settings: settings})
				if err != nil {
					b.Fatal(err)
				}
				ids = append(ids, h.ID)
			}
			var victim int
			var victims []string
			testkit.CheckFor(b, 60*time.Second, func() error {
				victims = victims[:0]
				victim = -1
				for _, id := range ids {
					d := c.driver(id)
					if d < 0 {
						return fmt.Errorf("run %s not driven", id)
					}
					if victim < 0 && rand.IntN(2) == 0 || victim == d {
						victim = d
					}
				}
				if victim < 0 {
					victim = c.driver(ids[0])
				}
				for _, id := range ids {
					if c.driver(id) == victim {
						victims = append(victims, id)
					}
				}
				return nil
			})
			led := c.leadsAny(victim)
			if len(led) > 0 {
				leaderKills++
			}
			killed := time.Now()
			c.kill(victim)
			got := map[string]time.Duration{}
			testkit.CheckFor(b, 60*time.Second, func() error {
				for _, id := range victims {
					if _, ok := got[id]; !ok && c.driver(id) >= 0 {
						got[id] = time.Since(killed)
					}
				}
				if len(got) < len(victims) {
					return fmt.Errorf("%d of %d runs of %s taken over", len(got), len(victims), c.nodes[victim].name)
				}
				return nil
			})
			var worst time.Duration
			for _, d := range got {
				all = append(all, d)
				worst = max(worst, d)
			}
			b.Logf("kill %d: %s (led %v) drove %d runs; taken over within %v", k+1, c.nodes[victim].name, led, len(victims), worst.Round(time.Millisecond))
			for _, id := range ids {
				if err := c.alive().a.Executor.Cancel(ctx, id); err != nil {
					b.Logf("cancel %s: %v", id, err)
				}
			}
			c.restart(victim)
		}
		slices.Sort(all)
		q := func(p float64) float64 { return all[int(p*float64(len(all)-1))].Seconds() }
		b.ReportMetric(q(0.5), "p50-s")
		b.ReportMetric(q(0.9), "p90-s")
		b.ReportMetric(all[len(all)-1].Seconds(), "max-s")
		b.ReportMetric(all[0].Seconds(), "min-s")
		b.ReportMetric(float64(leaderKills), "kills-of-a-leader")
		c.close()
	}
}
