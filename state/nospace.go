package state

import (
	"errors"
	"syscall"
)

// IsNoSpace reports whether err is a full disk or an exceeded quota.
func IsNoSpace(err error) bool {
	return errors.Is(err, ErrNoSpace) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// noSpaceError is a write that failed for lack of space on the disk that
// holds path. It matches ErrNoSpace and the underlying error.
type noSpaceError struct {
	path string
	err  error
}

func (e *noSpaceError) Error() string {
	return "no space left on the disk holding " + e.path
}

func (e *noSpaceError) Unwrap() []error { return []error{ErrNoSpace, e.err} }

// NoSpace wraps err, a failed write beneath path, so that it matches
// ErrNoSpace and names path.
func NoSpace(path string, err error) error { return &noSpaceError{path: path, err: err} }
