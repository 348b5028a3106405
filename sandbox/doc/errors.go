package doc

import "errors"

var (
	// ErrMissingSetting is returned by configuration when a required key is absent.
	ErrMissingSetting = errors.New("required setting is missing")
	// ErrBadSetting is returned by configuration when a key has an invalid value.
	ErrBadSetting = errors.New("invalid setting")
	// ErrUnknownDocument is returned for a document id that is not configured.
	ErrUnknownDocument = errors.New("unknown document")
	// ErrUnknownSection is returned by Read when no section id is known.
	ErrUnknownSection = errors.New("unknown section ids")
	// ErrEmptyKeyword is returned for a blank keyword.
	ErrEmptyKeyword = errors.New("keyword is empty")
)
