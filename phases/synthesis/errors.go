package synthesis

import "errors"

var (
	// ErrSettings is returned for run settings that do not decode or
	// validate.
	ErrSettings = errors.New("invalid synthesis settings")
	// ErrState is returned when the run's vars, entries or op results are
	// not what the workflow wrote.
	ErrState = errors.New("invalid synthesis state")
)
