package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/handlers/bash"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/script"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/bolt"
	"github.com/flockrun/flock/workflows"
)

// tickSettings configure the tick workflow.
type tickSettings struct {
	// Prefill entries are appended (1,000 per phase) before timing starts.
	Prefill int `json:"prefill"`
	// Steps is the number of timed transitions.
	Steps int `json:"steps"`
	// Payload is the size of each appended entry's text.
	Payload int `json:"payload"`
}

// clock records when each timed phase call happened, per run. It lives
// outside the phase on purpose: benchmarks observe phases, phases stay pure.
type clock struct {
	mu    sync.Mutex
	calls map[string][]time.Time
	// stats, if set, is sampled at the first timed call of all, so that
	// bytes written by the prefill are not counted.
	stats func() bolt.Stats
	first *bolt.Stats
}

func (c *clock) mark(run string) {
	c.mu.Lock()
	if c.first == nil && c.stats != nil {
		s := c.stats()
		c.first = &s
	}
	c.calls[run] = append(c.calls[run], time.Now())
	c.mu.Unlock()
}

// gaps returns the durations between consecutive calls of every run.
func (c *clock) gaps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for _, ts := range c.calls {
		for i := 1; i < len(ts); i++ {
			out = append(out, ts[i].Sub(ts[i-1]))
		}
	}
	return out
}

// tickWorkflow appends one entry and sets one var per transition.
func tickWorkflow(c *clock) phases.Workflow {
	tick := func(in phases.Input) (phases.Output, error) {
		var s tickSettings
		if err := json.Unmarshal(in.Run.Settings, &s); err != nil {
			return phases.Output{}, err
		}
		var i int
		if _, err := phases.GetVar(in.State, "i", &i); err != nil {
			return phases.Output{}, err
		}
		var out phases.Output
		if filled := in.State.Len(); filled < s.Prefill {
			for k := 0; k < 1000 && filled+k < s.Prefill; k++ {
				out.Append = append(out.Append, phases.MustEntry("fill", map[string]string{"text": strings.Repeat("f", s.Payload)}))
			}
			out.Next = "tick"
			return out, nil
		}
		c.mark(in.Run.ID)
		if i >= s.Steps {
			return out, nil
		}
		out.Append = []phases.Entry{phases.MustEntry("tick", map[string]any{"i": i, "text": strings.Repeat("x", s.Payload)})}
		if err := out.SetVar("i", i+1); err != nil {
			return out, err
		}
		out.Next = "tick"
		return out, nil
	}
	return phases.Workflow{Name: "bench.tick", Start: "tick",
		Phases: []phases.PhaseSpec{{Name: "tick", Run: tick, Next: []string{"tick"}}}}
}

// engine is an executor on a fresh store in a temporary directory.
type engine struct {
	dir   string
	store *bolt.Store
	ex    *workflows.Executor
	clock *clock
}

func newEngine(hs map[operations.Kind]handlers.Handler) (*engine, error) {
	return newEngineWith(hs, workflows.Config{})
}

// newEngineWith is newEngine with cfg's options (NoSnapshots, the
// snapshot budgets) on top of the bench's.
func newEngineWith(hs map[operations.Kind]handlers.Handler, cfg workflows.Config) (*engine, error) {
	dir, err := os.MkdirTemp("", "flock-bench-")
	if err != nil {
		return nil, err
	}
	st, err := bolt.Open(filepath.Join(dir, "flock.db"), bolt.Options{})
	if err != nil {
		return nil, err
	}
	c := &clock{calls: map[string][]time.Time{}}
	reg := phases.NewRegistry()
	reg.MustRegister(tickWorkflow(c))
	reg.MustRegister(script.Workflow())
	cfg.Store, cfg.Registry, cfg.Handlers, cfg.RunsDir = st, reg, handlers.FromMap(hs), filepath.Join(dir, "runs")
	cfg.Concurrency = map[string]int{"bash": 64}
	ex, err := workflows.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := ex.Start(context.Background()); err != nil {
		return nil, err
	}
	return &engine{dir: dir, store: st, ex: ex, clock: c}, nil
}

func (e *engine) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = e.ex.Stop(ctx)
	_ = e.store.Close()
	_ = os.RemoveAll(e.dir)
}

