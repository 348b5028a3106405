package sparse_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/flockrun/flock/internal/sparse"
)

// holey makes a file of size bytes apparent size holding data at each
// offset of at, and returns its path.
func holey(t *testing.T, size int64, data []byte, at ...int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "holey")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, off := range at {
		if _, err := f.WriteAt(data, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	return p
}

func stat(t *testing.T, p string) (size, disk int64) {
	t.Helper()
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size(), sparse.DiskUsage(info)
}

// TestCopyFileKeepsHoles: a 16 GB file with two 64 KiB runs of data
// copies to a file of the same size and content that takes about the
// disk of its data, not its size.
func TestCopyFileKeepsHoles(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("holes are kept on Linux only")
	}
	data := bytes.Repeat([]byte("flock"), 64<<10/5)
	src := holey(t, 16<<30, data, 1<<20, 9<<30)
	dst := filepath.Join(t.TempDir(), "copy")
	n, err := sparse.CopyFile(context.Background(), src, dst, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	size, disk := stat(t, dst)
	if size != 16<<30 || disk > 4<<20 || n > 4<<20 {
		t.Fatalf("copy: %d bytes, %d on disk, %d written; want 16 GiB and the holes kept", size, disk, n)
	}
	f, err := os.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, off := range []int64{1 << 20, 9 << 30} {
		got := make([]byte, len(data))
		if _, err := f.ReadAt(got, off); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("data at %d: %v", off, err)
		}
	}
	zero := make([]byte, 4096)
	if _, err := f.ReadAt(zero, 5<<30); err != nil || !bytes.Equal(zero, make([]byte, 4096)) {
		t.Fatalf("hole at 5 GiB: %v", err)
	}
}

// TestCopyBudget: a copy stops with ErrOverBudget once the data would
// pass the budget; holes do not count.
func TestCopyBudget(t *testing.T) {
	src := holey(t, 8<<30, make([]byte, 200000), 0)
	_, err := sparse.CopyFile(context.Background(), src, filepath.Join(t.TempDir(), "a"), 100000)
	if !errors.Is(err, sparse.ErrOverBudget) {
		t.Fatalf("copy over budget: %v", err)
	}
	if runtime.GOOS != "linux" {
		return
	}
	if _, err := sparse.CopyFile(context.Background(), src, filepath.Join(t.TempDir(), "b"), 1<<20); err != nil {
		t.Fatalf("copy within budget: %v", err)
	}
}

// TestExtents lists where the data is; a dense file is one extent, an
// empty one none.
func TestExtents(t *testing.T) {
	extents := func(p string) []sparse.Extent {
		t.Helper()
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		info, _ := f.Stat()
		var out []sparse.Extent
		for e, err := range sparse.Extents(f, info.Size()) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, e)
		}
		return out
	}
	dense := holey(t, 10000, bytes.Repeat([]byte{7}, 10000), 0)
	if got := extents(dense); !slices.Equal(got, []sparse.Extent{{0, 10000}}) {
		t.Errorf("dense: %v", got)
	}
	if got := extents(holey(t, 0, nil)); len(got) != 0 {
		t.Errorf("empty: %v", got)
	}
	if runtime.GOOS != "linux" {
		return
	}
	// Data at 1 MiB and 3 MiB of a 1 GiB file: block-aligned extents
	// around each, the rest holes.
	p := holey(t, 1<<30, bytes.Repeat([]byte{1}, 8192), 1<<20, 3<<20)
	got := extents(p)
	var total int64
	for _, e := range got {
		total += e.Len
	}
	if len(got) != 2 || got[0].Off != 1<<20 || got[1].Off != 3<<20 || total > 1<<20 {
		t.Fatalf("sparse: %v", got)
	}
	// Reading the extents gives back the file's data.
	f, _ := os.Open(p)
	defer f.Close()
	b := make([]byte, got[1].Len)
	if _, err := io.ReadFull(io.NewSectionReader(f, got[1].Off, got[1].Len), b); err != nil || b[0] != 1 {
		t.Errorf("read extent: %v", err)
	}
}
