package web

import "errors"

var (
	// ErrInvalidInput marks a call whose parameters are unusable (an empty
	// query, a URL that is not http or https). The tool answers 4000.
	ErrInvalidInput = errors.New("invalid input")
	// ErrProvider marks a failure of the search or reader provider (an HTTP
	// error status, an unreadable answer, a network error). The tool answers
	// 5000 when every query or URL of a call failed.
	ErrProvider = errors.New("provider failed")
)
