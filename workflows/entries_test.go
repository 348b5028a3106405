package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/internal/testkit/testrun"
	"github.com/flockrun/flock/internal/testkit/teststore"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/bolt"
	"github.com/flockrun/flock/workflows"
)

// fill is the content of the seeded entry seq: a phase can check what it
// read against it.
type fill struct {
	Seq  uint64 `json:"seq"`
	Text string `json:"text"`
}

func fillOf(seq uint64) fill {
	return fill{Seq: seq, Text: strings.Repeat(string(rune('a'+seq%26)), 100+int(seq%50))}
}

// checkEntry reports whether entry i of st is seeded entry i+1.
func checkEntry(st phases.State, i int) error {
	e := st.Entry(i)
	want := fillOf(uint64(i) + 1)
	var got fill
	if e.Seq != want.Seq || e.Type != "fill" {
		return fmt.Errorf("entry %d: seq %d, type %q; want seq %d, type fill", i, e.Seq, e.Type, want.Seq)
	}
	if err := e.Decode(&got); err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("entry %d holds %+v", i, got)
	}
	return nil
}

// seedRun writes a run in status running, at phase next of workflow wf,
// with n fill entries, directly through the store in big batches.
func seedRun(t testing.TB, st state.Store, dir, id, wf, next string, n int) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	h := state.Run{Schema: state.SchemaVersion, ID: id, Workflow: wf, Status: state.StatusRunning, Next: next,
		WorkDir: filepath.Join(dir, "runs", id), CreatedAt: now, UpdatedAt: now}
	if err := st.Commit(ctx, &state.Commit{RunID: id, Run: &h, Spec: &state.Spec{Settings: []byte("{}")},
		Events: []state.Event{{Time: now, Type: "run", Status: state.EventStatus(state.StatusRunning), Message: "created"}}}); err != nil {
		t.Fatal(err)
	}
	for done := 0; done < n; {
		k := min(5000, n-done)
		c := &state.Commit{RunID: id, Entries: make([]record.Entry, k)}
		for j := range c.Entries {
			seq := uint64(done + j + 1)
			c.Entries[j] = phases.MustEntry("fill", fillOf(seq))
			c.Entries[j].Seq = seq
		}
		done += k
		h.Entries = uint64(done)
		c.Run = &h
		if err := st.Commit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
}

// probe is a workflow over a seeded log: each step checks every entry in
// order (step 1) or `reads` entries at random (later steps) and the entries it
// appended itself, appends 7 entries, and after `steps` steps waits an
// hour (live and idle) if idle is set, or ends.
func probe(seeded, steps, reads int, idle bool) phases.Workflow {
	p := func(in phases.Input) (phases.Output, error) {
		st := in.State
		step := int(in.Run.Step)
		if want := seeded + 7*(step-1); st.Len() != want {
			return phases.Output{}, fmt.Errorf("step %d: Len %d, want %d", step, st.Len(), want)
		}
		if step > steps {
			if idle {
				return phases.Output{Next: "p", Delay: time.Hour}, nil
			}
			return phases.Output{}, nil
		}
		if step == 1 {
			for i := 0; i < seeded; i++ {
				if err := checkEntry(st, i); err != nil {
					return phases.Output{}, err
				}
			}
		} else {
			rng := rand.New(rand.NewPCG(uint64(step), 7))
			for range reads {
				if err := checkEntry(st, rng.IntN(seeded)); err != nil {
					return phases.Output{}, err
				}
			}
		}
		for i := seeded; i < st.Len(); i++ {
			var got struct{ Step, K int }
			if err := st.Entry(i).Decode(&got); err != nil {
				return phases.Output{}, err
			}
			if want := (i - seeded); got.Step != want/7+1 || got.K != want%7 {
				return phases.Output{}, fmt.Errorf("entry %d holds %+v", i, got)
			}
		}
		var out phases.Output
		for k := range 7 {
			out.Append = append(out.Append, phases.MustEntry("mine", map[string]int{"step": step, "k": k}))
		}
		out.Next = "p"
		return out, nil
	}
	return phases.Workflow{Name: "probe", Start: "p", Phases: []phases.PhaseSpec{{Name: "p", Run: p, Next: []string{"p"}}}}
}

// openExecutor starts an executor over st with the given entry cache.
func openExecutor(t testing.TB, st state.Store, dir string, reg *phases.Registry, cache int, hs map[operations.Kind]handlers.Handler, log *testkit.Buffer) *workflows.Executor {
	t.Helper()
	cfg := workflows.Config{Store: st, Registry: reg, RunsDir: filepath.Join(dir, "runs"), EntryCacheBytes: cache, Handlers: handlers.FromMap(hs)}
	if log != nil {
		cfg.Logger = slog.New(slog.NewTextHandler(log, nil))
	}
	return testrun.Executor(t, cfg)
}

