package desktop

import "errors"

var (
	// ErrNoXvfb means no Xvfb executable was found; Provision fails with it
	// (install Debian's xvfb, or set xvfb_path).
	ErrNoXvfb = errors.New("Xvfb not found")
	// ErrUnknownKey means a key name is neither a known key nor a single
	// character (answered 4000 naming the parameter).
	ErrUnknownKey = errors.New("unknown key")
	// ErrStart means a session's display did not come up: Xvfb failed or
	// did not report its display within start_timeout_s.
	ErrStart = errors.New("display did not start")
	// ErrClosed means the session's display is gone (cleaned up, shut down,
	// or Xvfb died).
	ErrClosed = errors.New("display closed")
)
