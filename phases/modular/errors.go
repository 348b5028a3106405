package modular

import "errors"

var (
	// ErrSettings wraps every problem with a run's modular settings; the
	// message names the offending key.
	ErrSettings = errors.New("modular settings")
	// ErrState is returned when the run's log or vars are not what a phase
	// expects (a phase called out of order, or a corrupted var).
	ErrState = errors.New("modular state")
)
