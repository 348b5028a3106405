package bolt

import (
	"context"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/storetest"
)

// The lease and fencing behaviours every Store shares are in the contract
// suite (package storetest, run by TestBoltContract).

// TestHeadWithoutRevision: a head written before revisions existed reads
// as revision 0, takes unfenced commits, and gets revision 1 on its next
// write.
func TestHeadWithoutRevision(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	old := `{"schema":1,"id":"old","workflow":"w","status":"running","phase":"","next":"a","step":0,"num_ops":0,"usage":{},"limits":{},"entries":0,"work_dir":"/tmp","created_at":"2025-01-01T00:00:00Z","updated_at":"2025-01-01T00:00:00Z"}`
	if err := s.db.Update(func(tx *bbolt.Tx) error {
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
	storetest.MustCommit(t, s, &state.Commit{RunID: "old", Run: &h})
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
	c := storetest.Transition("run", 7, 0)
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
