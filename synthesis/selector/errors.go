package selector

import "errors"

// Options.
var (
	// ErrInvalidOptions is returned by Options.Validate for a setting out of
	// range; the error names the setting and its value.
	ErrInvalidOptions = errors.New("invalid selector options")
)
