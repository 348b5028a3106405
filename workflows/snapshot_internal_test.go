package workflows

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
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
