// Package storetest is the contract test suite of state.Store: every Store
// implementation runs it (the bbolt store in state/bolt, the JetStream
// store in state/jetstream), so that the executor may rely on one set of
// behaviours whatever holds its runs.
//
// Its fixtures (Head, Entries, Op, Events at T0) and assertions
// (MustCommit, SameJSON) serve the stores' own tests too.
//
// Run calls open once per subtest, from parallel subtests; open must
// return a new, empty store (a fresh file, a fresh stream prefix) that the
// suite may close. The suite closes each store when its subtest ends;
// Close must therefore be idempotent, as the contract requires.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
)

// Run runs the contract suite against stores made by open.
func Run(t *testing.T, open func(t *testing.T) state.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s state.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"ReadPaging", testReadPaging},
		{"NotFound", testNotFound},
		{"Runs", testRuns},
		{"Counts", testCounts},
		{"UnfinishedFollowsStatus", testUnfinishedFollowsStatus},
		{"Children", testChildren},
		{"CommitRejected", testCommitRejected},
		{"EventSeq", testEventSeq},
		{"FencedByRevision", testFencedByRevision},
		{"FenceIsAtomic", testFenceIsAtomic},
		{"LeaseExcludesOtherOwners", testLeaseExcludesOtherOwners},
		{"LeaseBadArguments", testLeaseBadArguments},
		{"GenerateMessagesStoredOnce", testGenerateMessagesStoredOnce},
		{"GatewayPromptsStoredOnce", testGatewayPromptsStoredOnce},
		{"CompletingAnOp", testCompletingAnOp},
		{"DoneWithoutPending", testDoneWithoutPending},
		{"BigRecords", testBigRecords},
		{"ConcurrentRuns", testConcurrentRuns},
		{"ConcurrentCommitsOneRun", testConcurrentCommitsOneRun},
		{"OddRunIDs", testOddRunIDs},
		{"CanceledContext", testCanceledContext},
		{"Closed", testClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each subtest has a store of its own
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tt.fn(t, s)
		})
	}
}

