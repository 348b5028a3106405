package react_test

import (
	"testing"

	"github.com/flockrun/flock/phases/phasetest"
	"github.com/flockrun/flock/phases/react"
)

// TestConflictingSettings: a model entry with both temp and temperature is
// refused, naming both. tool_timeout_s beside bash.timeout_s is accepted:
// the more specific tool_timeout_s wins (see cli's TestTimeoutPrecedence).
func TestConflictingSettings(t *testing.T) {
	phasetest.CheckConflicts(t, react.Workflow().CheckSettings, []phasetest.Conflict{
		{Name: "tool timeout beside the engine's", Doc: `{"model":"m","tool_timeout_s":5,"bash":{"timeout_s":60},"python":{"timeout_s":60}}`},
		{Name: "temp and temperature", Doc: `{"model":{"model":"m","temp":0,"temperature":1}}`, Keys: []string{"model.temp", "model.temperature"}},
	})
}
