package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/internal/testkit"
)

// TestSnapshotBoundsThroughTheBinary is the attack of the work-dir
// snapshots through the real binary: a run's bash makes a 16 GB sparse
// file (`truncate -s`, 5 bytes of data) and a file over the server
// settings' snapshots.max_file_bytes. The snapshot store keeps the holes
// (it takes a few KiB), `flock runs fork` prints a warning naming the file
// it could not restore, and the fork's work directory holds the sparse
// file, sparse, with its data.
func TestSnapshotBoundsThroughTheBinary(t *testing.T) {
	var fsst syscall.Statfs_t
	if err := syscall.Statfs(os.TempDir(), &fsst); err != nil || fsst.Bavail*uint64(fsst.Bsize) < 2<<30 {
		t.Skipf("want 2 GiB free in %s (%v): a regression would write the sparse file's holes", os.TempDir(), err)
	}
	data := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "server.yaml")
	if err := os.WriteFile(cfg, []byte("snapshots:\n  max_file_bytes: 1048576\n  max_run_bytes: 33554432\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startServer(t, data, freePort(t), "--mode", "simulated", "--config", cfg)
	ctx := context.Background()
	settings, _ := json.Marshal(map[string]any{"commands": []string{
		"truncate -s 16G big.img && printf hello | dd of=big.img bs=1 seek=5000000000 conv=notrunc status=none",
		"head -c 2000000 /dev/urandom > blob.bin",
		"echo done > small.txt",
	}})
	st, err := p.c.Start(ctx, api.StartRequest{Workflow: "script", Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	var r api.Run
	testkit.WaitWithin(t, 60*time.Second, "the script's end", func() bool {
		r, err = p.c.Run(ctx, st.RunID)
		return err == nil && r.Status != "running"
	})
	if r.Status != "succeeded" {
		t.Fatalf("script: %s %s", r.Status, r.Error)
	}
	var store int64
	filepath.WalkDir(filepath.Join(data, "runs", ".snapshots"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			info, _ := d.Info()
			store += info.Sys().(*syscall.Stat_t).Blocks * 512
		}
		return nil
	})
	if store > 1<<20 {
		t.Fatalf("the snapshot store takes %d bytes", store)
	}

	code, out, errs := flock(t, "runs", "fork", st.RunID, "--step", "3", "--server", p.base)
	if code != 0 || !strings.Contains(errs, "warning:") || !strings.Contains(errs, "blob.bin (too large") {
		t.Fatalf("fork: %d %q %q", code, out, errs)
	}
	fork := strings.TrimSpace(out)
	testkit.WaitWithin(t, 60*time.Second, "the fork's end", func() bool {
		r, err = p.c.Run(ctx, fork)
		return err == nil && r.Status != "running"
	})
	if r.Status != "succeeded" {
		t.Fatalf("fork: %s %s", r.Status, r.Error)
	}
	dir := filepath.Join(data, "runs", fork)
	info, err := os.Stat(filepath.Join(dir, "big.img"))
	if err != nil {
		t.Fatal(err)
	}
	if disk := info.Sys().(*syscall.Stat_t).Blocks * 512; info.Size() != 16<<30 || disk > 1<<20 {
		t.Fatalf("the fork's big.img: %d bytes, %d on disk", info.Size(), disk)
	}
	f, err := os.Open(filepath.Join(dir, "big.img"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 5)
	if _, err := f.ReadAt(b, 5000000000); err != nil || string(b) != "hello" {
		t.Fatalf("the fork's big.img data %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "blob.bin")); !os.IsNotExist(err) {
		t.Fatalf("the fork has a blob.bin: %v", err)
	}
}
