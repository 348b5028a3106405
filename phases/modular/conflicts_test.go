package modular_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/flockrun/flock/phases/agent"
	"github.com/flockrun/flock/phases/modular"
)

// TestConflictingSettings: settings that govern the same thing as another
// are refused at start, naming both keys.
func TestConflictingSettings(t *testing.T) {
	check := modular.Workflow().CheckSettings
	tests := []struct {
		name string
		doc  string
		keys []string // named by the error; none: accepted
	}{
		{name: "timeout alone", doc: `{"generator":{"model":"m"},"timeout":30}`},
		{name: "python.timeout_s", doc: `{"generator":{"model":"m"},"python":{"timeout_s":1200}}`, keys: []string{"python.timeout_s", `"timeout"`}},
		{name: "bash.timeout_s with timeout", doc: `{"generator":{"model":"m"},"timeout":30,"bash":{"timeout_s":5}}`, keys: []string{"bash.timeout_s", `"timeout"`}},
		{name: "temp and temperature", doc: `{"generator":{"model":"m","temp":1,"temperature":0.5}}`, keys: []string{"generator.temp", "generator.temperature"}},
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
