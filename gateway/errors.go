package gateway

import "errors"

var (
	// ErrClosed is returned for calls to a session whose agent program has
	// ended, and by Take once the session is closed and drained.
	ErrClosed = errors.New("gateway: session closed")
	// ErrDuplicateSession is returned by Open for an id already open.
	ErrDuplicateSession = errors.New("gateway: session already open")
	// ErrNoSession is returned by Await when the gateway is closed.
	ErrNoSession = errors.New("gateway: no such session")
	// ErrLimit wraps the error of a call refused because the session's run
	// reached one of its limits.
	ErrLimit = errors.New("gateway: run limit reached")
)
