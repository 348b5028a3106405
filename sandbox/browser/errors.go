package browser

import "errors"

var (
	// ErrNoChromium means no chromium executable was found; Provision
	// fails with it (install Debian's chromium, or set chromium_path).
	ErrNoChromium = errors.New("chromium not found")
	// ErrNotAllowed means an action was refused: a navigation to a URL other
	// than http(s) or about:blank, or typing into a file input.
	ErrNotAllowed = errors.New("not allowed")
	// ErrNoElement means no element matched the selector before the action
	// timeout.
	ErrNoElement = errors.New("no element matches the selector")
	// ErrClosed means the session's browser was closed (cleaned up, shut
	// down, or crashed).
	ErrClosed = errors.New("browser closed")
)
