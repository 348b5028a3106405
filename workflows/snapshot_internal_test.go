package workflows

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// storeOf stores the file rel of dir as a snapshot does, in an object
// store of its own, and returns what storeObject answered and the
// contents the store then holds.
func storeOf(t *testing.T, dir, rel string) (hash, skipped string, objects []string) {
	t.Helper()
	e := &Executor{cfg: Config{RunsDir: t.TempDir()}}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	hash, skipped = e.storeObject(context.Background(), root, rel, &snapBudget{file: 1 << 20, left: 1 << 20})
	filepath.WalkDir(e.snapRoot(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			objects = append(objects, string(b))
		}
		return nil
	})
	return hash, skipped, objects
}

// TestStoreObjectFIFO: a file the walk saw as regular and the run then
// swapped for a FIFO is passed over; the open does not wait for a writer
// (which would stall the run's step for good).
func TestStoreObjectFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if hash, skipped, objects := storeOf(t, dir, "pipe"); hash != "" || skipped != "" || len(objects) != 0 {
		t.Fatalf("a FIFO: hash %q, skipped %q, %d objects", hash, skipped, len(objects))
	}
}

// TestStoreObjectStaysInWorkDir: a file or a directory the run swapped for
// a symbolic link out of its work directory (to the server's store, say)
// after the walk saw it is not read: the snapshot would otherwise copy it
// into the store, and a fork into a work directory the run reads.
func TestStoreObjectStaysInWorkDir(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "flock.db"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(outside, "flock.db"), filepath.Join(dir, "file")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "sub")); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"file", "sub/flock.db"} {
		hash, skipped, objects := storeOf(t, dir, rel)
		if hash != "" || !strings.HasPrefix(skipped, skipFailed) || len(objects) != 0 {
			t.Errorf("%s: hash %q, skipped %q, stored %q", rel, hash, skipped, objects)
		}
	}
}

// BenchmarkSnapshotStep is the snapshot of one step of a run whose work
// directory holds 1,000 files of 4 KiB, one of them rewritten per step:
// the walk, the one file's content stored, the manifest written (the
// first, full snapshot is taken before the timer starts). bench's
// SnapshotStep measures the same through the executor and a shell, and a
// sparse file.
//
// It reports the bytes of manifest a step writes, and the disk they take.
//
//	go test -run XXX -bench SnapshotStep ./workflows
func BenchmarkSnapshotStep(b *testing.B) {
	dir := b.TempDir()
	thousandFiles(b, dir)
	r := snapRunner(b, dir)
	snapStep(b, r) // the first snapshot stores every file; the loop measures the next ones
	size0, disk0 := snapJournal(b, r)
	steps := 0
	for b.Loop() {
		if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(steps%1000)), []byte(strconv.Itoa(steps)), 0o644); err != nil {
			b.Fatal(err)
		}
		snapStep(b, r)
		steps++
	}
	size, disk := snapJournal(b, r)
	b.ReportMetric(float64(size-size0)/float64(steps), "manifest-B/step")
	b.ReportMetric(float64(disk-disk0)/float64(steps), "manifest-disk-B/step")
}
