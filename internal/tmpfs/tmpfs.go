// Package tmpfs gives tests a real, small filesystem that fills up: a
// tmpfs mounted on a temporary directory, and a filler that takes all of
// its free space until released. It needs root (or CAP_SYS_ADMIN); tests
// that use it are skipped where mounting is not allowed.
package tmpfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of size bytes on a new directory and unmounts it
// at cleanup. It skips the test when the mount is not permitted.
func Mount(tb testing.TB, size int64) string {
	tb.Helper()
	dir := tb.TempDir()
	opts := fmt.Sprintf("size=%d,mode=0755", size)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		tb.Skipf("cannot mount a tmpfs to fill (needs root): %v", err)
	}
	tb.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			tb.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// Fill writes a file in dir until the filesystem is full and returns a
// function that deletes it, freeing the space. The filler is also removed
// at cleanup.
func Fill(tb testing.TB, dir string) (free func()) {
	tb.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		tb.Fatalf("create filler: %v", err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				f.Close()
				tb.Fatalf("fill %s: %v", dir, err)
			}
			break
		}
	}
	// Take the last partial blocks too.
	for _, n := range []int{4096, 512, 1} {
		for {
			if _, err := f.Write(chunk[:n]); err != nil {
				break
			}
		}
	}
	if err := f.Close(); err != nil && !errors.Is(err, syscall.ENOSPC) {
		tb.Fatalf("close filler: %v", err)
	}
	freed := false
	free = func() {
		if freed {
			return
		}
		freed = true
		if err := os.Remove(path); err != nil {
			tb.Errorf("remove filler: %v", err)
		}
	}
	tb.Cleanup(free)
	return free
}
