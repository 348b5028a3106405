package files

import "errors"

var (
	// ErrOutsideRoots is returned for a read whose path does not resolve
	// (symbolic links included) beneath the run's work directory or one of
	// the server's read_roots.
	ErrOutsideRoots = errors.New("is outside the run's work directory and the server's read_roots")
	// ErrOutsideWorkDir is returned for a write whose path does not resolve
	// beneath the run's work directory: runs write nowhere else.
	ErrOutsideWorkDir = errors.New("is outside the run's work directory (runs write only there)")
	// ErrDataDir is returned for a path that resolves, through a read root
	// that contains the server's data directory, into that directory: the
	// database and other runs' work directories are never readable.
	ErrDataDir = errors.New("is in the server's data directory, which runs read only through their own work directory")
	// ErrNoPath is returned for an empty path.
	ErrNoPath = errors.New("path is required")
)
