package state

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/record"
	bolt "go.etcd.io/bbolt"
)

// TestLeaseExcludesOtherOwners: a second owner cannot claim a leased run
// until the lease is released or expires, nor renew a lease it does not
// hold; the holder renews by claiming again.
func TestLeaseExcludesOtherOwners(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	if _, err := s.Claim(ctx, "r1", "node-a", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, "r1", "node-b", time.Minute); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("claim by node-b: %v, want ErrLeaseHeld", err)
	}
	if _, err := s.Renew(ctx, "r1", "node-b", time.Minute); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("renew by node-b: %v, want ErrLeaseLost", err)
	}
	if _, err := s.Claim(ctx, "r1", "node-a", time.Minute); err != nil {
		t.Fatalf("claim again by the holder: %v", err)
	}
	if err := s.Release(ctx, "r1", "node-b"); err != nil { // not the holder: a no-op
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, "r1", "node-b", time.Minute); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("claim after a release by a non-holder: %v, want ErrLeaseHeld", err)
	}
	if err := s.Release(ctx, "r1", "node-a"); err != nil {
		t.Fatal(err)
	}
	l, err := s.Claim(ctx, "r1", "node-b", 50*time.Millisecond)
	if err != nil || l.Owner != "node-b" || l.RunID != "r1" {
		t.Fatalf("claim after release: %+v %v", l, err)
	}
	if _, err := s.Renew(ctx, "r1", "node-a", time.Minute); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("renew by the former holder: %v, want ErrLeaseLost", err)
	}
	// node-b's short lease expires; node-a may claim then, not before.
	if _, err := s.Claim(ctx, "r1", "node-a", time.Minute); !errors.Is(err, ErrLeaseHeld) && time.Now().Before(l.Expires) {
		t.Fatalf("claim before expiry: %v, want ErrLeaseHeld", err)
	}
	testkit.WaitFor(t, "node-b's lease to expire", func() bool {
		_, err := s.Claim(ctx, "r1", "node-a", time.Minute)
		return err == nil
	})
	if _, err := s.Renew(ctx, "r1", "node-b", time.Minute); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("renew of an expired lease another owner claimed: %v, want ErrLeaseLost", err)
	}
}

