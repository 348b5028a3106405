package cli

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/workflows"
	bolt "go.etcd.io/bbolt"
)

// realDataDir runs n script runs through the executor into a new data
// directory, leaves one more run paused (unfinished), and returns the
// directory.
func realDataDir(t *testing.T, n int) string {
	t.Helper()
	data := t.TempDir()
	ctx := context.Background()
	a, err := app.Open(ctx, configs.Server{DataDir: data, Mode: "simulated"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	settings, err := os.ReadFile("../configs/examples/script.json")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := 0; i < n; i++ {
		h, err := a.Executor.StartRun(ctx, workflows.StartRequest{Workflow: "script", Task: "task", Settings: settings})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, h.ID)
	}
	for _, id := range ids {
		if _, err := a.Executor.Wait(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return data
}

// boltPage returns a reachable page of type typ ("branch" or "leaf") that
// is not a bucket's root, and the page size.
func boltPage(t *testing.T, path, typ string) (int, int) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ps, found := db.Info().PageSize, -1
	_ = db.View(func(tx *bolt.Tx) error {
		for id := 3; id < int(tx.Size())/ps && found < 0; id++ {
			if info, err := tx.Page(id); err == nil && info != nil && info.Type == typ {
				found = id
			}
		}
		return nil
	})
	if found < 0 {
		t.Fatalf("no %s page in %s", typ, path)
	}
	return found, ps
}

// damagedCopy copies data's flock.db into a new data directory (with the
// same runs/ entries) and damages it with fn.
func damagedCopy(t *testing.T, data string, fn func(b []byte) []byte) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(data, "flock.db"))
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dst, "runs", "some-run"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "flock.db"), fn(b), 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestDatabaseCorruptions damages copies of a real database in each of
// the ways the issue names and drives serve, db check and db recover
// through the command line on each.
func TestDatabaseCorruptions(t *testing.T) {
	data := realDataDir(t, 40)
	db := filepath.Join(data, "flock.db")
	if code, out, errs := run(t, "db", "check", "--data", data); code != 0 || !strings.Contains(out, "ok (40 runs") {
		t.Fatalf("intact: exit %d\n%s\n%s", code, out, errs)
	}
	branch, ps := boltPage(t, db, "branch")
	leaf, _ := boltPage(t, db, "leaf")
	meta := func(b []byte) (newest int, hwm int) {
		t0, t1 := binary.LittleEndian.Uint64(b[16+48:]), binary.LittleEndian.Uint64(b[ps+16+48:])
		h0, h1 := binary.LittleEndian.Uint64(b[16+40:]), binary.LittleEndian.Uint64(b[ps+16+40:])
		if t0 > t1 {
			return 0, int(h0)
		}
		return 1, int(h1)
	}
	flip := func(b []byte, off, n int) []byte {
		for i := off; i < off+n; i++ {
			b[i] ^= 0x5A
		}
		return b
	}
	tests := []struct {
		name      string
		fn        func(b []byte) []byte
		recovered bool // db recover keeps runs
	}{
		{"truncated to half", func(b []byte) []byte { return b[:len(b)/2/ps*ps] }, false},
		{"truncated to a non-page size", func(b []byte) []byte { _, hwm := meta(b); return b[:hwm*ps-777] }, false},
		{"zeroed page", func(b []byte) []byte { clear(b[leaf*ps : (leaf+1)*ps]); return b }, true},
		{"flipped branch page", func(b []byte) []byte { return flip(b, branch*ps+16, 48) }, true},
		{"flipped leaf page", func(b []byte) []byte { return flip(b, leaf*ps+20, 32) }, true},
		{"flipped meta page", func(b []byte) []byte { m, _ := meta(b); return flip(b, m*ps+16+8, 4) }, true},
		{"flipped both meta pages", func(b []byte) []byte { return flip(flip(b, 16, 8), ps+16, 8) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := damagedCopy(t, data, tt.fn)
			file := filepath.Join(dir, "flock.db")
			code, out, errs := run(t, "serve", "--addr", "127.0.0.1:0", "--data", dir)
			lines := strings.Split(strings.TrimSpace(errs), "\n")
			if code != 1 || len(lines) != 1 || !strings.Contains(errs, file) || !strings.Contains(errs, "database is damaged") ||
				!strings.Contains(errs, "flock db recover") || strings.Contains(errs, "panic") {
				t.Fatalf("serve: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
			code, out, errs = run(t, "db", "check", "--data", dir)
			if code != 1 || !strings.Contains(out, "problems") {
				t.Fatalf("check: exit %d\n%s\n%s", code, out, errs)
			}
			to := filepath.Join(t.TempDir(), "recovered.db")
			code, out, errs = run(t, "db", "recover", "--db", file, "--to", to)
			if !tt.recovered && code != 0 {
				return // nothing readable (reported)
			}
			if code != 0 || !strings.Contains(out, "recovered ") {
				t.Fatalf("recover: exit %d\n%s\n%s", code, out, errs)
			}
			t.Logf("recover:\n%s", out)
			if tt.recovered && strings.Contains(out, "recovered 0 runs") {
				t.Fatalf("recover kept no run:\n%s", out)
			}
			if code, out, errs := run(t, "db", "check", "--db", to); code != 0 {
				t.Fatalf("check recovered: exit %d\n%s\n%s", code, out, errs)
			}
			if code, _, errs := run(t, "db", "recover", "--db", file, "--to", to); code != 1 || !strings.Contains(errs, "already exists") {
				t.Fatalf("recover over an existing file: exit %d %s", code, errs)
			}
			// Put the recovered file in place: the data directory serves again.
			if err := os.Rename(to, file); err != nil {
				t.Fatal(err)
			}
			code, out, errs = run(t, "run", "--settings", "../configs/examples/script.json", "--data", dir)
			if code != 0 || !strings.Contains(out, "succeeded") {
				t.Fatalf("run on the recovered file: exit %d\n%s\n%s", code, out, errs)
			}
		})
	}
}

// TestNewStoreRequired: a data directory with run directories but an
// empty or missing database refuses to start without --new-store.
func TestNewStoreRequired(t *testing.T) {
	data := realDataDir(t, 1)
	for _, tt := range []struct {
		name, want string
		fn         func(path string) error
	}{
		{"empty", "empty (0 bytes)", func(p string) error { return os.Truncate(p, 0) }},
		{"missing", "is missing", os.Remove},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := damagedCopy(t, data, func(b []byte) []byte { return b })
			file := filepath.Join(dir, "flock.db")
			if err := tt.fn(file); err != nil {
				t.Fatal(err)
			}
			code, _, errs := run(t, "serve", "--addr", "127.0.0.1:0", "--data", dir)
			if code != 1 || !strings.Contains(errs, file) || !strings.Contains(errs, tt.want) || !strings.Contains(errs, "--new-store") {
				t.Fatalf("serve: exit %d: %s", code, errs)
			}
			code, _, errs = run(t, "run", "--settings", "../configs/examples/script.json", "--data", dir)
			if code != 1 || !strings.Contains(errs, "--new-store") {
				t.Fatalf("run: exit %d: %s", code, errs)
			}
			cfg := filepath.Join(t.TempDir(), "server.json")
			if err := os.WriteFile(cfg, []byte(`{"new_store": true}`), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errs := run(t, "--config", cfg, "--workflow", "script", "--settings", "../configs/examples/script.json",
				"--addr", "127.0.0.1:0", "--data", dir, "--exit", "--log-level", "warn")
			if code != 0 || !strings.Contains(out, "succeeded") {
				t.Fatalf("launch with new_store in --config: exit %d\n%s\n%s", code, out, errs)
			}
			if err := tt.fn(file); err != nil {
				t.Fatal(err)
			}
			code, out, errs = run(t, "run", "--new-store", "--settings", "../configs/examples/script.json", "--data", dir)
			if code != 0 || !strings.Contains(out, "succeeded") {
				t.Fatalf("run --new-store: exit %d\n%s\n%s", code, out, errs)
			}
		})
	}
}