// Snapshot is everything stored about run id (head, entries, ops, events)
// as JSON, to compare what a reader sees before and after a commit is
// refused, or on two stores.
func Snapshot(tb testing.TB, s state.Reader, id string) string {
	tb.Helper()
	ctx := context.Background()
	h, err := s.Run(ctx, id)
	if err != nil {
		tb.Fatal(err)
	}
	es, err := s.Entries(ctx, id, 0, 1000)
	if err != nil {
		tb.Fatal(err)
	}
	ops, err := s.Ops(ctx, id, "", 1000)
	if err != nil {
		tb.Fatal(err)
	}
	evs, err := s.Events(ctx, id, 0, 1000)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := json.Marshal([]any{h, es, ops, evs})
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// written returns the store's Bytes counter, ok false if it keeps none.
func written(s state.Store) (uint64, bool) {
	sr, ok := s.(state.StatsReporter)
	if !ok {
		return 0, false
	}
	return sr.Stats().Bytes, true
}

func testRoundTrip(t *testing.T, s state.Store) {
	ctx := context.Background()
	head := Head("r1", "wf", "", state.StatusRunning)
	spec := &state.Spec{Task: "do it", Settings: json.RawMessage(`{"model":"m"}`)}
	entries := Entries(1, 3)
	ops := []state.Op{Op("r1", 1, 0, state.OpPending), Op("r1", 1, 1, state.OpDone), Op("r1", 2, 0, state.OpPending)}
	ops[2].ID, ops[2].RunID = "", "" // filled in by the store
	events := Events(2)
	MustCommit(t, s, &state.Commit{RunID: "r1", Run: head, Spec: spec, Entries: entries, Ops: ops, Events: events})

	gotHead, err := s.Run(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	wantHead := *head
	wantHead.Schema = state.SchemaVersion
	SameJSON(t, "head", gotHead, wantHead)
	if head.Schema != 0 {
		t.Errorf("Commit modified the caller's head: schema %d", head.Schema)
	}
	if head.Revision != 1 {
		t.Errorf("revision written back %d, want 1", head.Revision)
	}

	gotSpec, err := s.Spec(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	SameJSON(t, "spec", gotSpec, spec)

	gotEntries, err := s.Entries(ctx, "r1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	SameJSON(t, "entries", gotEntries, entries)

	wantOps := append([]state.Op(nil), ops...)
	wantOps[2].ID, wantOps[2].RunID = "r1/2/0", "r1"
	gotOps, err := s.Ops(ctx, "r1", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	SameJSON(t, "ops", gotOps, wantOps)

	gotStep, err := s.StepOps(ctx, "r1", 1)
	if err != nil {
		t.Fatal(err)
	}
	SameJSON(t, "step ops", gotStep, wantOps[:2])

	if events[0].Seq != 1 || events[1].Seq != 2 {
		t.Fatalf("event seqs not written back: %d, %d", events[0].Seq, events[1].Seq)
	}
	gotEvents, err := s.Events(ctx, "r1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	SameJSON(t, "events", gotEvents, events)

	// Replacing an op by ID (pending -> done) keeps one record.
	MustCommit(t, s, &state.Commit{RunID: "r1", Ops: []state.Op{Op("r1", 1, 0, state.OpDone)}})
	gotStep, err = s.StepOps(ctx, "r1", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(gotStep) != 2 || gotStep[0].Status != state.OpDone {
		t.Fatalf("after replace: %+v", gotStep)
	}
}

func testReadPaging(t *testing.T, s state.Store) {
	ctx := context.Background()
	var ops []state.Op
	for step := uint64(1); step <= 3; step++ {
		for i := range 3 {
			ops = append(ops, Op("r", step, i, state.OpPending))
		}
	}
	MustCommit(t, s, &state.Commit{RunID: "r", Run: Head("r", "wf", "", state.StatusRunning),
		Entries: Entries(1, 4), Ops: ops[:3], Events: Events(4)})
	// Later commits continue the logs, so that reads span several.
	MustCommit(t, s, &state.Commit{RunID: "r", Entries: Entries(5, 6), Ops: ops[3:], Events: Events(6)})
	// A neighbour whose id extends "r" must not leak into r's reads.
	MustCommit(t, s, &state.Commit{RunID: "r2", Entries: Entries(1, 2), Ops: []state.Op{Op("r2", 0, 0, state.OpPending)}, Events: Events(1)})

	tests := []struct {
		name  string
		read  func() (any, error)
		count int
		first string
	}{
		{"entries all", func() (any, error) { return s.Entries(ctx, "r", 0, 0) }, 10, "1"},
		{"entries after 7", func() (any, error) { return s.Entries(ctx, "r", 7, 0) }, 3, "8"},
		{"entries limit", func() (any, error) { return s.Entries(ctx, "r", 2, 4) }, 4, "3"},
		{"entries past end", func() (any, error) { return s.Entries(ctx, "r", 10, 0) }, 0, ""},
		{"entries max after", func() (any, error) { return s.Entries(ctx, "r", ^uint64(0), 0) }, 0, ""},
		{"entries unknown run", func() (any, error) { return s.Entries(ctx, "nope", 0, 0) }, 0, ""},
		{"events after 5", func() (any, error) { return s.Events(ctx, "r", 5, 2) }, 2, "6"},
		{"events after 3", func() (any, error) { return s.Events(ctx, "r", 3, 0) }, 7, "4"},
		{"ops all", func() (any, error) { return s.Ops(ctx, "r", "", 0) }, 9, "r/1/0"},
		{"ops after", func() (any, error) { return s.Ops(ctx, "r", "r/1/2", 4) }, 4, "r/2/0"},
		{"ops after missing id", func() (any, error) { return s.Ops(ctx, "r", "r/2/7", 0) }, 3, "r/3/0"},
		{"ops after last", func() (any, error) { return s.Ops(ctx, "r", "r/3/2", 0) }, 0, ""},
		{"step ops", func() (any, error) { return s.StepOps(ctx, "r", 2) }, 3, "r/2/0"},
		{"step ops latest", func() (any, error) { return s.StepOps(ctx, "r", 3) }, 3, "r/3/0"},
		{"step ops none", func() (any, error) { return s.StepOps(ctx, "r", 9) }, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.read()
			if err != nil {
				t.Fatal(err)
			}
			var n int
			var first string
			switch v := got.(type) {
			case []record.Entry:
				n = len(v)
				if n > 0 {
					first = fmt.Sprint(v[0].Seq)
				}
			case []state.Event:
				n = len(v)
				if n > 0 {
					first = fmt.Sprint(v[0].Seq)
				}
			case []state.Op:
				n = len(v)
				if n > 0 {
					first = v[0].ID
				}
			}
			if n != tt.count || first != tt.first {
				t.Fatalf("got %d records starting at %q, want %d starting at %q", n, first, tt.count, tt.first)
			}
		})
	}

	t.Run("ops cursor of another run", func(t *testing.T) {
		if _, err := s.Ops(ctx, "r", "r2/0/0", 0); err == nil {
			t.Fatal("want error")
		}
	})
	t.Run("malformed ops cursor", func(t *testing.T) {
		if _, err := s.Ops(ctx, "r", "garbage", 0); err == nil {
			t.Fatal("want error")
		}
	})
}

func testNotFound(t *testing.T, s state.Store) {
	ctx := context.Background()
	MustCommit(t, s, &state.Commit{RunID: "headless", Entries: Entries(1, 1)})
	if _, err := s.Run(ctx, "nope"); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("Run: %v, want ErrNotFound", err)
	}
	if _, err := s.Run(ctx, "headless"); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("Run of a run without head: %v, want ErrNotFound", err)
	}
	if _, err := s.Spec(ctx, "headless"); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("Spec: %v, want ErrNotFound", err)
	}
	if es, err := s.Entries(ctx, "headless", 0, 0); err != nil || len(es) != 1 {
		t.Errorf("Entries of a run without head: %d, %v", len(es), err)
	}
}

func testRuns(t *testing.T, s state.Store) {
	ctx := context.Background()
	if got, next, err := s.Runs(ctx, state.RunFilter{}); err != nil || len(got) != 0 || next != "" {
		t.Fatalf("runs of an empty store: %d next %q %v", len(got), next, err)
	}
	if got, err := s.Unfinished(ctx); err != nil || len(got) != 0 {
		t.Fatalf("unfinished runs of an empty store: %d %v", len(got), err)
	}
	// Ids sort in creation order, as the executor generates them.
	type run struct {
		id, wf, parent string
		status         state.Status
	}
	runs := []run{
		{"r01", "a", "", state.StatusSucceeded},
		{"r02", "a", "", state.StatusRunning},
		{"r03", "b", "r02", state.StatusRunning},
		{"r04", "b", "r02", state.StatusFailed},
		{"r05", "a", "", state.StatusPaused},
		{"r06", "b", "r05", state.StatusRunning},
		{"r07", "a", "r02", state.StatusSucceeded},
	}
	for _, r := range runs {
		MustCommit(t, s, &state.Commit{RunID: r.id, Run: Head(r.id, r.wf, r.parent, r.status)})
	}
	// A run with logs but no head is not listed.
	MustCommit(t, s, &state.Commit{RunID: "r08", Events: Events(1)})
	tests := []struct {
		name     string
		filter   state.RunFilter
		want     []string
		wantNext string
	}{
		{"all newest first", state.RunFilter{}, []string{"r07", "r06", "r05", "r04", "r03", "r02", "r01"}, ""},
		{"page 1", state.RunFilter{Limit: 3}, []string{"r07", "r06", "r05"}, "r05"},
		{"page 2", state.RunFilter{Limit: 3, After: "r05"}, []string{"r04", "r03", "r02"}, "r02"},
		{"page 3", state.RunFilter{Limit: 3, After: "r02"}, []string{"r01"}, ""},
		{"after past end", state.RunFilter{After: "r99"}, []string{"r07", "r06", "r05", "r04", "r03", "r02", "r01"}, ""},
		{"after first", state.RunFilter{After: "r01"}, nil, ""},
		{"status running", state.RunFilter{Status: state.StatusRunning}, []string{"r06", "r03", "r02"}, ""},
		{"status running paged", state.RunFilter{Status: state.StatusRunning, After: "r06", Limit: 1}, []string{"r03"}, "r03"},
		{"status paused", state.RunFilter{Status: state.StatusPaused}, []string{"r05"}, ""},
		{"status succeeded", state.RunFilter{Status: state.StatusSucceeded}, []string{"r07", "r01"}, ""},
		{"workflow", state.RunFilter{Workflow: "b"}, []string{"r06", "r04", "r03"}, ""},
		{"parent", state.RunFilter{ParentID: "r02"}, []string{"r07", "r04", "r03"}, ""},
		{"parent paged", state.RunFilter{ParentID: "r02", After: "r07", Limit: 1}, []string{"r04"}, "r04"},
		{"parent and workflow", state.RunFilter{ParentID: "r02", Workflow: "b"}, []string{"r04", "r03"}, ""},
		{"parent and status", state.RunFilter{ParentID: "r02", Status: state.StatusRunning}, []string{"r03"}, ""},
		{"unknown parent", state.RunFilter{ParentID: "r0"}, nil, ""},
		{"top level", state.RunFilter{TopLevel: true}, []string{"r05", "r02", "r01"}, ""},
		{"top level paged", state.RunFilter{TopLevel: true, Limit: 2}, []string{"r05", "r02"}, "r02"},
		{"top level running", state.RunFilter{TopLevel: true, Status: state.StatusRunning}, []string{"r02"}, ""},
		{"no match", state.RunFilter{Workflow: "zzz"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, next, err := s.Runs(ctx, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range got {
				ids = append(ids, r.ID)
			}
			if fmt.Sprint(ids) != fmt.Sprint(tt.want) || next != tt.wantNext {
				t.Fatalf("got %v next %q, want %v next %q", ids, next, tt.want, tt.wantNext)
			}
		})
	}

	t.Run("limit capped", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for w := range 8 {
			wg.Go(func() {
				for i := w; i < 1100; i += 8 {
					id := fmt.Sprintf("x%04d", i)
					if err := s.Commit(ctx, &state.Commit{RunID: id, Run: Head(id, "c", "", state.StatusSucceeded)}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		got, next, err := s.Runs(ctx, state.RunFilter{Workflow: "c", Limit: 5000})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1000 || next != "x0100" {
			t.Fatalf("got %d runs next %q, want 1000 next x0100", len(got), next)
		}
		got, _, err = s.Runs(ctx, state.RunFilter{Workflow: "c"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 50 {
			t.Fatalf("default limit: got %d, want 50", len(got))
		}
	})
}

// testCounts: every flock store counts its runs by status (GET
// /stats/runs), including a run whose result and vars hold a "status" key
// of their own and a run whose status changed; a run with logs but no
// head is not counted.
func testCounts(t *testing.T, s state.Store) {
	counter, ok := s.(state.RunCounter)
	if !ok {
		t.Fatalf("%T does not count runs (state.RunCounter): GET /stats/runs would answer 501", s)
	}
	ctx := context.Background()
	if c, err := counter.CountRuns(ctx); err != nil || c != (state.RunCounts{}) {
		t.Fatalf("empty store: %+v, %v", c, err)
	}
	statuses := []state.Status{state.StatusRunning, state.StatusRunning, state.StatusPaused, state.StatusSucceeded,
		state.StatusFailed, state.StatusFailed, state.StatusCancelled}
	for i, st := range statuses {
		h := Head(fmt.Sprintf("run%02d", i), "wf", "", st)
		if st == state.StatusSucceeded {
			h.Result = json.RawMessage(`{"status":"failed"}`)
			h.Vars = map[string]json.RawMessage{"v": json.RawMessage(`{"status":"running"}`)}
		}
		MustCommit(t, s, &state.Commit{RunID: h.ID, Run: h})
	}
	MustCommit(t, s, &state.Commit{RunID: "run99", Events: Events(1)})
	// run00 ends: running -> succeeded.
	h := Head("run00", "wf", "", state.StatusSucceeded)
	MustCommit(t, s, &state.Commit{RunID: h.ID, Run: h, ExpectRevision: 1})
	got, err := counter.CountRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := state.RunCounts{Total: 7, Running: 1, Paused: 1, Succeeded: 2, Failed: 2, Cancelled: 1}
	if got != want {
		t.Fatalf("CountRuns = %+v, want %+v", got, want)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := counter.CountRuns(cctx); err == nil {
		t.Fatal("CountRuns with a cancelled context succeeded")
	}
}

func testUnfinishedFollowsStatus(t *testing.T, s state.Store) {
	ctx := context.Background()
	unfinished := func() string {
		t.Helper()
		runs, err := s.Unfinished(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.ID+":"+string(r.Status))
		}
		return fmt.Sprint(ids)
	}
	steps := []struct {
		name   string
		id     string
		status state.Status
		want   string
	}{
		{"a starts", "a", state.StatusRunning, "[a:running]"},
		{"b starts", "b", state.StatusRunning, "[a:running b:running]"},
		{"a pauses", "a", state.StatusPaused, "[a:paused b:running]"},
		{"a resumes", "a", state.StatusRunning, "[a:running b:running]"},
		{"b fails", "b", state.StatusFailed, "[a:running]"},
		{"c created finished", "c", state.StatusSucceeded, "[a:running]"},
		{"a cancelled", "a", state.StatusCancelled, "[]"},
		{"a cancelled again", "a", state.StatusCancelled, "[]"},
	}
	for _, st := range steps {
		MustCommit(t, s, &state.Commit{RunID: st.id, Run: Head(st.id, "wf", "", st.status)})
		if got := unfinished(); got != st.want {
			t.Fatalf("%s: unfinished %s, want %s", st.name, got, st.want)
		}
	}
}

func testChildren(t *testing.T, s state.Store) {
	ctx := context.Background()
	MustCommit(t, s, &state.Commit{RunID: "p", Run: Head("p", "wf", "", state.StatusRunning)})
	MustCommit(t, s, &state.Commit{RunID: "p/x", Run: Head("p/x", "wf", "", state.StatusRunning)}) // not a child
	for _, id := range []string{"c2", "c1", "c3"} {
		MustCommit(t, s, &state.Commit{RunID: id, Run: Head(id, "wf", "p", state.StatusRunning)})
		MustCommit(t, s, &state.Commit{RunID: id, Run: Head(id, "wf", "p", state.StatusSucceeded)}) // rewrite: no duplicate
	}
	MustCommit(t, s, &state.Commit{RunID: "g", Run: Head("g", "wf", "c1", state.StatusRunning)})
	tests := []struct {
		name, id string
		want     []string
	}{
		{"parent", "p", []string{"c1", "c2", "c3"}},
		{"grandchild", "c1", []string{"g"}},
		{"leaf", "g", nil},
		{"unknown", "zz", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Children(ctx, tt.id)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			if cc, ok := s.(state.ChildCounter); ok {
				if n, err := cc.CountChildren(ctx, tt.id); err != nil || n != len(tt.want) {
					t.Fatalf("CountChildren = %d, %v; want %d", n, err, len(tt.want))
				}
			}
		})
	}
}

func testCommitRejected(t *testing.T, s state.Store) {
	ctx := context.Background()
	MustCommit(t, s, &state.Commit{RunID: "r", Run: Head("r", "wf", "", state.StatusRunning),
		Spec: &state.Spec{Task: "t"}, Entries: Entries(1, 3), Events: Events(1)})

	tests := []struct {
		name     string
		commit   *state.Commit
		conflict bool
	}{
		{"retried entries", &state.Commit{RunID: "r", Entries: Entries(1, 3)}, true},
		{"overlapping entries", &state.Commit{RunID: "r", Entries: Entries(3, 2)}, true},
		{"gap", &state.Commit{RunID: "r", Entries: Entries(5, 1)}, true},
		{"first entry of new run not 1", &state.Commit{RunID: "new", Entries: Entries(2, 1)}, true},
		{"spec twice", &state.Commit{RunID: "r", Spec: &state.Spec{Task: "again"}}, true},
		{"entry seq zero", &state.Commit{RunID: "r", Entries: Entries(0, 1)}, false},
		{"entries not contiguous", &state.Commit{RunID: "r", Entries: append(Entries(4, 1), Entries(6, 1)...)}, false},
		{"empty run id", &state.Commit{}, false},
		{"nul in run id", &state.Commit{RunID: "a\x00b"}, false},
		{"head of another run", &state.Commit{RunID: "r", Run: Head("q", "wf", "", state.StatusRunning)}, false},
		{"invalid status", &state.Commit{RunID: "r", Run: Head("r", "wf", "", "")}, false},
		{"op of another run", &state.Commit{RunID: "r", Ops: []state.Op{Op("q", 1, 0, state.OpPending)}}, false},
		{"op id mismatch", &state.Commit{RunID: "r", Ops: []state.Op{{ID: "r/1/1", Step: 1, Index: 0}}}, false},
		{"negative op index", &state.Commit{RunID: "r", Ops: []state.Op{{Step: 1, Index: -1}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Every rejected commit also carries a head change and an
			// event, which must not be written.
			if tt.commit.Run == nil && tt.commit.RunID == "r" {
				tt.commit.Run = Head("r", "wf", "", state.StatusFailed)
			}
			tt.commit.Events = Events(1)
			err := s.Commit(ctx, tt.commit)
			if err == nil {
				t.Fatal("commit accepted")
			}
			if got := errors.Is(err, state.ErrConflict); got != tt.conflict {
				t.Fatalf("errors.Is(%v, ErrConflict) = %v, want %v", err, got, tt.conflict)
			}
			if tt.commit.Events[0].Seq != 0 {
				t.Errorf("event seq written back on failure: %d", tt.commit.Events[0].Seq)
			}
		})
	}

	head, err := s.Run(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if head.Status != state.StatusRunning {
		t.Errorf("rejected commit changed the head: %s", head.Status)
	}
	entries, _ := s.Entries(ctx, "r", 0, 0)
	events, _ := s.Events(ctx, "r", 0, 0)
	if len(entries) != 3 || len(events) != 1 {
		t.Errorf("rejected commits wrote: %d entries, %d events", len(entries), len(events))
	}
	// The log continues normally after conflicts.
	MustCommit(t, s, &state.Commit{RunID: "r", Entries: Entries(4, 2)})
	if entries, _ := s.Entries(ctx, "r", 0, 0); len(entries) != 5 {
		t.Errorf("after conflicts: %d entries, want 5", len(entries))
	}
}

func testEventSeq(t *testing.T, s state.Store) {
	ctx := context.Background()
	for i, n := range []int{1, 3, 0, 2} {
		MustCommit(t, s, &state.Commit{RunID: "a", Events: Events(n)})
		MustCommit(t, s, &state.Commit{RunID: "b", Events: Events(i + 1)}) // independent numbering
	}
	evs := Events(2)
	MustCommit(t, s, &state.Commit{RunID: "a", Events: evs})
	if evs[0].Seq != 7 || evs[1].Seq != 8 {
		t.Fatalf("assigned %d, %d; want 7, 8", evs[0].Seq, evs[1].Seq)
	}
	for _, tc := range []struct {
		name string
		run  string
		want int
	}{{"run a", "a", 8}, {"run b", "b", 10}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Events(ctx, tc.run, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.want {
				t.Fatalf("got %d events, want %d", len(got), tc.want)
			}
			for i, e := range got {
				if e.Seq != uint64(i+1) {
					t.Fatalf("event %d has seq %d", i, e.Seq)
				}
			}
		})
	}
	// Reading the tail after many commits returns exactly the tail.
	for range 100 {
		MustCommit(t, s, &state.Commit{RunID: "a", Events: Events(1)})
	}
	got, err := s.Events(ctx, "a", 105, 0)
	if err != nil || len(got) != 3 || got[0].Seq != 106 {
		t.Fatalf("tail after 105: %d events, %v", len(got), err)
	}
}

// testFencedByRevision: each head write bumps the revision (written back
// into the commit's head); a commit expecting an older revision fails with
// ErrFenced and writes nothing, whether or not it writes the head.
func testFencedByRevision(t *testing.T, s state.Store) {
	ctx := context.Background()
	h := &state.Run{ID: "r1", Workflow: "w", Status: state.StatusRunning}
	MustCommit(t, s, &state.Commit{RunID: "r1", Run: h, Spec: &state.Spec{Task: "t"}})
	if h.Revision != 1 {
		t.Fatalf("revision after create = %d, want 1", h.Revision)
	}
	h2 := *h
	h2.Step, h2.Entries = 1, 1
	MustCommit(t, s, &state.Commit{RunID: "r1", ExpectRevision: 1, Run: &h2,
		Entries: []record.Entry{{Seq: 1, Type: "log", Data: json.RawMessage(`1`)}}})
	if h2.Revision != 2 {
		t.Fatalf("revision after a fenced commit = %d, want 2", h2.Revision)
	}
	// A commit without the head checks the revision and does not bump it.
	op := state.Op{ID: state.OpID("r1", 1, 0), RunID: "r1", Step: 1, Status: state.OpPending, Request: operations.NewBash("true", 0)}
	MustCommit(t, s, &state.Commit{RunID: "r1", ExpectRevision: 2, Ops: []state.Op{op}})
	if got, _ := s.Run(ctx, "r1"); got.Revision != 2 {
		t.Fatalf("stored revision = %d, want 2", got.Revision)
	}

	before := Snapshot(t, s, "r1")
	var stats state.Stats
	sr, hasStats := s.(state.StatsReporter)
	if hasStats {
		stats = sr.Stats()
	}
	stale := h2
	stale.Step, stale.Entries, stale.Phase = 2, 2, "zombie"
	done := op
	done.Status, done.Result = state.OpDone, &operations.Result{Kind: operations.KindBash, Data: &operations.BashResult{Stdout: "zombie"}}
	for _, c := range []*state.Commit{
		{RunID: "r1", ExpectRevision: 1, Run: &stale, Entries: []record.Entry{{Seq: 2, Type: "log", Data: json.RawMessage(`2`)}},
			Events: []state.Event{{Type: "phase", Message: "zombie"}}},
		{RunID: "r1", ExpectRevision: 1, Ops: []state.Op{done}, Events: []state.Event{{Type: "op", Message: "zombie"}}},
		{RunID: "r1", ExpectRevision: 3, Run: &stale},
	} {
		err := s.Commit(ctx, c)
		if !errors.Is(err, state.ErrFenced) {
			t.Fatalf("commit expecting revision %d: %v, want ErrFenced", c.ExpectRevision, err)
		}
		if c.Events != nil && c.Events[0].Seq != 0 || stale.Revision != 2 {
			t.Fatal("a refused commit was given numbers")
		}
	}
	if after := Snapshot(t, s, "r1"); after != before {
		t.Fatalf("refused commits wrote:\nbefore %s\nafter  %s", before, after)
	}
	if hasStats {
		if st := sr.Stats(); st.Commits != stats.Commits || st.Bytes != stats.Bytes || st.Rejected != stats.Rejected+3 {
			t.Fatalf("stats %+v after refused commits, before %+v", st, stats)
		}
	}
	if err := s.Commit(ctx, &state.Commit{RunID: "nosuch", ExpectRevision: 1, Run: &state.Run{ID: "nosuch", Status: state.StatusRunning}}); !errors.Is(err, state.ErrFenced) {
		t.Fatalf("commit expecting a revision of a run that does not exist: %v, want ErrFenced", err)
	}
}

// testFenceIsAtomic: of 20 concurrent commits expecting the same revision,
// each appending to the run's logs, exactly one applies, and the logs hold
// exactly its records.
func testFenceIsAtomic(t *testing.T, s state.Store) {
	ctx := context.Background()
	MustCommit(t, s, &state.Commit{RunID: "r1", Run: &state.Run{ID: "r1", Status: state.StatusRunning}, Events: Events(1)})
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			step := uint64(i + 1)
			ev := Events(1)
			ev[0].Step = step
			errs[i] = s.Commit(ctx, &state.Commit{RunID: "r1", ExpectRevision: 1,
				Run:     &state.Run{ID: "r1", Status: state.StatusRunning, Step: step, Entries: 1},
				Entries: []record.Entry{{Seq: 1, Type: "log", Step: step, Data: json.RawMessage(`1`)}},
				Ops:     []state.Op{Op("r1", step, 0, state.OpPending)},
				Events:  ev})
		})
	}
	wg.Wait()
	won, winner := 0, -1
	for i, err := range errs {
		switch {
		case err == nil:
			won++
			winner = i
		case !errors.Is(err, state.ErrFenced):
			t.Fatalf("commit: %v", err)
		}
	}
	h, err := s.Run(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if won != 1 || h.Revision != 2 || h.Step != uint64(winner+1) {
		t.Fatalf("%d commits applied, revision %d step %d; want 1 and 2", won, h.Revision, h.Step)
	}
	es, _ := s.Entries(ctx, "r1", 0, 0)
	ops, _ := s.Ops(ctx, "r1", "", 0)
	evs, _ := s.Events(ctx, "r1", 0, 0)
	if len(es) != 1 || es[0].Step != h.Step || len(ops) != 1 || ops[0].Step != h.Step || len(evs) != 2 || evs[1].Step != h.Step {
		t.Fatalf("logs after the race: entries %+v ops %d events %d", es, len(ops), len(evs))
	}
	// The run goes on from the winner's state.
	MustCommit(t, s, &state.Commit{RunID: "r1", ExpectRevision: 2, Run: &state.Run{ID: "r1", Status: state.StatusSucceeded, Entries: 2},
		Entries: Entries(2, 1), Events: Events(1)})
	if es, _ := s.Entries(ctx, "r1", 0, 0); len(es) != 2 || es[0].Step != h.Step {
		t.Fatalf("entries after the race and one more commit: %+v", es)
	}
}

// testLeaseExcludesOtherOwners: a second owner cannot claim a leased run
// until the lease is released or expires, nor renew a lease it does not
// hold; the holder renews by claiming again.
func testLeaseExcludesOtherOwners(t *testing.T, s state.Store) {
	ctx := context.Background()
	if _, err := s.Claim(ctx, "r1", "node-a", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, "r1", "node-b", time.Minute); !errors.Is(err, state.ErrLeaseHeld) {
		t.Fatalf("claim by node-b: %v, want ErrLeaseHeld", err)
	}
	if _, err := s.Renew(ctx, "r1", "node-b", time.Minute); !errors.Is(err, state.ErrLeaseLost) {
		t.Fatalf("renew by node-b: %v, want ErrLeaseLost", err)
	}
	if _, err := s.Claim(ctx, "r1", "node-a", time.Minute); err != nil {
		t.Fatalf("claim again by the holder: %v", err)
	}
	if _, err := s.Renew(ctx, "r1", "node-a", time.Minute); err != nil {
		t.Fatalf("renew by the holder: %v", err)
	}
	if err := s.Release(ctx, "r1", "node-b"); err != nil { // not the holder: a no-op
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, "r1", "node-b", time.Minute); !errors.Is(err, state.ErrLeaseHeld) {
		t.Fatalf("claim after a release by a non-holder: %v, want ErrLeaseHeld", err)
	}
	if err := s.Release(ctx, "r1", "node-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Renew(ctx, "r1", "node-a", time.Minute); !errors.Is(err, state.ErrLeaseLost) {
		t.Fatalf("renew after release: %v, want ErrLeaseLost", err)
	}
	l, err := s.Claim(ctx, "r1", "node-b", 50*time.Millisecond)
	if err != nil || l.Owner != "node-b" || l.RunID != "r1" {
		t.Fatalf("claim after release: %+v %v", l, err)
	}
	if _, err := s.Renew(ctx, "r1", "node-a", time.Minute); !errors.Is(err, state.ErrLeaseLost) {
		t.Fatalf("renew by the former holder: %v, want ErrLeaseLost", err)
	}
	// node-b's short lease expires; node-a may claim then, not before.
	if _, err := s.Claim(ctx, "r1", "node-a", time.Minute); !errors.Is(err, state.ErrLeaseHeld) && time.Now().Before(l.Expires) {
		t.Fatalf("claim before expiry: %v, want ErrLeaseHeld", err)
	}
	testkit.WaitFor(t, "node-b's lease to expire", func() bool {
		_, err := s.Claim(ctx, "r1", "node-a", time.Minute)
		return err == nil
	})
	if _, err := s.Renew(ctx, "r1", "node-b", time.Minute); !errors.Is(err, state.ErrLeaseLost) {
		t.Fatalf("renew of an expired lease another owner claimed: %v, want ErrLeaseLost", err)
	}
	// Of many owners claiming a free run at once, one wins.
	const n = 10
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = s.Claim(ctx, "r2", fmt.Sprint("node-", i), time.Minute) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, state.ErrLeaseHeld):
			t.Fatalf("racing claim: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d racing claims won, want 1", won)
	}
}

func testLeaseBadArguments(t *testing.T, s state.Store) {
	ctx := context.Background()
	tests := []struct {
		name, id, owner string
		ttl             time.Duration
	}{
		{"empty run id", "", "a", time.Second},
		{"empty owner", "r", "", time.Second},
		{"zero ttl", "r", "a", 0},
		{"negative ttl", "r", "a", -time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.Claim(ctx, tt.id, tt.owner, tt.ttl); err == nil {
				t.Fatal("claim succeeded")
			}
			if _, err := s.Renew(ctx, tt.id, tt.owner, tt.ttl); err == nil {
				t.Fatal("renew succeeded")
			}
		})
	}
}

// testGenerateMessagesStoredOnce journals generate ops whose prompts share
// a long history, as an agent's do step after step: the shared messages are
// written once (when the store counts bytes), and every op reads back
// whole, chunks joined.
func testGenerateMessagesStoredOnce(t *testing.T, s state.Store) {
	ctx := context.Background()
	history := []operations.Message{
		{Role: operations.RoleSystem, Content: strings.Repeat("You are a careful agent. ", 200)},
		{Role: operations.RoleUser, Content: strings.Repeat("Task: count the words. ", 100)},
	}
	var writes []uint64
	for step := uint64(1); step <= 6; step++ {
		history = append(history, operations.Message{Role: operations.RoleAssistant, Content: strings.Repeat("step ", 60+int(step))},
			operations.Message{Role: operations.RoleTool, Content: "ok", ToolCallID: "c"})
		req := operations.NewGenerate(operations.GenerateRequest{Model: "m", Messages: append([]operations.Message(nil), history...)})
		op := state.Op{ID: state.OpID("r1", step, 0), RunID: "r1", Step: step, Status: state.OpPending, Request: req, CreatedAt: time.Unix(0, 0).UTC()}
		before, _ := written(s)
		MustCommit(t, s, &state.Commit{RunID: "r1", Ops: []state.Op{op}})
		done := op
		done.Status = state.OpDone
		done.Result = &operations.Result{Kind: operations.KindGenerate, Data: &operations.GenerateResult{Outputs: []operations.Output{{Content: "fine"}}}}
		MustCommit(t, s, &state.Commit{RunID: "r1", Ops: []state.Op{done}})
		after, _ := written(s)
		writes = append(writes, after-before)

		got, err := s.StepOps(ctx, "r1", step)
		if err != nil || len(got) != 1 {
			t.Fatalf("step %d: %v %d", step, err, len(got))
		}
		SameJSON(t, "op read back", got[0], done)
		if operations.Generate.Params(req).Messages[0].Content == "" {
			t.Fatal("the caller's request was modified")
		}
	}
	if _, ok := written(s); ok {
		// The first step stores the system and task prompts; later steps
		// add their new messages plus the open tail chunk they join.
		if writes[0] < 7000 {
			t.Fatalf("first step wrote %d bytes, expected the prompts", writes[0])
		}
		for i, n := range writes[1:] {
			if n > 5000 {
				t.Fatalf("step %d wrote %d bytes for a prompt that only grew by one message", i+2, n)
			}
		}
	}
	all, err := s.Ops(ctx, "r1", "", 0)
	if err != nil || len(all) != 6 || len(operations.Generate.Params(all[5].Request).Messages) != 14 {
		t.Fatalf("Ops: %v %d", err, len(all))
	}
}

// testGatewayPromptsStoredOnce journals gateway_wait ops whose results
// hold the calls an external agent made through the gateway, each call's
// prompt the conversation so far: the history they share is written once
// (when the store counts bytes), as a generate op's is, and every result
// reads back whole.
func testGatewayPromptsStoredOnce(t *testing.T, s state.Store) {
	ctx := context.Background()
	history := []operations.Message{
		{Role: operations.RoleSystem, Content: strings.Repeat("You are a careful agent. ", 200)},
		{Role: operations.RoleUser, Content: strings.Repeat("Task: count the words. ", 100)},
	}
	var writes, prompts []uint64
	var want []state.Op
	for step := uint64(1); step <= 12; step++ {
		history = append(history, operations.Message{Role: operations.RoleAssistant, Content: strings.Repeat("step ", 60+int(step))},
			operations.Message{Role: operations.RoleTool, Content: fmt.Sprintf("ok %d", step), ToolCallID: fmt.Sprintf("c%d", step)})
		op := state.Op{ID: state.OpID("gw", step, 0), RunID: "gw", Step: step, Status: state.OpPending,
			Request: operations.NewGatewayWait(step - 1), CreatedAt: time.Unix(0, 0).UTC()}
		before, _ := written(s)
		MustCommit(t, s, &state.Commit{RunID: "gw", Ops: []state.Op{op}})
		done := op
		done.Status = state.OpDone
		calls := []operations.GatewayCall{{
			ID:      fmt.Sprintf("call-%d", step),
			Request: operations.GenerateRequest{Model: "m", Messages: slices.Clone(history)},
			Result:  &operations.GenerateResult{Outputs: []operations.Output{{Content: "fine"}}},
		}}
		if step%3 == 0 { // a short call next to it: stored inline
			calls = append(calls, operations.GatewayCall{ID: "short", Request: operations.GenerateRequest{Model: "m",
				Messages: []operations.Message{{Role: operations.RoleUser, Content: "hi"}}}, Error: "rate limited", Code: operations.CodeRateLimited})
		}
		done.Result = &operations.Result{Kind: operations.KindGatewayWait, Data: &operations.GatewayWaitResult{Calls: calls}}
		MustCommit(t, s, &state.Commit{RunID: "gw", Ops: []state.Op{done}})
		after, _ := written(s)
		writes = append(writes, after-before)
		want = append(want, done)
		prompt, _ := json.Marshal(history)
		prompts = append(prompts, uint64(len(prompt)))

		got, err := s.StepOps(ctx, "gw", step)
		if err != nil || len(got) != 1 {
			t.Fatalf("step %d: %v %d", step, err, len(got))
		}
		SameJSON(t, "op read back", got[0], done)
		if len(operations.GatewayWait.Result(*done.Result).Calls[0].Request.Messages) != len(history) {
			t.Fatal("the caller's result was modified")
		}
	}
	if _, ok := written(s); ok {
		// The first step stores the prompt; each later one its new
		// messages and the open tail chunk they join (which grows until
		// a content-defined boundary): well under the whole prompts an
		// inline result would write (about 1.05 of them).
		if writes[0] < 7000 {
			t.Fatalf("first step wrote %d bytes, expected the prompts", writes[0])
		}
		var wrote, inline uint64
		for i := 1; i < len(writes); i++ {
			wrote, inline = wrote+writes[i], inline+prompts[i]
		}
		if wrote > inline/2 {
			t.Fatalf("steps 2–%d wrote %d bytes (%v), for prompts of %d bytes in all that each grew by two messages", len(writes), wrote, writes[1:], inline)
		}
	}
	all, err := s.Ops(ctx, "gw", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	SameJSON(t, "Ops", all, want)
}

// testCompletingAnOp journals a large request pending, then done:
// completion writes the result, not the request again; journaling it
// pending again clears the result.
func testCompletingAnOp(t *testing.T, s state.Store) {
	ctx := context.Background()
	req := operations.NewWriteFile("out/results.jsonl", strings.Repeat("x", 20000), true)
	op := state.Op{ID: state.OpID("r1", 1, 0), RunID: "r1", Step: 1, Status: state.OpPending, Request: req}
	MustCommit(t, s, &state.Commit{RunID: "r1", Ops: []state.Op{op}})
	before, _ := written(s)
	done := op
	done.Status, done.Attempts = state.OpDone, 1
	done.Result = &operations.Result{Kind: operations.KindWriteFile, Data: &operations.WriteFileResult{Path: "/w/out/results.jsonl", Bytes: 20000}}
	MustCommit(t, s, &state.Commit{RunID: "r1", Ops: []state.Op{done}})
	if after, ok := written(s); ok && after-before > 2000 {
		t.Fatalf("completing the op wrote %d bytes", after-before)
	}
	got, err := s.StepOps(ctx, "r1", 1)
	if err != nil || len(got) != 1 {
		t.Fatal(err)
	}
	SameJSON(t, "completed op", got[0], done)
	// Journaling it pending again (a re-dispatch) clears the result.
	MustCommit(t, s, &state.Commit{RunID: "r1", Ops: []state.Op{op}})
	got, _ = s.StepOps(ctx, "r1", 1)
	if got[0].Status != state.OpPending || got[0].Result != nil {
		t.Fatalf("re-pended op: %+v", got[0])
	}
	// And a new result applies again.
	MustCommit(t, s, &state.Commit{RunID: "r1", Ops: []state.Op{done}})
	got, _ = s.StepOps(ctx, "r1", 1)
	SameJSON(t, "completed again", got[0], done)
}

// testDoneWithoutPending: an op committed done without having been
// journaled pending is stored whole, in a later step as in an earlier one.
func testDoneWithoutPending(t *testing.T, s state.Store) {
	ctx := context.Background()
	MustCommit(t, s, &state.Commit{RunID: "r", Ops: []state.Op{Op("r", 2, 0, state.OpPending)}})
	ops := []state.Op{Op("r", 2, 1, state.OpDone), Op("r", 1, 0, state.OpDone), Op("r", 3, 0, state.OpDone)}
	MustCommit(t, s, &state.Commit{RunID: "r", Ops: ops})
	got, err := s.Ops(ctx, "r", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []state.Op{ops[1], Op("r", 2, 0, state.OpPending), ops[0], ops[2]}
	SameJSON(t, "ops", got, want)
	for _, step := range []uint64{1, 2, 3} {
		got, err := s.StepOps(ctx, "r", step)
		if err != nil || len(got) == 0 || got[0].Step != step {
			t.Fatalf("step %d: %+v %v", step, got, err)
		}
	}
}

// testBigRecords commits records larger than a message may be on some
// stores (entries of 300 KiB, a generate message of 400 KiB, a bash result
// of 1.5 MiB): they read back whole.
func testBigRecords(t *testing.T, s state.Store) {
	ctx := context.Background()
	big := func(n int, c string) string { return strings.Repeat(c, n) }
	entries := Entries(1, 2)
	for i := range entries {
		entries[i].Data = json.RawMessage(`{"text":"` + big(300<<10, "e") + `"}`)
	}
	msgs := []operations.Message{
		{Role: operations.RoleSystem, Content: "system"},
		{Role: operations.RoleUser, Content: big(400<<10, "u")},
		{Role: operations.RoleAssistant, Content: "a"},
		{Role: operations.RoleUser, Content: "b"},
	}
	gen := state.Op{ID: state.OpID("r", 1, 0), RunID: "r", Step: 1, Status: state.OpPending, CreatedAt: T0,
		Request: operations.NewGenerate(operations.GenerateRequest{Model: "m", Messages: msgs})}
	bash := Op("r", 1, 1, state.OpDone)
	operations.Bash.Result(*bash.Result).Stdout = big(1536<<10, "o")
	MustCommit(t, s, &state.Commit{RunID: "r", Run: Head("r", "wf", "", state.StatusRunning),
		Spec: &state.Spec{Task: big(300<<10, "t")}, Entries: entries, Ops: []state.Op{gen, bash}})
	gotE, err := s.Entries(ctx, "r", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	SameJSON(t, "entries", gotE, entries)
	gotO, err := s.StepOps(ctx, "r", 1)
	if err != nil {
		t.Fatal(err)
	}
	SameJSON(t, "ops", gotO, []state.Op{gen, bash})
	sp, err := s.Spec(ctx, "r")
	if err != nil || len(sp.Task) != 300<<10 {
		t.Fatalf("spec: %d bytes, %v", len(sp.Task), err)
	}
}

// testConcurrentRuns drives many runs at once, each commit continuing its
// run's logs; every run reads back whole.
func testConcurrentRuns(t *testing.T, s state.Store) {
	ConcurrentRuns(t, s, 50, 10)
}

// ConcurrentRuns drives runs runs at once, one goroutine each, through
// steps commits, each continuing its run's logs and fenced on the revision
// the previous one wrote; every run then reads back whole and none is
// unfinished. A store's own test may drive more and then look at how it
// wrote them (the bbolt store's grouping of commits).
func ConcurrentRuns(t *testing.T, s state.Store, runs int, steps uint64) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for i := range runs {
		wg.Go(func() {
			id := fmt.Sprintf("run%03d", i)
			var rev uint64
			for step := uint64(1); step <= steps; step++ {
				status := state.StatusRunning
				if step == steps {
					status = state.StatusSucceeded
				}
				h := Head(id, "wf", "", status)
				h.Step, h.Entries = step, step
				c := &state.Commit{RunID: id, ExpectRevision: rev, Run: h, Entries: Entries(step, 1),
					Ops: []state.Op{Op(id, step, 0, state.OpPending), Op(id, step, 1, state.OpPending)}, Events: Events(1)}
				if step == 1 {
					c.Spec = &state.Spec{Task: id}
				}
				if err := s.Commit(ctx, c); err != nil {
					errs <- fmt.Errorf("%s step %d: %w", id, step, err)
					return
				}
				rev = h.Revision
				if c.Events[0].Seq != step || rev != step {
					errs <- fmt.Errorf("%s step %d: event seq %d, revision %d", id, step, c.Events[0].Seq, rev)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	for i := range runs {
		id := fmt.Sprintf("run%03d", i)
		h, err := s.Run(ctx, id)
		if err != nil || h.Step != steps || h.Status != state.StatusSucceeded {
			t.Fatalf("%s head %+v err %v", id, h, err)
		}
		es, _ := s.Entries(ctx, id, 0, 0)
		ops, _ := s.Ops(ctx, id, "", 0)
		evs, _ := s.Events(ctx, id, 0, 0)
		sp, err := s.Spec(ctx, id)
		if uint64(len(es)) != steps || uint64(len(ops)) != 2*steps || uint64(len(evs)) != steps || err != nil || sp.Task != id {
			t.Fatalf("%s: %d entries, %d ops, %d events, spec %q %v", id, len(es), len(ops), len(evs), sp.Task, err)
		}
	}
	if unf, _ := s.Unfinished(ctx); len(unf) != 0 {
		t.Fatalf("%d unfinished runs", len(unf))
	}
}

// testConcurrentCommitsOneRun: unfenced commits to one run from many
// goroutines at once all apply, each atomically: the logs hold every
// commit's records, numbered without gaps or duplicates.
func testConcurrentCommitsOneRun(t *testing.T, s state.Store) {
	ctx := context.Background()
	const writers, commits = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range commits {
				evs := Events(2)
				evs[0].Message, evs[1].Message = fmt.Sprint(w, "/", i, "a"), fmt.Sprint(w, "/", i, "b")
				c := &state.Commit{RunID: "r", Events: evs,
					Ops: []state.Op{Op("r", uint64(w*commits+i+1), 0, state.OpPending)}}
				if err := s.Commit(ctx, c); err != nil {
					errs <- err
					return
				}
				if c.Events[1].Seq != c.Events[0].Seq+1 {
					errs <- fmt.Errorf("commit %d/%d got event seqs %d, %d", w, i, c.Events[0].Seq, c.Events[1].Seq)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	evs, err := s.Events(ctx, "r", 0, 0)
	if err != nil || len(evs) != 2*writers*commits {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	for i, e := range evs {
		if e.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
		if i%2 == 1 && e.Message != strings.TrimSuffix(evs[i-1].Message, "a")+"b" {
			t.Fatalf("events of one commit split: %q then %q", evs[i-1].Message, e.Message)
		}
	}
	if ops, err := s.Ops(ctx, "r", "", 0); err != nil || len(ops) != writers*commits {
		t.Fatalf("%d ops, %v", len(ops), err)
	}
}

// testOddRunIDs: ids with characters that are special to some stores
// (dots, slashes, spaces, wildcards, unicode) are kept apart and read back.
func testOddRunIDs(t *testing.T, s state.Store) {
	ctx := context.Background()
	ids := []string{"a.b", "a/b", "a b", "a*", "a>", "é", "a", "=YQ", strings.Repeat("x", 1024)}
	for i, id := range ids {
		MustCommit(t, s, &state.Commit{RunID: id, Run: Head(id, "odd", "", state.StatusRunning),
			Entries: Entries(1, i+1), Events: Events(1), Ops: []state.Op{Op(id, 1, 0, state.OpPending)}})
		if _, err := s.Claim(ctx, id, "me", time.Minute); err != nil {
			t.Fatalf("claim %q: %v", id, err)
		}
	}
	for i, id := range ids {
		h, err := s.Run(ctx, id)
		if err != nil || h.ID != id {
			t.Fatalf("run %q: %+v %v", id, h.ID, err)
		}
		es, err := s.Entries(ctx, id, 0, 0)
		if err != nil || len(es) != i+1 {
			t.Fatalf("entries of %q: %d %v", id, len(es), err)
		}
		ops, err := s.Ops(ctx, id, "", 0)
		if err != nil || len(ops) != 1 || ops[0].RunID != id {
			t.Fatalf("ops of %q: %+v %v", id, ops, err)
		}
	}
	got, _, err := s.Runs(ctx, state.RunFilter{Workflow: "odd"})
	if err != nil || len(got) != len(ids) {
		t.Fatalf("runs: %d %v", len(got), err)
	}
	if err := s.Commit(ctx, &state.Commit{RunID: strings.Repeat("x", 1025)}); err == nil {
		t.Fatal("an over-long run id was accepted")
	}
	// Ids no run can have (the HTTP API passes what the URL holds, e.g.
	// /runs//entries) are runs that do not exist, not store failures.
	for _, id := range []string{"", "a\x00b", strings.Repeat("x", 1025)} {
		if _, err := s.Run(ctx, id); !errors.Is(err, state.ErrNotFound) {
			t.Errorf("Run(%q): %v, want ErrNotFound", id, err)
		}
		if _, err := s.Spec(ctx, id); !errors.Is(err, state.ErrNotFound) {
			t.Errorf("Spec(%q): %v, want ErrNotFound", id, err)
		}
		if _, err := s.Entries(ctx, id, 0, 0); err != nil && !errors.Is(err, state.ErrNotFound) {
			t.Errorf("Entries(%q): %v, want none or ErrNotFound", id, err)
		}
		if _, err := s.Events(ctx, id, 0, 0); err != nil && !errors.Is(err, state.ErrNotFound) {
			t.Errorf("Events(%q): %v, want none or ErrNotFound", id, err)
		}
	}
}

func testCanceledContext(t *testing.T, s state.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Commit(ctx, &state.Commit{RunID: "r", Run: Head("r", "wf", "", state.StatusRunning)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Commit: %v, want context.Canceled", err)
	}
	if _, err := s.Run(context.Background(), "r"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("cancelled commit was written: %v", err)
	}
	if _, err := s.Run(ctx, "r"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want context.Canceled", err)
	}
}

func testClosed(t *testing.T, s state.Store) {
	ctx := context.Background()
	MustCommit(t, s, &state.Commit{RunID: "r", Run: Head("r", "wf", "", state.StatusRunning)})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"Commit", func() error { return s.Commit(ctx, &state.Commit{RunID: "r"}) }},
		{"Run", func() error { _, err := s.Run(ctx, "r"); return err }},
		{"Spec", func() error { _, err := s.Spec(ctx, "r"); return err }},
		{"Runs", func() error { _, _, err := s.Runs(ctx, state.RunFilter{}); return err }},
		{"Unfinished", func() error { _, err := s.Unfinished(ctx); return err }},
		{"Children", func() error { _, err := s.Children(ctx, "r"); return err }},
		{"Entries", func() error { _, err := s.Entries(ctx, "r", 0, 0); return err }},
		{"StepOps", func() error { _, err := s.StepOps(ctx, "r", 0); return err }},
		{"Ops", func() error { _, err := s.Ops(ctx, "r", "", 0); return err }},
		{"Events", func() error { _, err := s.Events(ctx, "r", 0, 0); return err }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			if err := c.call(); !errors.Is(err, state.ErrClosed) {
				t.Fatalf("got %v, want ErrClosed", err)
			}
		})
	}
}
