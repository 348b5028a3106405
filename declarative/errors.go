package declarative

import "errors"

var (
	// ErrWorkflowFile is wrapped by every error of loading a declarative
	// workflow file; the message names the file and line.
	ErrWorkflowFile = errors.New("bad workflow file")
)
