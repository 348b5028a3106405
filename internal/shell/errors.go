package shell

import "errors"

var (
	// ErrClosed is returned for commands sent after Pool.Close.
	ErrClosed = errors.New("shell pool closed")
	// ErrSessionClosed is returned for a command whose session was closed
	// (Pool.CloseOwner or Pool.Close) before or while it ran.
	ErrSessionClosed = errors.New("shell session closed")
	// ErrCancelled is returned when the command's context ended before the
	// command did; the shell was killed. Its text is the result's Error.
	ErrCancelled = errors.New("cancelled")
	// ErrStart is returned when a shell could not be started or did not
	// become ready.
	ErrStart = errors.New("cannot start shell")
)
