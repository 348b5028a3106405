package workflows

import (
	"encoding/json"
)

// StartRequest asks for a new run.
type StartRequest struct {
	// Workflow names a registered workflow. When empty, the settings'
	// "workflow_type" key names it (Flock style).
	Workflow string `json:"workflow"`
	// Settings is the run's settings document (a JSON object).
	Settings json.RawMessage `json:"settings"`
	Task     string          `json:"task"`
	// ParentID and ID are set by spawn: the child's ID is derived from the
	// spawning op so that a re-dispatched spawn finds the same child.
	ParentID string `json:"-"`
	ID       string `json:"-"`
	// WorkDir overrides the run's work directory (spawn uses a subdirectory
	// of the parent's).
	WorkDir string `json:"-"`
}
