package record

// Status is a run's lifecycle state. The values are wire names.
type Status string

// Run statuses (the status of a run head; see docs/design.md).
const (
	StatusRunning   Status = "running"
	StatusPaused    Status = "paused"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// Terminal reports whether a run in status s has ended for good.
func (s Status) Terminal() bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusCancelled
}

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	switch s {
	case StatusRunning, StatusPaused, StatusSucceeded, StatusFailed, StatusCancelled:
		return true
	}
	return false
}

// End reasons set by the engine itself. Phases choose their own reasons
// for the runs they end.
const (
	ReasonLimitTokens  = "limit_tokens"
	ReasonLimitActions = "limit_actions"
	ReasonLimitTime    = "limit_time"
	ReasonLimitCost    = "limit_cost"
	ReasonCancelled    = "cancelled"
	ReasonPhaseError   = "phase_error"
	ReasonCompleted    = "completed"
	// ReasonStoreDamaged ends a run whose records were lost when its
	// database was recovered.
	ReasonStoreDamaged = "store_damaged"
)

// End reasons of a run that met a failure no later step can fix, equal to
// the failure codes of package operations (operations.CodeModelError,
// CodeRateLimited): the agents (and the rollout) end with them, the run's
// error saying which model, which endpoint and why.
const (
	ReasonModelError  = "model_error"
	ReasonRateLimited = "rate_limited"
)
