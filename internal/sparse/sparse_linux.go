package sparse

import (
	"errors"
	"io/fs"
	"iter"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Extents yields the data extents of f, whose size is size, in order, as
// lseek's SEEK_DATA and SEEK_HOLE report them (the file system may report
// zeros it stores as data, never data as a hole). Where the file system
// cannot say, the rest of the file is one extent. It moves f's offset.
func Extents(f *os.File, size int64) iter.Seq2[Extent, error] {
	return func(yield func(Extent, error) bool) {
		fd := int(f.Fd())
		for off := int64(0); off < size; {
			data, err := unix.Seek(fd, off, unix.SEEK_DATA)
			switch {
			case errors.Is(err, syscall.ENXIO):
				return // only a hole is left
			case errors.Is(err, syscall.EINVAL):
				data = off // no SEEK_DATA here: all of it is data
			case err != nil:
				yield(Extent{}, &fs.PathError{Op: "seek", Path: f.Name(), Err: err})
				return
			}
			if data >= size {
				return
			}
			hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
			if err != nil {
				hole = size
			}
			hole = min(hole, size)
			if !yield(Extent{Off: data, Len: hole - data}, nil) {
				return
			}
			off = hole
		}
	}
}

// clone makes out share in's blocks (FICLONE), where the file system can.
func clone(in, out *os.File) bool {
	return unix.IoctlFileClone(int(out.Fd()), int(in.Fd())) == nil
}

func diskUsage(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}
