package react

import "errors"

var (
	// ErrSettings is returned for settings that do not decode or validate.
	ErrSettings = errors.New("invalid react settings")
	// ErrState is returned when the run's vars or entries are not what the
	// workflow wrote (a corrupted or foreign state).
	ErrState = errors.New("invalid react state")
)
