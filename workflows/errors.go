package workflows

import "errors"

var (
	// ErrUnknownWorkflow is returned when a start request names no registered workflow.
	ErrUnknownWorkflow = errors.New("unknown workflow")
	// ErrBadRequest wraps invalid start requests (settings, task, names).
	ErrBadRequest = errors.New("bad request")
	// ErrEnded is returned when cancelling or pausing a run that has already ended.
	ErrEnded = errors.New("run already ended")
	// ErrStopped is returned by calls made after the executor was stopped.
	ErrStopped = errors.New("executor stopped")
	// ErrUndeclaredNext fails a run whose phase returns a Next its workflow does not declare.
	ErrUndeclaredNext = errors.New("phase returned an undeclared next phase")
)
