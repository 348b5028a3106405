package sandbox

import "errors"

var (
	// ErrClosed is returned by a Service after Close.
	ErrClosed = errors.New("sandbox: service closed")
	// ErrConfig wraps every configuration error of the sandbox config file.
	ErrConfig = errors.New("sandbox config")
	// ErrWorkspaceTooLarge is a fork refused because the source's
	// workspace takes more disk than server.max_workspace_bytes.
	ErrWorkspaceTooLarge = errors.New("workspace too large")
)
