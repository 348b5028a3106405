package state

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/record"
	bolt "go.etcd.io/bbolt"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// openTestStore opens a store in a fresh temp dir and closes it at cleanup.
func openTestStore(tb testing.TB) *BoltStore {
	tb.Helper()
	return openTestStoreAt(tb, filepath.Join(tb.TempDir(), "data", "flock.db"))
}

func openTestStoreAt(tb testing.TB, path string) *BoltStore {
	tb.Helper()
	s, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		tb.Fatalf("OpenBolt: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

func mustCommit(tb testing.TB, s Store, c *Commit) {
	tb.Helper()
	if err := s.Commit(context.Background(), c); err != nil {
		tb.Fatalf("Commit(%s): %v", c.RunID, err)
	}
}

// sameJSON fails unless got and want encode to the same JSON.
func sameJSON(tb testing.TB, what string, got, want any) {
	tb.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		tb.Fatalf("%s: marshal got: %v", what, err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		tb.Fatalf("%s: marshal want: %v", what, err)
	}
	if string(g) != string(w) {
		tb.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func testHead(id, workflow, parent string, status Status) *Run {
	return &Run{
		ID:        id,
		Workflow:  workflow,
		ParentID:  parent,
		Status:    status,
		Phase:     "think",
		Next:      "act",
		Usage:     operations.RunUsage{Tokens: 10},
		Vars:      map[string]json.RawMessage{"x": json.RawMessage(`{"a":1}`)},
		WorkDir:   "/tmp/" + id,
		CreatedAt: t0,
		UpdatedAt: t0,
	}
}

func testEntries(first uint64, n int) []record.Entry {
	es := make([]record.Entry, n)
	for i := range es {
		seq := first + uint64(i)
		es[i] = record.Entry{Seq: seq, Type: "message", Phase: "think", Step: seq,
			Data: json.RawMessage(fmt.Sprintf(`{"text":"entry %d"}`, seq))}
	}
	return es
}

func testOp(run string, step uint64, index int, status OpStatus) Op {
	op := Op{
		ID: OpID(run, step, index), RunID: run, Step: step, Index: index,
		Phase: "think", Status: status, CreatedAt: t0,
		Request: operations.Request{Kind: operations.KindBash, Bash: &operations.BashRequest{Command: "ls"}},
	}
	if status == OpDone {
		fin := t0.Add(time.Second)
		op.Attempts, op.FinishedAt = 1, &fin
		op.Result = &operations.Result{Kind: operations.KindBash, Bash: &operations.BashResult{Stdout: "a\n"}}
	}
	return op
}

func testEvents(n int) []Event {
	es := make([]Event, n)
	for i := range es {
		es[i] = Event{Time: t0, Type: "phase", Phase: "think", Message: fmt.Sprint("event ", i)}
	}
	return es
}

func TestBoltRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	head := testHead("r1", "wf", "", StatusRunning)
	spec := &Spec{Task: "do it", Settings: json.RawMessage(`{"model":"m"}`)}
	entries := testEntries(1, 3)
	ops := []Op{testOp("r1", 1, 0, OpPending), testOp("r1", 1, 1, OpDone), testOp("r1", 2, 0, OpPending)}
	ops[2].ID, ops[2].RunID = "", "" // filled in by the store
	events := testEvents(2)
	mustCommit(t, s, &Commit{RunID: "r1", Run: head, Spec: spec, Entries: entries, Ops: ops, Events: events})

	gotHead, err := s.Run(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	wantHead := *head
	wantHead.Schema = SchemaVersion
	sameJSON(t, "head", gotHead, wantHead)
	if head.Schema != 0 {
		t.Errorf("Commit modified the caller's head: schema %d", head.Schema)
	}

	gotSpec, err := s.Spec(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "spec", gotSpec, spec)

	gotEntries, err := s.Entries(ctx, "r1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "entries", gotEntries, entries)

	wantOps := append([]Op(nil), ops...)
	wantOps[2].ID, wantOps[2].RunID = "r1/2/0", "r1"
	gotOps, err := s.Ops(ctx, "r1", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "ops", gotOps, wantOps)

	gotStep, err := s.StepOps(ctx, "r1", 1)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "step ops", gotStep, wantOps[:2])

	if events[0].Seq != 1 || events[1].Seq != 2 {
		t.Fatalf("event seqs not written back: %d, %d", events[0].Seq, events[1].Seq)
	}
	gotEvents, err := s.Events(ctx, "r1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "events", gotEvents, events)

	// Replacing an op by ID (pending -> done) keeps one record.
	mustCommit(t, s, &Commit{RunID: "r1", Ops: []Op{testOp("r1", 1, 0, OpDone)}})
	gotStep, err = s.StepOps(ctx, "r1", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(gotStep) != 2 || gotStep[0].Status != OpDone {
		t.Fatalf("after replace: %+v", gotStep)
	}
}

func TestBoltReadPaging(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	var ops []Op
	for step := uint64(1); step <= 3; step++ {
		for i := range 3 {
			ops = append(ops, testOp("r", step, i, OpPending))
		}
	}
	mustCommit(t, s, &Commit{RunID: "r", Run: testHead("r", "wf", "", StatusRunning),
		Entries: testEntries(1, 10), Ops: ops, Events: testEvents(10)})
	// A neighbour whose id extends "r" must not leak into r's reads.
	mustCommit(t, s, &Commit{RunID: "r2", Entries: testEntries(1, 2), Ops: []Op{testOp("r2", 0, 0, OpPending)}, Events: testEvents(1)})

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
		{"ops all", func() (any, error) { return s.Ops(ctx, "r", "", 0) }, 9, "r/1/0"},
		{"ops after", func() (any, error) { return s.Ops(ctx, "r", "r/1/2", 4) }, 4, "r/2/0"},
		{"ops after missing id", func() (any, error) { return s.Ops(ctx, "r", "r/2/7", 0) }, 3, "r/3/0"},
		{"ops after last", func() (any, error) { return s.Ops(ctx, "r", "r/3/2", 0) }, 0, ""},
		{"step ops", func() (any, error) { return s.StepOps(ctx, "r", 2) }, 3, "r/2/0"},
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
			case []Event:
				n = len(v)
				if n > 0 {
					first = fmt.Sprint(v[0].Seq)
				}
			case []Op:
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

func TestBoltNotFound(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	mustCommit(t, s, &Commit{RunID: "headless", Entries: testEntries(1, 1)})
	if _, err := s.Run(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Run: %v, want ErrNotFound", err)
	}
	if _, err := s.Spec(ctx, "headless"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Spec: %v, want ErrNotFound", err)
	}
}

func TestBoltRuns(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	// Ids sort in creation order, as the executor generates them.
	type run struct {
		id, wf, parent string
		status         Status
	}
	runs := []run{
		{"r01", "a", "", StatusSucceeded},
		{"r02", "a", "", StatusRunning},
		{"r03", "b", "r02", StatusRunning},
		{"r04", "b", "r02", StatusFailed},
		{"r05", "a", "", StatusPaused},
		{"r06", "b", "r05", StatusRunning},
		{"r07", "a", "r02", StatusSucceeded},
	}
	for _, r := range runs {
		mustCommit(t, s, &Commit{RunID: r.id, Run: testHead(r.id, r.wf, r.parent, r.status)})
	}
	tests := []struct {
		name     string
		filter   RunFilter
		want     []string
		wantNext string
	}{
		{"all newest first", RunFilter{}, []string{"r07", "r06", "r05", "r04", "r03", "r02", "r01"}, ""},
		{"page 1", RunFilter{Limit: 3}, []string{"r07", "r06", "r05"}, "r05"},
		{"page 2", RunFilter{Limit: 3, After: "r05"}, []string{"r04", "r03", "r02"}, "r02"},
		{"page 3", RunFilter{Limit: 3, After: "r02"}, []string{"r01"}, ""},
		{"after past end", RunFilter{After: "r99"}, []string{"r07", "r06", "r05", "r04", "r03", "r02", "r01"}, ""},
		{"after first", RunFilter{After: "r01"}, nil, ""},
		{"status running", RunFilter{Status: StatusRunning}, []string{"r06", "r03", "r02"}, ""},
		{"status running paged", RunFilter{Status: StatusRunning, After: "r06", Limit: 1}, []string{"r03"}, "r03"},
		{"status paused", RunFilter{Status: StatusPaused}, []string{"r05"}, ""},
		{"status succeeded", RunFilter{Status: StatusSucceeded}, []string{"r07", "r01"}, ""},
		{"workflow", RunFilter{Workflow: "b"}, []string{"r06", "r04", "r03"}, ""},
		{"parent", RunFilter{ParentID: "r02"}, []string{"r07", "r04", "r03"}, ""},
		{"parent paged", RunFilter{ParentID: "r02", After: "r07", Limit: 1}, []string{"r04"}, "r04"},
		{"parent and workflow", RunFilter{ParentID: "r02", Workflow: "b"}, []string{"r04", "r03"}, ""},
		{"parent and status", RunFilter{ParentID: "r02", Status: StatusRunning}, []string{"r03"}, ""},
		{"unknown parent", RunFilter{ParentID: "r0"}, nil, ""},
		{"no match", RunFilter{Workflow: "zzz"}, nil, ""},
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
		for i := range 1100 {
			id := fmt.Sprintf("x%04d", i)
			mustCommit(t, s, &Commit{RunID: id, Run: testHead(id, "c", "", StatusSucceeded)})
		}
		got, next, err := s.Runs(ctx, RunFilter{Workflow: "c", Limit: 5000})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1000 || next != "x0100" {
			t.Fatalf("got %d runs next %q, want 1000 next x0100", len(got), next)
		}
		got, _, err = s.Runs(ctx, RunFilter{Workflow: "c"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 50 {
			t.Fatalf("default limit: got %d, want 50", len(got))
		}
	})
}

func TestBoltUnfinishedFollowsStatus(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
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
		status Status
		want   string
	}{
		{"a starts", "a", StatusRunning, "[a:running]"},
		{"b starts", "b", StatusRunning, "[a:running b:running]"},
		{"a pauses", "a", StatusPaused, "[a:paused b:running]"},
		{"a resumes", "a", StatusRunning, "[a:running b:running]"},
		{"b fails", "b", StatusFailed, "[a:running]"},
		{"c created finished", "c", StatusSucceeded, "[a:running]"},
		{"a cancelled", "a", StatusCancelled, "[]"},
		{"a cancelled again", "a", StatusCancelled, "[]"},
	}
	for _, st := range steps {
		mustCommit(t, s, &Commit{RunID: st.id, Run: testHead(st.id, "wf", "", st.status)})
		if got := unfinished(); got != st.want {
			t.Fatalf("%s: unfinished %s, want %s", st.name, got, st.want)
		}
	}
}

func TestBoltChildren(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	mustCommit(t, s, &Commit{RunID: "p", Run: testHead("p", "wf", "", StatusRunning)})
	mustCommit(t, s, &Commit{RunID: "p/x", Run: testHead("p/x", "wf", "", StatusRunning)}) // not a child
	for _, id := range []string{"c2", "c1", "c3"} {
		mustCommit(t, s, &Commit{RunID: id, Run: testHead(id, "wf", "p", StatusRunning)})
		mustCommit(t, s, &Commit{RunID: id, Run: testHead(id, "wf", "p", StatusSucceeded)}) // rewrite: no duplicate
	}
	mustCommit(t, s, &Commit{RunID: "g", Run: testHead("g", "wf", "c1", StatusRunning)})
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
		})
	}
}

func TestBoltCommitRejected(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	mustCommit(t, s, &Commit{RunID: "r", Run: testHead("r", "wf", "", StatusRunning),
		Spec: &Spec{Task: "t"}, Entries: testEntries(1, 3), Events: testEvents(1)})

	tests := []struct {
		name     string
		commit   *Commit
		conflict bool
	}{
		{"retried entries", &Commit{RunID: "r", Entries: testEntries(1, 3)}, true},
		{"overlapping entries", &Commit{RunID: "r", Entries: testEntries(3, 2)}, true},
		{"gap", &Commit{RunID: "r", Entries: testEntries(5, 1)}, true},
		{"first entry of new run not 1", &Commit{RunID: "new", Entries: testEntries(2, 1)}, true},
		{"spec twice", &Commit{RunID: "r", Spec: &Spec{Task: "again"}}, true},
		{"entry seq zero", &Commit{RunID: "r", Entries: testEntries(0, 1)}, false},
		{"entries not contiguous", &Commit{RunID: "r", Entries: append(testEntries(4, 1), testEntries(6, 1)...)}, false},
		{"empty run id", &Commit{}, false},
		{"nul in run id", &Commit{RunID: "a\x00b"}, false},
		{"head of another run", &Commit{RunID: "r", Run: testHead("q", "wf", "", StatusRunning)}, false},
		{"invalid status", &Commit{RunID: "r", Run: testHead("r", "wf", "", "")}, false},
		{"op of another run", &Commit{RunID: "r", Ops: []Op{testOp("q", 1, 0, OpPending)}}, false},
		{"op id mismatch", &Commit{RunID: "r", Ops: []Op{{ID: "r/1/1", Step: 1, Index: 0}}}, false},
		{"negative op index", &Commit{RunID: "r", Ops: []Op{{Step: 1, Index: -1}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Every rejected commit also carries a head change and an
			// event, which must not be written.
			if tt.commit.Run == nil && tt.commit.RunID == "r" {
				h := testHead("r", "wf", "", StatusFailed)
				tt.commit.Run = h
			}
			tt.commit.Events = testEvents(1)
			err := s.Commit(ctx, tt.commit)
			if err == nil {
				t.Fatal("commit accepted")
			}
			if got := errors.Is(err, ErrConflict); got != tt.conflict {
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
	if head.Status != StatusRunning {
		t.Errorf("rejected commit changed the head: %s", head.Status)
	}
	entries, _ := s.Entries(ctx, "r", 0, 0)
	events, _ := s.Events(ctx, "r", 0, 0)
	if len(entries) != 3 || len(events) != 1 {
		t.Errorf("rejected commits wrote: %d entries, %d events", len(entries), len(events))
	}
	// The log continues normally after conflicts.
	mustCommit(t, s, &Commit{RunID: "r", Entries: testEntries(4, 2)})
}

func TestBoltEventSeq(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	for i, n := range []int{1, 3, 0, 2} {
		evs := testEvents(n)
		mustCommit(t, s, &Commit{RunID: "a", Events: evs})
		mustCommit(t, s, &Commit{RunID: "b", Events: testEvents(i + 1)}) // independent numbering
		_ = evs
	}
	evs := testEvents(2)
	mustCommit(t, s, &Commit{RunID: "a", Events: evs})
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
}

func TestBoltReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flock.db")
	s, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parent := testHead("p", "wf", "", StatusRunning)
	child := testHead("c", "wf", "p", StatusSucceeded)
	events := testEvents(2)
	commits := []*Commit{
		{RunID: "p", Run: parent, Spec: &Spec{Task: "t", Settings: json.RawMessage(`{}`)},
			Entries: testEntries(1, 2), Ops: []Op{testOp("p", 1, 0, OpDone)}, Events: events},
		{RunID: "c", Run: child},
	}
	for _, c := range commits {
		mustCommit(t, s, c)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openTestStoreAt(t, path)
	gotHead, err := s.Run(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	want := *parent
	want.Schema = SchemaVersion
	sameJSON(t, "head", gotHead, want)
	gotSpec, err := s.Spec(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "spec", gotSpec, commits[0].Spec)
	gotEntries, _ := s.Entries(ctx, "p", 0, 0)
	sameJSON(t, "entries", gotEntries, commits[0].Entries)
	gotOps, _ := s.Ops(ctx, "p", "", 0)
	sameJSON(t, "ops", gotOps, commits[0].Ops)
	gotEvents, _ := s.Events(ctx, "p", 0, 0)
	sameJSON(t, "events", gotEvents, events)
	kids, _ := s.Children(ctx, "p")
	unf, _ := s.Unfinished(ctx)
	if fmt.Sprint(kids) != "[c]" || len(unf) != 1 || unf[0].ID != "p" {
		t.Fatalf("indexes after reopen: children %v, unfinished %d", kids, len(unf))
	}
	// Numbering continues from what is stored.
	more := testEvents(1)
	mustCommit(t, s, &Commit{RunID: "p", Entries: testEntries(3, 1), Events: more})
	if more[0].Seq != 3 {
		t.Fatalf("event seq after reopen %d, want 3", more[0].Seq)
	}
}

func TestBoltClosed(t *testing.T) {
	ctx := context.Background()
	s, err := OpenBolt(filepath.Join(t.TempDir(), "flock.db"), BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, &Commit{RunID: "r", Run: testHead("r", "wf", "", StatusRunning)})
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
		{"Commit", func() error { return s.Commit(ctx, &Commit{RunID: "r"}) }},
		{"Run", func() error { _, err := s.Run(ctx, "r"); return err }},
		{"Spec", func() error { _, err := s.Spec(ctx, "r"); return err }},
		{"Runs", func() error { _, _, err := s.Runs(ctx, RunFilter{}); return err }},
		{"Unfinished", func() error { _, err := s.Unfinished(ctx); return err }},
		{"Children", func() error { _, err := s.Children(ctx, "r"); return err }},
		{"Entries", func() error { _, err := s.Entries(ctx, "r", 0, 0); return err }},
		{"StepOps", func() error { _, err := s.StepOps(ctx, "r", 0); return err }},
		{"Ops", func() error { _, err := s.Ops(ctx, "r", "", 0); return err }},
		{"Events", func() error { _, err := s.Events(ctx, "r", 0, 0); return err }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			if err := c.call(); !errors.Is(err, ErrClosed) {
				t.Fatalf("got %v, want ErrClosed", err)
			}
		})
	}
}

func TestBoltCanceledContext(t *testing.T) {
	s := openTestStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Commit(ctx, &Commit{RunID: "r", Run: testHead("r", "wf", "", StatusRunning)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Commit: %v, want context.Canceled", err)
	}
	if _, err := s.Run(context.Background(), "r"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cancelled commit was written: %v", err)
	}
	if _, err := s.Run(ctx, "r"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want context.Canceled", err)
	}
}

func TestBoltSchemaTooNew(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flock.db")
	s, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, &Commit{RunID: "r", Run: &Run{Schema: SchemaVersion + 1, ID: "r", Status: StatusRunning}})
	if _, err := s.Run(ctx, "r"); !errors.Is(err, ErrSchema) {
		t.Errorf("head with newer schema: %v, want ErrSchema", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	setSchema(t, path, SchemaVersion+1)
	if s, err := OpenBolt(path, BoltOptions{}); !errors.Is(err, ErrSchema) {
		if err == nil {
			_ = s.Close()
		}
		t.Fatalf("OpenBolt: %v, want ErrSchema", err)
	}
	// The failed open released the file.
	setSchema(t, path, SchemaVersion)
	openTestStoreAt(t, path)
}

// setSchema overwrites the schema version recorded in the file at path.
func setSchema(tb testing.TB, path string, v uint64) {
	tb.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keySchema, binary.BigEndian.AppendUint64(nil, v))
	})
	if err != nil {
		tb.Fatal(err)
	}
}

func TestBoltFileInUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "flock.db")
	openTestStoreAt(t, path)
	// flock(2) locks are per open file, so a second open in this process
	// conflicts like a second process would.
	s, err := OpenBolt(path, BoltOptions{Timeout: 100 * time.Millisecond})
	if err == nil {
		_ = s.Close()
		t.Fatal("second OpenBolt succeeded")
	}
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("got %v, want ErrInUse", err)
	}
	t.Log(err)
}

func TestBoltConcurrentRuns(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	const runs, steps = 200, 20
	before := s.Stats()
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for i := range runs {
		wg.Go(func() {
			id := fmt.Sprintf("run%03d", i)
			for step := uint64(1); step <= steps; step++ {
				status := StatusRunning
				if step == steps {
					status = StatusSucceeded
				}
				h := testHead(id, "wf", "", status)
				h.Step, h.Entries = step, step
				c := &Commit{RunID: id, Run: h, Entries: testEntries(step, 1),
					Ops: []Op{testOp(id, step, 0, OpPending), testOp(id, step, 1, OpPending)}, Events: testEvents(1)}
				if step == 1 {
					c.Spec = &Spec{Task: id}
				}
				if err := s.Commit(ctx, c); err != nil {
					errs <- fmt.Errorf("%s step %d: %w", id, step, err)
					return
				}
				if c.Events[0].Seq != step {
					errs <- fmt.Errorf("%s step %d: event seq %d", id, step, c.Events[0].Seq)
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
		if err != nil || h.Step != steps || h.Status != StatusSucceeded {
			t.Fatalf("%s head %+v err %v", id, h, err)
		}
		es, _ := s.Entries(ctx, id, 0, 0)
		ops, _ := s.Ops(ctx, id, "", 0)
		evs, _ := s.Events(ctx, id, 0, 0)
		sp, err := s.Spec(ctx, id)
		if len(es) != steps || len(ops) != 2*steps || len(evs) != steps || err != nil || sp.Task != id {
			t.Fatalf("%s: %d entries, %d ops, %d events, spec %q %v", id, len(es), len(ops), len(evs), sp.Task, err)
		}
	}
	if unf, _ := s.Unfinished(ctx); len(unf) != 0 {
		t.Fatalf("%d unfinished runs", len(unf))
	}
	st := s.Stats()
	commits, txs := st.Commits-before.Commits, st.Txs-before.Txs
	t.Logf("%d commits in %d transactions", commits, txs)
	if commits != runs*steps {
		t.Fatalf("Stats.Commits = %d, want %d", commits, runs*steps)
	}
	if txs >= commits {
		t.Fatalf("no grouping: %d transactions for %d commits", txs, commits)
	}
}

func TestBoltCloseWithPendingCommits(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flock.db")
	s, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
	results := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("r%03d", i)
			results[i] = s.Commit(ctx, &Commit{RunID: id, Run: testHead(id, "wf", "", StatusRunning)})
		})
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	select {
	case <-s.done:
	default:
		t.Fatal("committer still running after Close")
	}

	s = openTestStoreAt(t, path)
	for i, err := range results {
		id := fmt.Sprintf("r%03d", i)
		_, rerr := s.Run(ctx, id)
		switch {
		case err == nil && rerr != nil:
			t.Errorf("%s: acknowledged commit lost: %v", id, rerr)
		case errors.Is(err, ErrClosed) && rerr == nil:
			t.Errorf("%s: commit refused with ErrClosed but written", id)
		case err != nil && !errors.Is(err, ErrClosed):
			t.Errorf("%s: %v", id, err)
		}
	}
}
