package bash

import "errors"

var (
	// ErrClosed is returned for commands sent after Close.
	ErrClosed = errors.New("bash handler closed")
	// ErrSessionClosed is returned for a command whose session was closed
	// (CloseRun or Close) before or while it ran.
	ErrSessionClosed = errors.New("shell session closed")
	// ErrCancelled is returned when the command's context ended before the
	// command did; the shell was killed. Its text is the result's Error.
	ErrCancelled = errors.New("cancelled")
	// ErrStart is returned when a shell could not be started or did not
	// become ready.
	ErrStart = errors.New("cannot start shell")
	// ErrBadRequest is returned for a request that is not a bash request
	// or lacks its params, or for a run without a work directory.
	ErrBadRequest = errors.New("bad bash request")
)
