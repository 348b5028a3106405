// Package sparse copies and reads files that have holes without filling
// them in: a file made with `truncate -s 1T` takes no disk, and a copy of
// it must take none either, nor a reader spend its time on the zeros.
// The sandbox's session forks and the executor's work-dir snapshots both
// copy through it.
package sparse

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
)

// ErrOverBudget is returned by Copy and CopyFile when the file holds more
// data than the budget they were given.
var ErrOverBudget = errors.New("more data than the budget")

// Extent is a run of data, bytes [Off, Off+Len) of a file. The bytes
// between a file's extents are holes: they read as zeros and take no disk.
type Extent struct {
	Off, Len int64
}

// Copy copies the size bytes of in into out, which is empty, and returns
// the bytes of data it wrote. It first asks for a reflink (Linux's
// FICLONE: the file systems that share blocks copy nothing); otherwise it
// copies only the data extents (Extents; in kernel, with copy_file_range,
// where the platform has it) and leaves the holes as holes. Past budget
// bytes of data it stops with ErrOverBudget. A file that shrinks during
// the copy ends it with io.ErrUnexpectedEOF.
func Copy(ctx context.Context, in, out *os.File, size, budget int64) (int64, error) {
	if size == 0 {
		return 0, nil
	}
	if clone(in, out) {
		return 0, nil
	}
	var written int64
	for ext, err := range Extents(in, size) {
		if err != nil {
			return written, err
		}
		if err := ctx.Err(); err != nil {
			return written, err
		}
		if written+ext.Len > budget {
			return written, ErrOverBudget
		}
		if _, err := in.Seek(ext.Off, io.SeekStart); err != nil {
			return written, err
		}
		if _, err := out.Seek(ext.Off, io.SeekStart); err != nil {
			return written, err
		}
		n, err := io.CopyN(out, in, ext.Len)
		written += n
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return written, err
		}
	}
	// The file ends where the source does, a trailing hole included.
	return written, out.Truncate(size)
}

// CopyFile copies the regular file from into the new file to (created
// exclusively, with from's permissions) with Copy and returns the bytes of
// data it wrote.
func CopyFile(ctx context.Context, from, to string, budget int64) (int64, error) {
	in, err := os.Open(from)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return 0, err
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
	if err != nil {
		return 0, err
	}
	n, err := Copy(ctx, in, out, info.Size(), budget)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// DiskUsage is the disk a file takes: its allocated blocks, where the
// platform reports them (the holes of a sparse file count for nothing),
// else its size.
func DiskUsage(info fs.FileInfo) int64 { return diskUsage(info) }
