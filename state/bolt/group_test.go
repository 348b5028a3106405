package bolt

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/storetest"
)

// holdWriter blocks the committer's next transaction until the returned
// release is called, by holding bbolt's single writer slot.
func holdWriter(tb testing.TB, s *Store) (release func()) {
	tb.Helper()
	tx, err := s.db.Begin(true)
	if err != nil {
		tb.Fatal(err)
	}
	return func() {
		if err := tx.Rollback(); err != nil {
			tb.Fatal(err)
		}
	}
}

// enqueue encodes c and queues it for the committer as Commit does.
func enqueue(tb testing.TB, s *Store, c *state.Commit) *commitReq {
	tb.Helper()
	r, err := encodeCommit(c)
	if err != nil {
		tb.Fatal(err)
	}
	s.reqs <- r
	return r
}

func TestBoltLoneCommitIsOneTransaction(t *testing.T) {
	s := openTestStore(t)
	for i := range 5 {
		before := s.Stats().Txs
		id := fmt.Sprint("r", i)
		storetest.MustCommit(t, s, &state.Commit{RunID: id, Run: storetest.Head(id, "wf", "", state.StatusRunning), Entries: storetest.Entries(1, 1)})
		if got := s.Stats().Txs - before; got != 1 {
			t.Fatalf("commit %d used %d transactions, want 1", i, got)
		}
	}
}

func TestBoltGroupCommit(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	storetest.MustCommit(t, s, &state.Commit{RunID: "shared", Entries: storetest.Entries(1, 1)})
	before := s.Stats()

	release := holdWriter(t, s)
	// The committer takes the first request and blocks in Update; all the
	// others are queued meanwhile and must then share one transaction.
	type queued struct {
		name     string
		r        *commitReq
		conflict bool
	}
	var qs []queued
	for i := range 50 {
		id := fmt.Sprintf("g%02d", i)
		c := &state.Commit{RunID: id, Run: storetest.Head(id, "wf", "", state.StatusRunning), Entries: storetest.Entries(1, 2), Events: storetest.Events(1)}
		qs = append(qs, queued{name: id, r: enqueue(t, s, c)})
		if i == 0 {
			testkit.WaitFor(t, "committer to take the first request", func() bool { return len(s.reqs) == 0 })
		}
	}
	// Two commits to one run in the same group: the second sees the first.
	qs = append(qs,
		queued{name: "shared 2-3", r: enqueue(t, s, &state.Commit{RunID: "shared", Entries: storetest.Entries(2, 2), Events: storetest.Events(1)})},
		queued{name: "shared retried", r: enqueue(t, s, &state.Commit{RunID: "shared", Entries: storetest.Entries(2, 2), Events: storetest.Events(1)}), conflict: true},
		queued{name: "shared 4", r: enqueue(t, s, &state.Commit{RunID: "shared", Entries: storetest.Entries(4, 1), Events: storetest.Events(1)})},
		queued{name: "gap", r: enqueue(t, s, &state.Commit{RunID: "g00", Entries: storetest.Entries(9, 1)}), conflict: true},
	)
	release()

	for _, q := range qs {
		err := <-q.r.done
		if got := errors.Is(err, state.ErrConflict); got != q.conflict || (err != nil && !q.conflict) {
			t.Errorf("%s: err %v, want conflict %v", q.name, err, q.conflict)
		}
	}
	st := s.Stats()
	commits, txs := st.Commits-before.Commits, st.Txs-before.Txs
	if commits != uint64(len(qs)-2) || st.Rejected-before.Rejected != 2 {
		t.Fatalf("commits %d rejected %d, want %d and 2", commits, st.Rejected-before.Rejected, len(qs)-2)
	}
	if txs > 2 {
		t.Fatalf("%d commits took %d transactions, want at most 2", len(qs), txs)
	}
	t.Logf("%d commits in %d transactions", len(qs), txs)

	entries, err := s.Entries(ctx, "shared", 0, 0)
	if err != nil || len(entries) != 4 {
		t.Fatalf("shared log: %d entries, err %v", len(entries), err)
	}
	events, _ := s.Events(ctx, "shared", 0, 0)
	if len(events) != 2 || events[1].Seq != 2 {
		t.Fatalf("shared events: %+v", events)
	}
	if g, _ := s.Entries(ctx, "g00", 0, 0); len(g) != 2 {
		t.Fatalf("g00 has %d entries, want 2", len(g))
	}
}
