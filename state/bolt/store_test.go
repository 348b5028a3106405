package bolt

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/storetest"
)

// openTestStore opens a store in a fresh temp dir and closes it at cleanup.
func openTestStore(tb testing.TB) *Store {
	tb.Helper()
	return openTestStoreAt(tb, filepath.Join(tb.TempDir(), "data", "flock.db"))
}

func openTestStoreAt(tb testing.TB, path string) *Store {
	tb.Helper()
	s, err := Open(path, Options{})
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestBoltReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flock.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	parent := storetest.Head("p", "wf", "", state.StatusRunning)
	child := storetest.Head("c", "wf", "p", state.StatusSucceeded)
	events := storetest.Events(2)
	commits := []*state.Commit{
		{RunID: "p", Run: parent, Spec: &state.Spec{Task: "t", Settings: json.RawMessage(`{}`)},
			Entries: storetest.Entries(1, 2), Ops: []state.Op{storetest.Op("p", 1, 0, state.OpDone)}, Events: events},
		{RunID: "c", Run: child},
	}
	for _, c := range commits {
		storetest.MustCommit(t, s, c)
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
	want.Schema = state.SchemaVersion
	storetest.SameJSON(t, "head", gotHead, want)
	gotSpec, err := s.Spec(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	storetest.SameJSON(t, "spec", gotSpec, commits[0].Spec)
	gotEntries, _ := s.Entries(ctx, "p", 0, 0)
	storetest.SameJSON(t, "entries", gotEntries, commits[0].Entries)
	gotOps, _ := s.Ops(ctx, "p", "", 0)
	storetest.SameJSON(t, "ops", gotOps, commits[0].Ops)
	gotEvents, _ := s.Events(ctx, "p", 0, 0)
	storetest.SameJSON(t, "events", gotEvents, events)
	kids, _ := s.Children(ctx, "p")
	unf, _ := s.Unfinished(ctx)
	if fmt.Sprint(kids) != "[c]" || len(unf) != 1 || unf[0].ID != "p" {
		t.Fatalf("indexes after reopen: children %v, unfinished %d", kids, len(unf))
	}
	// Numbering continues from what is stored.
	more := storetest.Events(1)
	storetest.MustCommit(t, s, &state.Commit{RunID: "p", Entries: storetest.Entries(3, 1), Events: more})
	if more[0].Seq != 3 {
		t.Fatalf("event seq after reopen %d, want 3", more[0].Seq)
	}
}

func TestBoltSchemaTooNew(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flock.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	storetest.MustCommit(t, s, &state.Commit{RunID: "r", Run: &state.Run{Schema: state.SchemaVersion + 1, ID: "r", Status: state.StatusRunning}})
	if _, err := s.Run(ctx, "r"); !errors.Is(err, state.ErrSchema) {
		t.Errorf("head with newer schema: %v, want ErrSchema", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	setSchema(t, path, state.SchemaVersion+1)
	if s, err := Open(path, Options{}); !errors.Is(err, state.ErrSchema) {
		if err == nil {
			_ = s.Close()
		}
		t.Fatalf("Open: %v, want ErrSchema", err)
	}
	// The failed open released the file.
	setSchema(t, path, state.SchemaVersion)
	openTestStoreAt(t, path)
}

// setSchema overwrites the schema version recorded in the file at path.
func setSchema(tb testing.TB, path string, v uint64) {
	tb.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
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
	s, err := Open(path, Options{Timeout: 100 * time.Millisecond})
	if err == nil {
		_ = s.Close()
		t.Fatal("second Open succeeded")
	}
	if !errors.Is(err, state.ErrInUse) {
		t.Fatalf("got %v, want ErrInUse", err)
	}
	t.Log(err)
}

// TestBoltConcurrentRuns drives 200 runs at once through the contract's
// ConcurrentRuns: their commits are grouped into fewer transactions.
func TestBoltConcurrentRuns(t *testing.T) {
	s := openTestStore(t)
	const runs, steps = 200, 20
	before := s.Stats()
	storetest.ConcurrentRuns(t, s, runs, steps)
	if t.Failed() {
		return
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
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
	results := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("r%03d", i)
			results[i] = s.Commit(ctx, &state.Commit{RunID: id, Run: storetest.Head(id, "wf", "", state.StatusRunning)})
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
		case errors.Is(err, state.ErrClosed) && rerr == nil:
			t.Errorf("%s: commit refused with ErrClosed but written", id)
		case err != nil && !errors.Is(err, state.ErrClosed):
			t.Errorf("%s: %v", id, err)
		}
	}
}

// TestBoltReadOnly: a read-only open reads what a writer stored, shares
// the file with other readers, refuses commits, is refused while a writer
// holds the file (and makes a writer wait), and does not create a file.
func TestBoltReadOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "flock.db")
	ro := Options{ReadOnly: true, Timeout: 100 * time.Millisecond}
	if s, err := Open(path, ro); !errors.Is(err, os.ErrNotExist) {
		if err == nil {
			_ = s.Close()
		}
		t.Fatalf("read-only open of a missing file: %v", err)
	}
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	storetest.MustCommit(t, w, &state.Commit{RunID: "r", Run: storetest.Head("r", "wf", "", state.StatusRunning), Spec: &state.Spec{Task: "t", Key: "k", Grants: &state.Grants{ReadRoots: []string{"/srv"}}}})
	if s, err := Open(path, ro); !errors.Is(err, state.ErrInUse) {
		if err == nil {
			_ = s.Close()
		}
		t.Fatalf("read-only open while a writer holds the file: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	a, err := Open(path, ro)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(path, ro)
	if err != nil {
		t.Fatalf("a second reader: %v", err)
	}
	defer b.Close()
	if h, err := b.Run(ctx, "r"); err != nil || h.Status != state.StatusRunning {
		t.Fatalf("read %+v: %v", h, err)
	}
	if sp, err := a.Spec(ctx, "r"); err != nil || sp.Key != "k" || sp.Grants == nil || sp.Grants.ReadRoots[0] != "/srv" {
		t.Fatalf("spec %+v: %v", sp, err)
	}
	if err := a.Commit(ctx, &state.Commit{RunID: "r", Events: storetest.Events(1)}); !errors.Is(err, state.ErrReadOnly) {
		t.Fatalf("commit to a read-only store: %v", err)
	}
	if s, err := Open(path, Options{Timeout: 100 * time.Millisecond}); !errors.Is(err, state.ErrInUse) {
		if err == nil {
			_ = s.Close()
		}
		t.Fatalf("a writer while readers hold the file: %v", err)
	}
}