// runAll starts runs of wf with settings and waits for all of them.
func (e *engine) runAll(wf string, settings any, runs int) (time.Duration, error) {
	doc, err := json.Marshal(settings)
	if err != nil {
		return 0, err
	}
	ctx := context.Background()
	start := time.Now()
	// Start the runs from several goroutines, as many clients would: their
	// creation commits are grouped like any others, so all runs are live
	// together instead of the first ones finishing while the last are made.
	ids := make([]string, runs)
	errs := make([]error, runs)
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < min(runs, 64); w++ {
		wg.Go(func() {
			for i := range next {
				h, err := e.ex.StartRun(ctx, workflows.StartRequest{Workflow: wf, Settings: doc})
				ids[i], errs[i] = h.ID, err
			}
		})
	}
	for i := range ids {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	for _, id := range ids {
		h, err := e.ex.Wait(ctx, id)
		if err != nil {
			return 0, err
		}
		if h.Status != state.StatusSucceeded {
			return 0, fmt.Errorf("run %s ended %s: %s", id, h.Status, h.Error)
		}
	}
	return time.Since(start), nil
}

// TransitionStats describes the timed transitions of a scenario.
type TransitionStats struct {
	P50, P90, Mean time.Duration
	Transitions    int
	PerSecond      float64
	// BytesPerTransition is the logical bytes put per transition (keys and
	// values); PagesPerTransition the bbolt page bytes allocated.
	BytesPerTransition float64
	PagesPerTransition float64
}

func stats(gaps []time.Duration, wall time.Duration, before, after bolt.Stats) TransitionStats {
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	var sum time.Duration
	for _, g := range gaps {
		sum += g
	}
	n := len(gaps)
	s := TransitionStats{Transitions: n}
	if n == 0 {
		return s
	}
	s.P50, s.P90, s.Mean = gaps[n/2], gaps[n*9/10], sum/time.Duration(n)
	s.PerSecond = float64(n) / wall.Seconds()
	s.BytesPerTransition = float64(after.Bytes-before.Bytes) / float64(n)
	s.PagesPerTransition = float64(after.PageBytes-before.PageBytes) / float64(n)
	return s
}

// Transitions runs `runs` concurrent runs of `steps` timed transitions
// after `prefill` entries of history each.
func Transitions(runs, steps, prefill, payload int) (TransitionStats, error) {
	e, err := newEngine(nil)
	if err != nil {
		return TransitionStats{}, err
	}
	defer e.close()
	e.clock.stats = e.store.Stats
	wall, err := e.runAll("bench.tick", tickSettings{Prefill: prefill, Steps: steps, Payload: payload}, runs)
	if err != nil {
		return TransitionStats{}, err
	}
	return stats(e.clock.gaps(), wall, *e.clock.first, e.store.Stats()), nil
}

// ScriptVersusFork runs a script workflow of n `true` commands through the
// persistent shell and, for comparison, n sequential `bash -c true` forks.
func ScriptVersusFork(n int) (script, fork time.Duration, err error) {
	sh := bash.New(bash.Options{})
	e, err := newEngine(map[operations.Kind]handlers.Handler{operations.KindBash: sh})
	if err != nil {
		return 0, 0, err
	}
	defer e.close()
	cmds := make([]string, n)
	for i := range cmds {
		cmds[i] = "true"
	}
	script, err = e.runAll("script", map[string]any{"commands": cmds}, 1)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		if err := exec.Command("bash", "-c", "true").Run(); err != nil {
			return 0, 0, err
		}
	}
	return script, time.Since(start), nil
}

// ShellRoundTrip measures the bash op of a builtin through the executor:
// the time from one phase call to the next when each phase asks for one
// `true` (shell round trip + journaling the result + the phase commit).
func ShellRoundTrip(n int) (TransitionStats, error) {
	sh := bash.New(bash.Options{})
	e, err := newEngine(map[operations.Kind]handlers.Handler{operations.KindBash: sh})
	if err != nil {
		return TransitionStats{}, err
	}
	defer e.close()
	cmds := make([]string, n)
	for i := range cmds {
		cmds[i] = "true"
	}
	before := e.store.Stats()
	start := time.Now()
	if _, err := e.runAll("script", map[string]any{"commands": cmds}, 1); err != nil {
		return TransitionStats{}, err
	}
	wall := time.Since(start)
	ops, err := e.store.Ops(context.Background(), onlyRun(e), "", 100000)
	if err != nil {
		return TransitionStats{}, err
	}
	var spans []time.Duration
	for _, op := range ops {
		if op.StartedAt != nil && op.FinishedAt != nil {
			spans = append(spans, op.FinishedAt.Sub(*op.StartedAt))
		}
	}
	s := stats(spans, wall, before, e.store.Stats())
	return s, nil
}