func stopExecutor(t testing.TB, ex *workflows.Executor) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ex.Stop(ctx); err != nil {
		t.Errorf("stop executor: %v", err)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestResumeLongHistoryBoundedMemory resumes a run of 20,000 entries
// (about 5 MB of JSON, more decoded) with a 256 KiB entry cache: the run's
// phases read every entry, then random ones, correctly, and the live idle
// run holds far less than its history.
func TestResumeLongHistoryBoundedMemory(t *testing.T) {
	const seeded, budget = 20000, 256 << 10
	dir := t.TempDir()
	st := teststore.OpenAt(t, dir)
	seedRun(t, st, dir, "long", "probe", "p", seeded)
	reg := phases.NewRegistry()
	reg.MustRegister(probe(seeded, 4, 500, true))

	before := heapInUse()
	ex := openExecutor(t, st, dir, reg, budget, nil, nil)
	ctx := context.Background()
	// Each step reads all 20,000 entries through the cache; under -race on
	// a loaded machine five steps took more than DefaultTimeout, so the
	// deadline is generous (the test asserts memory, not speed).
	testkit.CheckFor(t, 2*time.Minute, func() error {
		h, err := st.Run(ctx, "long")
		if err != nil {
			return err
		}
		if h.Status != state.StatusRunning {
			return fmt.Errorf("run ended %s: %s", h.Status, h.Error)
		}
		if h.Step < 5 {
			return fmt.Errorf("run at step %d", h.Step)
		}
		return nil
	})
	h, err := st.Run(ctx, "long")
	if err != nil {
		t.Fatal(err)
	}
	if h.WakeAt == nil || h.Entries != seeded+4*7 {
		t.Fatalf("head: wake %v, %d entries; want a wait and %d entries", h.WakeAt, h.Entries, seeded+4*7)
	}
	if got := ex.Active(); len(got) != 1 {
		t.Fatalf("active runs %v, want the long run live", got)
	}
	grown := int64(heapInUse()) - int64(before)
	stats := ex.EntryCacheStats()
	t.Logf("heap grew %d B with the run live; cache %+v", grown, stats)
	if stats.Bytes > budget {
		t.Errorf("cache holds %d B, over its %d B budget", stats.Bytes, budget)
	}
	if stats.Evictions == 0 {
		t.Errorf("no page evicted reading a log bigger than the cache: %+v", stats)
	}
	// The log decoded is over 20,000 × (96 + ~200) B ≈ 6 MB.
	if grown > 3<<20 {
		t.Errorf("heap grew %d B with a live run of %d entries and a %d B cache", grown, seeded, budget)
	}
}

// TestEntryCacheBudgets runs phases that read their whole log, random
// entries and everything they appended, every step: with a cache that
// keeps nothing (every read goes to the store) and with the default one
// (the entries a commit appends extend the cached last page and fill new
// ones), the results stay right.
func TestEntryCacheBudgets(t *testing.T) {
	const seeded, steps = 300, 12
	for _, budget := range []int{1, 0} {
		t.Run(fmt.Sprintf("budget=%d", budget), func(t *testing.T) {
			dir := t.TempDir()
			st := teststore.OpenAt(t, dir)
			seedRun(t, st, dir, "tiny", "probe", "p", seeded)
			reg := phases.NewRegistry()
			reg.MustRegister(probe(seeded, steps, 50, false))
			ex := openExecutor(t, st, dir, reg, budget, nil, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			h, err := ex.Wait(ctx, "tiny")
			if err != nil {
				t.Fatal(err)
			}
			if h.Status != state.StatusSucceeded || h.Entries != seeded+steps*7 {
				t.Fatalf("run %s (%s) with %d entries; want succeeded with %d", h.Status, h.Error, h.Entries, seeded+steps*7)
			}
			s := ex.EntryCacheStats()
			if budget == 1 && (s.Bytes > 1 || s.Evictions == 0 || s.Misses == 0) {
				t.Fatalf("cache %+v: want nothing kept, evictions and misses", s)
			}
			if budget == 0 && (s.Runs != 0 || s.Bytes != 0 || s.Hits == 0) {
				t.Fatalf("cache %+v: want hits, and the ended run's pages dropped", s)
			}
		})
	}
}

// failingStore fails reads of the first page of entries while failing is
// set (the resume reads the last page, which it leaves alone).
type failingStore struct {
	*bolt.Store
	failing atomic.Bool
	reads   atomic.Int64
}

var errInjected = errors.New("injected read failure")

func (f *failingStore) Entries(ctx context.Context, id string, after uint64, limit int) ([]record.Entry, error) {
	f.reads.Add(1)
	if f.failing.Load() && after == 0 {
		return nil, errInjected
	}
	return f.Store.Entries(ctx, id, after, limit)
}

// readFirst is a workflow whose phase (or, with viaOp, whose op's
// handler) copies the run's first entry into a "saw" entry.
func readFirst(viaOp bool) phases.Workflow {
	p := func(in phases.Input) (phases.Output, error) {
		if in.Run.Step == 2 {
			return phases.Output{}, nil
		}
		if viaOp {
			return phases.Output{Ops: []operations.Request{operations.NewLog("peek")}, Next: "p"}, nil
		}
		e := in.State.Entry(0)
		return phases.Output{Append: []record.Entry{{Type: "saw", Data: e.Data}}, Next: "p"}, nil
	}
	return phases.Workflow{Name: "first", Start: "p", Phases: []phases.PhaseSpec{{Name: "p", Run: p, Next: []string{"p"}}}}
}

// peek is a handler (of log ops) that answers with the run's first entry.
type peek struct{}

func (peek) Handle(_ context.Context, env handlers.Env, req operations.Request) operations.Result {
	e := env.State.Entry(0)
	return operations.Result{Kind: req.Kind, Meta: map[string]string{"first": string(e.Data)}}
}

// TestEntryReadErrorInterruptsRun fails the store's reads of entries while
// a phase (or a handler) reads an entry that is not cached: nothing the
// phase returned is committed (the handler's result is not journaled), the
// run stops being driven with an error in the log naming the entry, and
// once reads work again a restart resumes it and it sees the right entry.
func TestEntryReadErrorInterruptsRun(t *testing.T) {
	for _, viaOp := range []bool{false, true} {
		t.Run(map[bool]string{false: "phase", true: "handler"}[viaOp], func(t *testing.T) {
			dir := t.TempDir()
			bolt := teststore.OpenAt(t, dir)
			st := &failingStore{Store: bolt}
			seedRun(t, st, dir, "r", "first", "p", 1000)
			reg := phases.NewRegistry()
			reg.MustRegister(readFirst(viaOp))
			hs := map[operations.Kind]handlers.Handler{operations.KindLog: peek{}}
			st.failing.Store(true)
			var log testkit.Buffer
			ex := openExecutor(t, st, dir, reg, 1<<20, hs, &log)
			testkit.WaitFor(t, "the run to stop being driven", func() bool { return len(ex.Active()) == 0 })
			ctx := context.Background()
			h, err := st.Run(ctx, "r")
			if err != nil {
				t.Fatal(err)
			}
			wantStep := uint64(0)
			if viaOp {
				wantStep = 1 // the phase asking for the op was committed
			}
			if h.Status != state.StatusRunning || h.Step != wantStep || h.Entries != 1000 {
				t.Fatalf("head: %s at step %d with %d entries; want running at step %d with 1000 (nothing committed)", h.Status, h.Step, h.Entries, wantStep)
			}
			if viaOp {
				ops, err := st.StepOps(ctx, "r", 1)
				if err != nil {
					t.Fatal(err)
				}
				if len(ops) != 1 || ops[0].Status != state.OpPending {
					t.Fatalf("ops of step 1: %+v; want one pending (its result not journaled)", ops)
				}
			}
			if msg := log.String(); !strings.Contains(msg, "read entry 1 of run r") || !strings.Contains(msg, errInjected.Error()) {
				t.Fatalf("log does not name the failed read:\n%s", msg)
			}
			if st.reads.Load() == 0 {
				t.Fatal("no read of entries reached the store")
			}
			stopExecutor(t, ex)

			st.failing.Store(false)
			ex = openExecutor(t, st, dir, reg, 1<<20, hs, nil)
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			h, err = ex.Wait(wctx, "r")
			if err != nil {
				t.Fatal(err)
			}
			if h.Status != state.StatusSucceeded {
				t.Fatalf("run %s: %s", h.Status, h.Error)
			}
			want, _ := json.Marshal(fillOf(1))
			if viaOp {
				ops, err := st.StepOps(ctx, "r", 1)
				if err != nil {
					t.Fatal(err)
				}
				if got := ops[0].Result.Meta["first"]; got != string(want) {
					t.Fatalf("handler saw %v, want %s", got, want)
				}
				return
			}
			es, err := st.Entries(ctx, "r", 1000, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(es) != 1 || es[0].Type != "saw" || string(es[0].Data) != string(want) {
				t.Fatalf("entries after the seeded ones: %+v; want one saw entry holding %s", es, want)
			}
		})
	}
}
