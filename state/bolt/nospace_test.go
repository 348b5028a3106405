package bolt

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/flockrun/flock/internal/tmpfs"
	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/storetest"
)

// bigEntries returns n entries of about size bytes each, starting at seq first.
func bigEntries(first uint64, n, size int) []record.Entry {
	es := storetest.Entries(first, n)
	pad := strings.Repeat("x", size)
	for i := range es {
		es[i].Data = []byte(`"` + pad + `"`)
	}
	return es
}

// TestBoltNoSpace fills the real filesystem under the store: a commit that
// needs new pages fails with ErrNoSpace naming the file, writes nothing,
// leaves the store usable, and the same commit succeeds once space is
// freed; the file reopens with everything committed.
func TestBoltNoSpace(t *testing.T) {
	dir := tmpfs.Mount(t, 8<<20)
	path := filepath.Join(dir, "flock.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	storetest.MustCommit(t, s, &state.Commit{RunID: "r1", Run: storetest.Head("r1", "w", "", state.StatusRunning), Entries: storetest.Entries(1, 3)})
	free := tmpfs.Fill(t, dir)

	c := &state.Commit{RunID: "r1", Entries: bigEntries(4, 16, 64<<10)}
	err = s.Commit(ctx, c)
	if !errors.Is(err, state.ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("commit on a full disk: err = %v, want ErrNoSpace wrapping ENOSPC", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Fatalf("error %q does not name the file %s", err, path)
	}
	// Nothing of the failed commit is visible, and reads still work.
	es, err := s.Entries(ctx, "r1", 0, 100)
	if err != nil || len(es) != 3 {
		t.Fatalf("entries after the failed commit: %d, %v", len(es), err)
	}

	free()
	if err := s.Commit(ctx, c); err != nil {
		t.Fatalf("the same commit after freeing space: %v", err)
	}
	storetest.MustCommit(t, s, &state.Commit{RunID: "r1", Entries: storetest.Entries(20, 1)})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openTestStoreAt(t, path)
	es, err = s2.Entries(ctx, "r1", 0, 100)
	if err != nil || len(es) != 20 {
		t.Fatalf("entries after reopen: %d, %v", len(es), err)
	}
	for i, e := range es {
		if e.Seq != uint64(i+1) {
			t.Fatalf("entry %d has seq %d", i, e.Seq)
		}
	}
	if err := s2.db.View(func(tx *bbolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	}); err != nil {
		t.Fatalf("bbolt check after reopen: %v", err)
	}
}
