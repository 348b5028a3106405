package settings

import (
	"errors"
	"fmt"
	"strings"
)

// Error is a setting that is wrong: where it is and why.
type Error struct {
	// Path is the setting's JSON path from the document's root, such as
	// "agent.settings.model.temp", "models.gpt.max_tokens" or
	// "actors[1].model"; "" for the document as a whole.
	Path string
	// Reason says what is wrong, as "must be >= 0".
	Reason string
	// Err, when set, is the error the reason came from, for errors.Is and
	// errors.As (a sentinel such as a package's ErrBadModel).
	Err error
}

// Error is "path: reason", or the reason alone at the root.
func (e *Error) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return e.Path + ": " + e.Reason
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error at path whose reason is formatted as by
// fmt.Sprintf. A %w verb in format makes that argument the Error's Err.
func Errorf(path, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Path: path, Reason: err.Error(), Err: errors.Unwrap(err)}
}

// At places err at path: an *Error (err itself, not one it wraps) gets
// its path prefixed with path; any other error becomes an *Error at path
// whose reason is err's text and whose Err is err. Nil stays nil.
//
// Hooks and nested decodes return paths relative to the value they check;
// the caller that knows where that value sits calls At.
func At(path string, err error) error {
	if err == nil {
		return nil
	}
	if e, ok := err.(*Error); ok {
		return &Error{Path: Join(path, e.Path), Reason: e.Reason, Err: e.Err}
	}
	return &Error{Path: path, Reason: err.Error(), Err: err}
}

// Join joins two JSON paths: Join("models", "gpt") is "models.gpt",
// Join("actors", "[1]") is "actors[1]", and an empty side gives the
// other.
func Join(parent, child string) string {
	switch {
	case parent == "":
		return child
	case child == "":
		return parent
	case strings.HasPrefix(child, "["):
		return parent + child
	}
	return parent + "." + child
}
