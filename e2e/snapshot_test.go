package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
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

// TestSnapshotDeltasKill9 kills the server (SIGKILL) at varied moments
// while a script changes a few files of a work directory of 300 per step,
// so that kills fall while contents are stored, while a manifest's delta
// is appended and between those and the step's commit; after restarts the
// run ends, its manifests are mostly deltas (far smaller than whole ones),
// and a fork at any step restores that step's work directory exactly:
// each fork, running the script's remaining commands (each idempotent),
// ends with the source's work directory, files, modes and links.
func TestSnapshotDeltasKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	data, addr := t.TempDir(), freePort(t)
	const steps = 41
	cmds := []string{"for i in $(seq 300); do echo init > f$i; done"}
	for i := 1; i < steps; i++ {
		c := fmt.Sprintf("echo %d > s%d; echo %d > f%d; ", i, i, i, i*7%300+1)
		switch {
		case i%4 == 0:
			c += fmt.Sprintf("rm -f s%d; ", i-2)
		case i%5 == 0:
			c += fmt.Sprintf("chmod 600 s%d; ", i-1)
		case i%3 == 0:
			c += fmt.Sprintf("ln -sfn s%d link; ", i)
		}
		cmds = append(cmds, c+"sleep 0.05")
	}
	p := startServer(t, data, addr)
	id := p.start("script", map[string]any{"commands": cmds})
	for _, d := range []time.Duration{150, 420, 60, 610, 260, 330} {
		time.Sleep(d * time.Millisecond)
		p.kill()
		before := journaled(t, data, []string{id})
		p = startServer(t, data, addr)
		if before[0] >= 0 {
			waitProgress(t, p, []string{id}, before)
		}
	}
	if h := waitEnded(t, p, id, 120*time.Second); h.Status != "succeeded" {
		t.Fatalf("source %s %s\n%s", h.Status, h.Error, p.out.String())
	}
	want := testkit.Tree(t, filepath.Join(data, "runs", id))
	again := 0
	for _, op := range p.ops(id) {
		if op.Attempts > 1 {
			again++
		}
	}
	t.Logf("%d of %d commands ran again after a kill", again, steps)

	var logBytes, fullBytes int64
	var fulls int
	snaps := filepath.Join(data, "runs", ".snapshots", "runs", id)
	names, _ := os.ReadDir(snaps)
	for _, n := range names {
		info, err := n.Info()
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Ext(n.Name()) {
		case ".log":
			logBytes += info.Size()
		case ".json":
			fullBytes += info.Size()
			fulls++
		}
	}
	t.Logf("%d whole manifests (%d bytes), %d bytes of deltas", fulls, fullBytes, logBytes)
	if fulls > 7 || logBytes == 0 || logBytes > fullBytes {
		t.Errorf("the run wrote %d whole manifests (%d bytes) and %d bytes of deltas over %d steps and 6 kills: want mostly deltas",
			fulls, fullBytes, logBytes, steps)
	}

	ctx := context.Background()
	forks := map[uint64]string{}
	for _, step := range []uint64{1, 2, 5, 11, 16, 23, 30, 37, steps} {
		f, err := p.c.Fork(ctx, id, api.ForkRequest{Step: step})
		if err != nil || len(f.Warnings) > 0 {
			t.Fatalf("fork at %d: %v %q", step, err, f.Warnings)
		}
		forks[step] = f.RunID
	}
	for step, f := range forks {
		if h := waitEnded(t, p, f, 120*time.Second); h.Status != "succeeded" {
			t.Fatalf("fork at %d: %s %s", step, h.Status, h.Error)
		}
		got := testkit.Tree(t, filepath.Join(data, "runs", f))
		var diff []string
		paths := maps.Clone(want)
		maps.Copy(paths, got)
		for p := range paths {
			if got[p] != want[p] {
				diff = append(diff, fmt.Sprintf("%s: %s, want %s", p, cmp.Or(got[p], "(none)"), cmp.Or(want[p], "(none)")))
			}
		}
		if len(diff) > 0 {
			sort.Strings(diff)
			t.Errorf("fork at %d ends with a work directory other than the source's: %s", step, strings.Join(diff, "; "))
		}
	}
}
