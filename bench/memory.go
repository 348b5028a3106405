package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/bolt"
	"github.com/flockrun/flock/workflows"
)

// heapProfile, if set, names the file LiveRuns writes a heap profile to,
// taken when it measures the live runs (the -heapprofile flag).
var heapProfile string

// LiveStats is what LiveRuns measured.
type LiveStats struct {
	Runs, Entries int
	// Build is the time to write the runs' records directly to the store.
	Build time.Duration
	// Resume is the time from Executor.Start (which loads every running
	// run) until every run has committed its first phase.
	Resume time.Duration
	// PerRun is the Go memory in use per live run: HeapInuse + StackInuse
	// (runtime.MemStats, after runtime.GC), with every run loaded and
	// idle, minus the same before the executor started, divided by Runs.
	PerRun float64
	// Stack is the part of PerRun that is goroutine stacks.
	Stack float64
}

// idlePhase reads the newest entries (as an agent rendering its recent
// history does), checks them, and sleeps for an hour: the run is live and
// idle, its runner waiting on the delay.
func idlePhase(in phases.Input) (phases.Output, error) {
	n := in.State.Len()
	for i := n - 1; i >= max(0, n-20); i-- {
		if e := in.State.Entry(i); e.Seq != uint64(i+1) || e.Type != "fill" {
			return phases.Output{}, fmt.Errorf("entry %d has seq %d, type %q", i, e.Seq, e.Type)
		}
	}
	return phases.Output{Next: "idle", Delay: time.Hour}, nil
}

// committed counts phase commits (an Observer).
type committed struct{ n atomic.Int64 }

func (c *committed) RunStarted(string, bool)                         {}
func (c *committed) RunEnded(string, state.Status)                   {}
func (c *committed) PhaseCommitted(string, string)                   { c.n.Add(1) }
func (c *committed) OpFinished(operations.Kind, bool, time.Duration) {}

// memInUse returns HeapInuse + StackInuse, and StackInuse, after a full
// collection.
func memInUse() (uint64, uint64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse, m.StackInuse
}

// buildRuns writes runs heads in status running with `entries` entries of
// ~200 bytes each, directly through the store in batches of 10,000
// entries, from up to 64 goroutines.
func buildRuns(ctx context.Context, st state.Store, dir string, runs, entries int) error {
	text := strings.Repeat("f", 200)
	now := time.Now().UTC()
	var wg sync.WaitGroup
	var first error
	var mu sync.Mutex
	next := make(chan int)
	for w := 0; w < min(runs, 64); w++ {
		wg.Go(func() {
			for i := range next {
				if err := buildRun(ctx, st, fmt.Sprintf("run-%06d", i), dir, entries, text, now); err != nil {
					mu.Lock()
					first = errors.Join(first, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := 0; i < runs; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

func buildRun(ctx context.Context, st state.Store, id, dir string, entries int, text string, now time.Time) error {
	h := state.Run{Schema: state.SchemaVersion, ID: id, Workflow: "bench.idle", Status: state.StatusRunning,
		Next: "idle", WorkDir: filepath.Join(dir, "runs", id), CreatedAt: now, UpdatedAt: now}
	if err := st.Commit(ctx, &state.Commit{RunID: id, Run: &h, Spec: &state.Spec{Task: "idle", Settings: []byte("{}")},
		Events: []state.Event{{Time: now, Type: "run", Status: record.RunEvent(state.StatusRunning), Message: "created"}}}); err != nil {
		return err
	}
	for done := 0; done < entries; {
		n := min(10000, entries-done)
		c := &state.Commit{RunID: id, Entries: make([]phases.Entry, n)}
		for k := range c.Entries {
			seq := uint64(done + k + 1)
			c.Entries[k] = phases.Entry{Seq: seq, Type: "fill", Phase: "idle", Step: seq,
				Data: []byte(`{"i":` + fmt.Sprint(seq) + `,"text":"` + text + `"}`)}
		}
		done += n
		h.Entries = uint64(done)
		c.Run = &h
		if err := st.Commit(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// LiveRuns builds `runs` runs of `entries` entries each, starts an
// executor on them and measures the resume and the memory of the live,
// idle runs.
func LiveRuns(runs, entries int) (LiveStats, error) {
	out := LiveStats{Runs: runs, Entries: entries}
	dir, err := os.MkdirTemp("", "flock-bench-mem-")
	if err != nil {
		return out, err
	}
	defer os.RemoveAll(dir)
	st, err := bolt.Open(filepath.Join(dir, "flock.db"), bolt.Options{})
	if err != nil {
		return out, err
	}
	defer st.Close()
	ctx := context.Background()
	start := time.Now()
	if err := buildRuns(ctx, st, dir, runs, entries); err != nil {
		return out, err
	}
	out.Build = time.Since(start)

	reg := phases.NewRegistry()
	reg.MustRegister(phases.Workflow{Name: "bench.idle", Start: "idle",
		Phases: []phases.PhaseSpec{{Name: "idle", Run: idlePhase, Next: []string{"idle"}}}})
	obs := &committed{}
	ex, err := workflows.New(workflows.Config{Store: st, Registry: reg, RunsDir: filepath.Join(dir, "runs"), Observer: obs})
	if err != nil {
		return out, err
	}
	before, stackBefore := memInUse()
	start = time.Now()
	if err := ex.Start(ctx); err != nil {
		return out, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		_ = ex.Stop(sctx)
	}()
	deadline := time.Now().Add(10 * time.Minute)
	for obs.n.Load() < int64(runs) {
		if time.Now().After(deadline) {
			return out, fmt.Errorf("%d of %d runs resumed after 10 minutes", obs.n.Load(), runs)
		}
		time.Sleep(time.Millisecond)
	}
	out.Resume = time.Since(start)
	if n := len(ex.Active()); n != runs {
		return out, fmt.Errorf("%d of %d runs live", n, runs)
	}
	after, stackAfter := memInUse()
	out.PerRun = (float64(after) - float64(before)) / float64(runs)
	out.Stack = (float64(stackAfter) - float64(stackBefore)) / float64(runs)
	if heapProfile != "" {
		if err := writeHeapProfile(heapProfile); err != nil {
			return out, err
		}
	}
	runtime.KeepAlive(ex)
	return out, nil
}

// writeHeapProfile writes the heap profile as of the last collection.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	return f.Close()
}
