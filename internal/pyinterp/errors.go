package pyinterp

import "errors"

var (
	// ErrNoInterpreter is returned when no python3 binary can be found.
	ErrNoInterpreter = errors.New("no python3 interpreter found")
	// ErrFrameTooLarge is returned when a protocol frame exceeds the limit.
	ErrFrameTooLarge = errors.New("protocol frame too large")
	// ErrProtocol is returned when the driver sends something that is not a
	// valid reply.
	ErrProtocol = errors.New("python driver protocol error")
	// ErrExited is returned when the interpreter exits while the server
	// waits for it.
	ErrExited = errors.New("python interpreter exited")
	// ErrClosed is returned for cells of an owner or a pool that was
	// closed before or while the cell ran.
	ErrClosed = errors.New("python interpreter closed")
	// ErrCancelled is returned for a cell whose context ended before it
	// finished; the interpreter was killed. Its text is the python
	// operation's result Error.
	ErrCancelled = errors.New("cancelled")
)