func TestLeaseBadArguments(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	tests := []struct {
		name, id, owner string
		ttl             time.Duration
	}{
		{"empty run id", "", "a", time.Second},
		{"empty owner", "r", "", time.Second},
		{"zero ttl", "r", "a", 0},
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

// snapshot is everything stored about a run, to compare before and after
// a refused commit.
func snapshot(t *testing.T, s *BoltStore, id string) string {
	t.Helper()
	ctx := context.Background()
	h, err := s.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	es, err := s.Entries(ctx, id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	ops, err := s.Ops(ctx, id, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := s.Events(ctx, id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal([]any{h, es, ops, evs})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCommitFencedByRevision: each head write bumps the revision (written
// back into the commit's head); a commit expecting an older revision
// fails with ErrFenced and writes nothing, whether or not it writes the
// head.
func TestCommitFencedByRevision(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	h := &Run{ID: "r1", Workflow: "w", Status: StatusRunning}
	mustCommit(t, s, &Commit{RunID: "r1", Run: h, Spec: &Spec{Task: "t"}})
	if h.Revision != 1 {
		t.Fatalf("revision after create = %d, want 1", h.Revision)
	}
	h2 := *h
	h2.Step, h2.Entries = 1, 1
	mustCommit(t, s, &Commit{RunID: "r1", ExpectRevision: 1, Run: &h2,
		Entries: []record.Entry{{Seq: 1, Type: "log", Data: json.RawMessage(`1`)}}})
	if h2.Revision != 2 {
		t.Fatalf("revision after a fenced commit = %d, want 2", h2.Revision)
	}
	// A commit without the head checks the revision and does not bump it.
	op := Op{ID: OpID("r1", 1, 0), RunID: "r1", Step: 1, Status: OpPending, Request: operations.NewBash("true", 0)}
	mustCommit(t, s, &Commit{RunID: "r1", ExpectRevision: 2, Ops: []Op{op}})
	if got, _ := s.Run(ctx, "r1"); got.Revision != 2 {
		t.Fatalf("stored revision = %d, want 2", got.Revision)
	}

	before, stats := snapshot(t, s, "r1"), s.Stats()
	stale := h2
	stale.Step, stale.Entries, stale.Phase = 2, 2, "zombie"
	done := op
	done.Status, done.Result = OpDone, &operations.Result{Kind: operations.KindBash, Bash: &operations.BashResult{Stdout: "zombie"}}
	for _, c := range []*Commit{
		{RunID: "r1", ExpectRevision: 1, Run: &stale, Entries: []record.Entry{{Seq: 2, Type: "log", Data: json.RawMessage(`2`)}},
			Events: []Event{{Type: "phase", Message: "zombie"}}},
		{RunID: "r1", ExpectRevision: 1, Ops: []Op{done}, Events: []Event{{Type: "op", Message: "zombie"}}},
		{RunID: "r1", ExpectRevision: 3, Run: &stale},
	} {
		err := s.Commit(ctx, c)
		if !errors.Is(err, ErrFenced) {
			t.Fatalf("commit expecting revision %d: %v, want ErrFenced", c.ExpectRevision, err)
		}
		if c.Events != nil && c.Events[0].Seq != 0 || stale.Revision != 2 {
			t.Fatal("a refused commit was given numbers")
		}
	}
	if after := snapshot(t, s, "r1"); after != before {
		t.Fatalf("refused commits wrote:\nbefore %s\nafter  %s", before, after)
	}
	if st := s.Stats(); st.Commits != stats.Commits || st.Bytes != stats.Bytes || st.Rejected != stats.Rejected+3 {
		t.Fatalf("stats %+v after refused commits, before %+v", st, stats)
	}
	if err := s.Commit(ctx, &Commit{RunID: "nosuch", ExpectRevision: 1, Run: &Run{ID: "nosuch", Status: StatusRunning}}); !errors.Is(err, ErrFenced) {
		t.Fatalf("commit expecting a revision of a run that does not exist: %v, want ErrFenced", err)
	}
}

// TestCommitFenceIsAtomic: of many concurrent commits expecting the same
// revision (batched into shared transactions), exactly one applies.
func TestCommitFenceIsAtomic(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	mustCommit(t, s, &Commit{RunID: "r1", Run: &Run{ID: "r1", Status: StatusRunning}})
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Commit(ctx, &Commit{RunID: "r1", ExpectRevision: 1, Run: &Run{ID: "r1", Status: StatusRunning, Step: uint64(i)}})
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ErrFenced):
			t.Fatalf("commit: %v", err)
		}
	}
	if h, _ := s.Run(ctx, "r1"); won != 1 || h.Revision != 2 {
		t.Fatalf("%d commits applied, revision %d; want 1 and 2", won, h.Revision)
	}
}

// TestHeadWithoutRevision: a head written before revisions existed reads
// as revision 0, takes unfenced commits, and gets revision 1 on its next
// write.
func TestHeadWithoutRevision(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	old := `{"schema":1,"id":"old","workflow":"w","status":"running","phase":"","next":"a","step":0,"num_ops":0,"usage":{},"limits":{},"entries":0,"work_dir":"/tmp","created_at":"2025-01-01T00:00:00Z","updated_at":"2025-01-01T00:00:00Z"}`
	if err := s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketUnfinished).Put([]byte("old"), nil); err != nil {
			return err
		}
		return tx.Bucket(bucketRuns).Put([]byte("old"), []byte(old))
	}); err != nil {
		t.Fatal(err)
	}
	h, err := s.Run(ctx, "old")
	if err != nil || h.Revision != 0 {
		t.Fatalf("old head: revision %d, %v", h.Revision, err)
	}
	h.Step = 1
	mustCommit(t, s, &Commit{RunID: "old", Run: &h})
	if got, _ := s.Run(ctx, "old"); h.Revision != 1 || got.Revision != 1 || got.Step != 1 {
		t.Fatalf("after a commit: written back %d, stored %+v", h.Revision, got)
	}
	for _, tt := range []struct {
		head string
		want uint64
	}{{old, 0}, {`{"schema":1,"revision":42,"id":"x"}`, 42}, {`{"id":"x","revision":7}`, 7}} {
		if got, err := headRevision([]byte(tt.head)); err != nil || got != tt.want {
			t.Fatalf("headRevision(%s) = %d, %v; want %d", tt.head, got, err, tt.want)
		}
	}
}

// BenchmarkFenceOverhead measures what fencing adds to a commit that
// writes a head: reading the stored revision and splicing the new one in.
func BenchmarkFenceOverhead(b *testing.B) {
	c := transitionCommit("run", 7)
	r, err := encodeCommit(c)
	if err != nil {
		b.Fatal(err)
	}
	stored := headWithRevision(r.head, 41)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		rev, err := headRevision(stored)
		if err != nil || rev != 41 {
			b.Fatal(rev, err)
		}
		_ = headWithRevision(r.head, rev+1)
	}
}
