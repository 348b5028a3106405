package workflows

import (
	"encoding/json"

	"github.com/flockrun/flock/state"
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
	// Key names the command line that asks for a top-level run (stored as
	// state.Spec.Key): Launch resumes the unfinished top-level run of the
	// same key instead of starting another. Set by the command line only.
	Key string `json:"-"`
	// Grants are the directories the operator hands to a top-level run
	// (stored as state.Spec.Grants): it and its descendants may read and
	// write beneath them as beneath the server's roots. Set by the command
	// line only (in-process, or through the server's operator token).
	Grants *state.Grants `json:"-"`
}
