package rollout

import "errors"

var (
	// ErrSettings is returned for settings that do not decode or validate.
	ErrSettings = errors.New("invalid rollout settings")
	// ErrBenchmark is returned for a benchmark file that cannot be read as
	// tasks.
	ErrBenchmark = errors.New("invalid benchmark")
	// ErrState is returned when the run's vars, entries or op results are
	// not what the workflow wrote.
	ErrState = errors.New("invalid rollout state")
)
