package reaper

import "errors"

var (
	// ErrBadSpec is returned by Start for a Spec it cannot run (no path or
	// arguments).
	ErrBadSpec = errors.New("bad reaper spec")
	// ErrNotFound is returned by KillDescendants when the process to spare
	// is not among the reaper's descendants.
	ErrNotFound = errors.New("process not found under reaper")
	// ErrSurvivors is returned when processes are still alive after the
	// sweep's deadline (stuck in uninterruptible sleep, for example).
	ErrSurvivors = errors.New("processes survived the sweep")
)
