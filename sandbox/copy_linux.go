package sandbox

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// copyData copies the size bytes of in into out, which is empty, and
// returns the bytes of data it wrote. It first asks for a reflink
// (FICLONE: the file systems that share blocks copy nothing); otherwise it
// copies only the data extents SEEK_DATA and SEEK_HOLE report, in kernel
// (copy_file_range), and leaves the holes as holes. Past budget bytes of
// data it stops with ErrWorkspaceTooLarge.
func copyData(ctx context.Context, in, out *os.File, size, budget int64) (int64, error) {
	if size == 0 {
		return 0, nil
	}
	if err := unix.IoctlFileClone(int(out.Fd()), int(in.Fd())); err == nil {
		return 0, nil
	}
	var written int64
	for off := int64(0); off < size; {
		if err := ctx.Err(); err != nil {
			return written, err
		}
		data, err := unix.Seek(int(in.Fd()), off, unix.SEEK_DATA)
		switch {
		case errors.Is(err, syscall.ENXIO):
			off = size // only a hole is left
			continue
		case errors.Is(err, syscall.EINVAL):
			data = off // no SEEK_DATA here: all of it is data
		case err != nil:
			return written, &fs.PathError{Op: "seek", Path: in.Name(), Err: err}
		}
		hole, err := unix.Seek(int(in.Fd()), data, unix.SEEK_HOLE)
		if err != nil {
			hole = size
		}
		hole = min(hole, size)
		if written+(hole-data) > budget {
			return written, ErrWorkspaceTooLarge
		}
		if _, err := in.Seek(data, io.SeekStart); err != nil {
			return written, err
		}
		if _, err := out.Seek(data, io.SeekStart); err != nil {
			return written, err
		}
		n, err := io.CopyN(out, in, hole-data)
		written += n
		if err != nil {
			return written, err
		}
		off = hole
	}
	// The file ends where the source does, a trailing hole included.
	return written, out.Truncate(size)
}

// diskUsage is the disk a file takes: its allocated blocks.
func diskUsage(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}
