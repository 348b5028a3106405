package rag

import "errors"

var (
	// ErrMissingSetting is returned by configuration when a required key is absent.
	ErrMissingSetting = errors.New("required setting is missing")
	// ErrBadSetting is returned by configuration when a key has an invalid value.
	ErrBadSetting = errors.New("invalid setting")
	// ErrNotReady wraps why the index could not be opened; tools answer it with 5011.
	ErrNotReady = errors.New("rag backend not initialized")
	// ErrEmptyQuery is returned for a blank query.
	ErrEmptyQuery = errors.New("query is empty")
)
