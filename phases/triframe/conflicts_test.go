package triframe_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/flockrun/flock/phases/agent"
	"github.com/flockrun/flock/phases/triframe"
)

// TestConflictingSettings: settings that govern the same thing as another
// are refused at start, naming both keys.
func TestConflictingSettings(t *testing.T) {
	check := triframe.Workflow().CheckSettings
	tests := []struct {
		name string
		doc  string
		keys []string // named by the error; none: accepted
	}{
		{name: "timeout alone", doc: `{"actors":[{"model":"m"}],"timeout":30}`},
		{name: "python.timeout_s", doc: `{"actors":[{"model":"m"}],"python":{"timeout_s":1200}}`, keys: []string{"python.timeout_s", `"timeout"`}},
		{name: "bash.timeout_s with timeout", doc: `{"actors":[{"model":"m"}],"timeout":30,"bash":{"timeout_s":5}}`, keys: []string{"bash.timeout_s", `"timeout"`}},
		{name: "other python keys", doc: `{"actors":[{"model":"m"}],"python":{"interpreter":"python3"},"bash":{"output_limit":5}}`},
		{name: "temp and temperature", doc: `{"actors":[{"model":"m"},{"model":"m","temp":1,"temperature":0.5}]}`, keys: []string{"actors[1].temp", "actors[1].temperature"}},
		{name: "temperature alone", doc: `{"actors":[{"model":"m","temperature":0.5}],"raters":[{"model":"m","temp":0}]}`},
		{name: "judge temp and temperature", doc: `{"actors":[{"model":"m"}],"subagents":{"judge":{"model":"j","temp":0,"temperature":0}}}`, keys: []string{"subagents.judge.temp", "subagents.judge.temperature"}},
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
