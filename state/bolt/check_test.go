package bolt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/storetest"
)

// buildDB writes runs runs of steps transitions each into a new file and
// returns its path. Every other run ends.
func buildDB(tb testing.TB, runs, steps int) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "flock.db")
	s, err := Open(path, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	for r := 0; r < runs; r++ {
		id := fmt.Sprintf("run-%05d", r)
		for st := 1; st <= steps; st++ {
			c := storetest.Transition(id, uint64(st), 0)
			if st == 1 {
				c.Spec = &state.Spec{Task: "task " + id, Settings: []byte(`{"k":1}`)}
			}
			if st == steps && r%2 == 1 {
				c.Run.Status, c.Run.NumOps, c.Ops = state.StatusSucceeded, 0, nil
			}
			if err := s.Commit(ctx, c); err != nil {
				tb.Fatal(err)
			}
			if st > 1 { // finish the previous step's ops
				prev := storetest.Transition(id, uint64(st-1), 0).Ops
				for i := range prev {
					prev[i].Status = state.OpDone
				}
				if err := s.Commit(ctx, &state.Commit{RunID: id, Ops: prev}); err != nil {
					tb.Fatal(err)
				}
			}
		}
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// pageOf returns a reachable page of the given type ("branch" or "leaf")
// below the root of bucket, and the file's page size.
func pageOf(tb testing.TB, path, bucket, typ string) (int, int) {
	tb.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	found := -1
	err = db.View(func(tx *bbolt.Tx) error {
		root := int(tx.Bucket([]byte(bucket)).Root())
		var walk func(id int)
		walk = func(id int) {
			info, err := tx.Page(id)
			if err != nil || info == nil || found >= 0 {
				return
			}
			if info.Type == typ {
				found = id
				return
			}
			if info.Type == "branch" {
				// Children follow the branch in no fixed order: scan ids.
				for c := 2; c < int(tx.Size())/db.Info().PageSize && found < 0; c++ {
					if ci, _ := tx.Page(c); ci != nil && ci.Type == typ && c != root {
						found = c
					}
				}
			}
		}
		walk(root)
		return nil
	})
	if err != nil || found < 0 {
		tb.Fatalf("no %s page in bucket %s (%v)", typ, bucket, err)
	}
	return found, db.Info().PageSize
}

// corrupt copies src and damages the copy with fn.
func corrupt(tb testing.TB, src string, fn func(b []byte) []byte) string {
	tb.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	dst := filepath.Join(tb.TempDir(), "flock.db")
	if err := os.WriteFile(dst, fn(b), 0o600); err != nil {
		tb.Fatal(err)
	}
	return dst
}

func flip(b []byte, off, n int) {
	for i := off; i < off+n; i++ {
		b[i] ^= 0xA5
	}
}

// Corruptions applies each kind of damage the issue names to a copy of
// a real database and checks open, check and recover on it.
func TestCorruptDatabase(t *testing.T) {
	ctx := context.Background()
	src := buildDB(t, 60, 6)
	if rep, err := CheckFile(ctx, src); err != nil || !rep.OK() {
		t.Fatalf("intact file: %v %v", err, rep.Problems)
	}
	branch, ps := pageOf(t, src, "entries", "branch")
	leaf, _ := pageOf(t, src, "runs", "leaf")
	tests := []struct {
		name string
		fn   func(b []byte) []byte
	}{
		{"truncated to half", func(b []byte) []byte { return b[:len(b)/2/ps*ps] }},
		{"truncated to a non-page size", func(b []byte) []byte {
			// Cut inside the last page of the last transaction (the file
			// may extend past it: bbolt grows files in steps).
			hwm := int(max(le64(b[16+40:]), le64(b[ps+16+40:])))
			return b[:hwm*ps-1000]
		}},
		{"zeroed leaf page", func(b []byte) []byte { clear(b[leaf*ps : (leaf+1)*ps]); return b }},
		{"zeroed branch page", func(b []byte) []byte { clear(b[branch*ps : (branch+1)*ps]); return b }},
		{"flipped branch page", func(b []byte) []byte { flip(b, branch*ps+16, 40); return b }},
		{"flipped leaf page", func(b []byte) []byte { flip(b, leaf*ps+16, 40); return b }},
		{"flipped meta pages", func(b []byte) []byte { flip(b, 16, 8); flip(b, ps+16, 8); return b }},
		{"flipped newest meta page", func(b []byte) []byte {
			// The meta page of the last transaction is the one with the
			// higher txid (offset 16+48 in the page).
			m0, m1 := le64(b[16+48:]), le64(b[ps+16+48:])
			if m0 > m1 {
				flip(b, 16+40, 4)
			} else {
				flip(b, ps+16+40, 4)
			}
			return b
		}},
		{"garbage", func(b []byte) []byte { return []byte(strings.Repeat("not a database ", 300)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := corrupt(t, src, tt.fn)
			s, err := Open(path, Options{})
			if err == nil {
				s.Close()
				t.Fatal("damaged file opened")
			}
			if !errors.Is(err, state.ErrCorrupt) || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("open error %q: want one line wrapping ErrCorrupt naming the file", err)
			}
			rep, err := CheckFile(ctx, path)
			if err != nil || rep.OK() {
				t.Fatalf("check: %v, problems %v", err, rep)
			}
			to := filepath.Join(t.TempDir(), "recovered.db")
			rrep, err := RecoverFile(ctx, path, to)
			if tt.name == "flipped meta pages" || tt.name == "garbage" {
				if err == nil {
					t.Fatal("recovered a file without a meta page")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("recovered %d runs, %d dropped, %d with losses; damage: %v", rrep.Runs, len(rrep.Dropped), len(rrep.Lost), rrep.Damage)
			if len(rrep.Damage) == 0 {
				t.Fatal("recover reported no damage")
			}
			if !strings.HasPrefix(tt.name, "truncated") && rrep.Runs == 0 {
				t.Fatal("nothing recovered")
			}
			// The recovered file opens and serves.
			s, err = Open(to, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			runs, _, err := s.Runs(ctx, state.RunFilter{Limit: 1000})
			if err != nil || len(runs) != rrep.Runs {
				t.Fatalf("runs in recovered file: %d (%v), report says %d", len(runs), err, rrep.Runs)
			}
			for _, r := range runs {
				if _, err := s.Entries(ctx, r.ID, 0, 0); err != nil {
					t.Fatal(err)
				}
				if _, err := s.StepOps(ctx, r.ID, r.Step); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Unfinished(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := RecoverFile(ctx, path, to); err == nil || !strings.Contains(err.Error(), "already exists") {
				t.Fatalf("recover over an existing file: %v", err)
			}
		})
	}
}

func le64(b []byte) uint64 {
	var x uint64
	for i := 7; i >= 0; i-- {
		x = x<<8 | uint64(b[i])
	}
	return x
}

// TestRecoverIntactKeepsEverything recovers an undamaged file: every run,
// entry and op is there, unchanged.
func TestRecoverIntactKeepsEverything(t *testing.T) {
	ctx := context.Background()
	src := buildDB(t, 20, 4)
	to := filepath.Join(t.TempDir(), "copy.db")
	rep, err := RecoverFile(ctx, src, to)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Runs != 20 || len(rep.Lost)+len(rep.Dropped)+len(rep.Damage)+len(rep.Other) != 0 {
		t.Fatalf("report %+v", rep)
	}
	a, err := Open(src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(to, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ra, _, _ := a.Runs(ctx, state.RunFilter{Limit: 100})
	rb, _, _ := b.Runs(ctx, state.RunFilter{Limit: 100})
	if js(ra) != js(rb) {
		t.Fatal("heads differ")
	}
	for _, r := range ra {
		oa, _ := a.Ops(ctx, r.ID, "", 0)
		ob, _ := b.Ops(ctx, r.ID, "", 0)
		ea, _ := a.Entries(ctx, r.ID, 0, 0)
		eb, _ := b.Entries(ctx, r.ID, 0, 0)
		if js(oa) != js(ob) || js(ea) != js(eb) || len(ea) != 4 {
			t.Fatalf("run %s differs", r.ID)
		}
	}
	ua, _ := a.Unfinished(ctx)
	ub, _ := b.Unfinished(ctx)
	if len(ua) != 10 || js(ua) != js(ub) {
		t.Fatalf("unfinished %d vs %d", len(ua), len(ub))
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// BenchmarkStartupCheck measures what start-up reads of a database of
// 10,000 runs of 10 transitions each: the structural walk that precedes
// bbolt (preflight), the whole Open, and the offline CheckFile.
func BenchmarkStartupCheck(b *testing.B) {
	path := filepath.Join(b.TempDir(), "flock.db")
	s, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	const runs, steps, workers = 10000, 10, 64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := w; r < runs; r += workers {
				id := fmt.Sprintf("run-%05d", r)
				for st := 1; st <= steps; st++ {
					c := storetest.Transition(id, uint64(st), 0)
					if st == 1 {
						c.Spec = &state.Spec{Task: "task " + id, Settings: []byte(`{"k":1}`)}
					}
					if err := s.Commit(ctx, c); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	fi, _ := os.Stat(path)
	b.Logf("%d runs × %d transitions: %.0f MiB", runs, steps, float64(fi.Size())/(1<<20))
	b.Run("preflight", func(b *testing.B) {
		for b.Loop() {
			if err := preflight(path); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Open", func(b *testing.B) {
		for b.Loop() {
			s, err := Open(path, Options{})
			if err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
	})
	b.Run("CheckFile", func(b *testing.B) {
		for b.Loop() {
			rep, err := CheckFile(ctx, path)
			if err != nil || !rep.OK() {
				b.Fatal(err, rep.Problems)
			}
		}
	})
}
