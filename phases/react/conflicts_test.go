package react_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/flockrun/flock/phases/agent"
	"github.com/flockrun/flock/phases/react"
)

// TestConflictingSettings: a model entry with both temp and temperature is
// refused, naming both. tool_timeout_s beside bash.timeout_s is accepted:
// the more specific tool_timeout_s wins (see cli's TestTimeoutPrecedence).
func TestConflictingSettings(t *testing.T) {
	check := react.Workflow().CheckSettings
	tests := []struct {
		name string
		doc  string
		keys []string
	}{
		{name: "tool timeout beside the engine's", doc: `{"model":"m","tool_timeout_s":5,"bash":{"timeout_s":60},"python":{"timeout_s":60}}`},
		{name: "temp and temperature", doc: `{"model":{"model":"m","temp":0,"temperature":1}}`, keys: []string{"model.temp", "model.temperature"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := check(json.RawMessage(tt.doc))
			if len(tt.keys) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, agent.ErrSettingsConflict) {
				t.Fatalf("err = %v, want ErrSettingsConflict", err)
			}
			for _, k := range tt.keys {
				if !strings.Contains(err.Error(), k) {
					t.Errorf("error %q does not name %s", err, k)
				}
			}
		})
	}
}
