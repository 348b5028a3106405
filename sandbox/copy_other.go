//go:build !linux

package sandbox

import (
	"context"
	"io"
	"io/fs"
	"os"
)

// copyData copies the size bytes of in into out and returns the bytes it
// wrote; past budget bytes it stops with ErrWorkspaceTooLarge. Holes are
// kept on Linux only (copy_linux.go).
func copyData(_ context.Context, in, out *os.File, size, budget int64) (int64, error) {
	if size > budget {
		return 0, ErrWorkspaceTooLarge
	}
	n, err := io.CopyN(out, in, size)
	if err == io.EOF {
		err = nil
	}
	return n, err
}

// diskUsage is the disk a file takes: its size where blocks are not known.
func diskUsage(info fs.FileInfo) int64 { return info.Size() }
