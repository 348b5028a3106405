package phases

import "errors"

var (
	// ErrBadWorkflow is returned when a workflow declaration is invalid.
	ErrBadWorkflow = errors.New("invalid workflow")
	// ErrDuplicate is returned when a workflow name is registered twice.
	ErrDuplicate = errors.New("duplicate workflow")
)
