//go:build !linux

package sandbox

import (
	"context"
	"io"
	"io/fs"
	"os"
)

// copySparse copies the regular file from into the new file to (mode
// kept) and returns the bytes it wrote; past budget bytes it stops with
// ErrWorkspaceTooLarge. Holes are kept on Linux only (copy_linux.go).
func copySparse(ctx context.Context, from, to string, budget int64) (int64, error) {
	in, err := os.Open(from)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return 0, err
	}
	if info.Size() > budget {
		return 0, ErrWorkspaceTooLarge
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
	if err != nil {
		return 0, err
	}
	n, err := io.CopyN(out, in, info.Size())
	if err == io.EOF {
		err = nil
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// diskUsage is the disk a file takes: its size where blocks are not known.
func diskUsage(info fs.FileInfo) int64 { return info.Size() }