func onlyRun(e *engine) string {
	runs, _, _ := e.store.Runs(context.Background(), state.RunFilter{Limit: 1})
	if len(runs) == 0 {
		return ""
	}
	return runs[0].ID
}

// SnapshotStats is what the work-dir snapshot adds to a step (see
// SnapshotStep).
type SnapshotStats struct {
	// With and Without are the p50 gaps between an operation's end and the
	// next operation's start (the snapshot, the phase call, the commit),
	// with snapshots and without.
	With, Without time.Duration
	// Sparse is the gap after the command that made the sparse file, with
	// snapshots; SparseWithout without them.
	Sparse, SparseWithout time.Duration
	// StoreBytes is the disk the snapshot store takes at the end (allocated
	// blocks), with snapshots.
	StoreBytes int64
}

// SnapshotStep measures the work-dir snapshot of a step through the
// executor and the persistent shell: a script run whose first command
// fills the work directory with `files` files of 4 KiB, whose second makes
// a sparse file of sparseBytes apparent size holding 4 KiB of data, and
// whose next `steps` commands each rewrite one of the small files; once
// with snapshots and once without (workflows.Config.NoSnapshots).
func SnapshotStep(files, steps int, sparseBytes int64) (SnapshotStats, error) {
	cmds := []string{
		fmt.Sprintf("for i in $(seq %d); do head -c 4096 /dev/urandom > f$i; done", files),
		fmt.Sprintf("truncate -s %d sparse.img && head -c 4096 /dev/urandom | dd of=sparse.img bs=4096 seek=1000 conv=notrunc status=none", sparseBytes),
	}
	for i := range steps {
		cmds = append(cmds, fmt.Sprintf("echo %d > f%d", i, i%files+1))
	}
	var s SnapshotStats
	for _, off := range []bool{false, true} {
		gaps, sparse, used, err := snapshotGaps(cmds, off)
		if err != nil {
			return s, err
		}
		sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
		if off {
			s.Without, s.SparseWithout = gaps[len(gaps)/2], sparse
		} else {
			s.With, s.Sparse, s.StoreBytes = gaps[len(gaps)/2], sparse, used
		}
	}
	return s, nil
}

// snapshotGaps runs the script of cmds and returns the gaps after its
// third command on, the gap after its second (the sparse file's), and the
// disk the snapshot store takes.
func snapshotGaps(cmds []string, noSnapshots bool) (gaps []time.Duration, sparse time.Duration, used int64, err error) {
	e, err := newEngineWith(map[operations.Kind]handlers.Handler{operations.KindBash: bash.New(bash.Options{})},
		workflows.Config{NoSnapshots: noSnapshots})
	if err != nil {
		return nil, 0, 0, err
	}
	defer e.close()
	if _, err := e.runAll("script", map[string]any{"commands": cmds}, 1); err != nil {
		return nil, 0, 0, err
	}
	ops, err := e.store.Ops(context.Background(), onlyRun(e), "", 100000)
	if err != nil {
		return nil, 0, 0, err
	}
	for i := 1; i < len(ops); i++ {
		prev, op := ops[i-1], ops[i]
		if prev.FinishedAt == nil || op.StartedAt == nil {
			return nil, 0, 0, fmt.Errorf("op %s has no timings", op.ID)
		}
		gap := op.StartedAt.Sub(*prev.FinishedAt)
		switch {
		case i == 2:
			sparse = gap
		case i > 2:
			gaps = append(gaps, gap)
		}
	}
	used, err = diskUsage(filepath.Join(e.dir, "runs", ".snapshots"))
	return gaps, sparse, used, err
}

// diskUsage is the disk (allocated blocks) the files beneath dir take.
func diskUsage(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			total += st.Blocks * 512
		}
		return nil
	})
	return total, err
}
