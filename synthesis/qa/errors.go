package qa

import "errors"

// Replies and checks.
var (
	// ErrInvalidReply is returned by Parse when a reply holds no usable
	// question-answer object; the error says what is wrong and where.
	ErrInvalidReply = errors.New("invalid qa reply")
	// ErrCheckFailed is matched by every *Failure (errors.Is), so a caller
	// can tell a rejected pair from a failed model call.
	ErrCheckFailed = errors.New("qa check failed")
)
