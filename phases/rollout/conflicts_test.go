package rollout_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/flockrun/flock/phases/agent"
	"github.com/flockrun/flock/phases/rollout"
)

// TestConflictingSettings: the rollout's only commands are its verifiers,
// timed by verifier.timeout_s, so bash.timeout_s and python.timeout_s at
// its top level are refused, naming the keys that do apply; model entries
// with both temp and temperature are refused, the agent's included.
func TestConflictingSettings(t *testing.T) {
	check := rollout.Workflow().CheckSettings
	tests := []struct {
		name string
		doc  string
		keys []string
	}{
		{name: "verifier timeout", doc: `{"data_path":"d.jsonl","agent":{"settings":{"model":"m"}},"verifier":{"command":"true","timeout_s":5}}`},
		{name: "agent's own timeouts", doc: `{"data_path":"d.jsonl","agent":{"settings":{"model":"m","bash":{"timeout_s":5}}}}`},
		{name: "bash.timeout_s", doc: `{"data_path":"d.jsonl","agent":{"settings":{"model":"m"}},"bash":{"timeout_s":5}}`, keys: []string{"bash.timeout_s", "verifier.timeout_s", "agent.settings.bash.timeout_s"}},
		{name: "python.timeout_s", doc: `{"data_path":"d.jsonl","agent":{"settings":{"model":"m"}},"python":{"timeout_s":5}}`, keys: []string{"python.timeout_s", "agent.settings.python.timeout_s"}},
		{name: "judge temp and temperature", doc: `{"data_path":"d.jsonl","agent":{"settings":{"model":"m"}},"evaluation_metric":"llm_judgement","judge":{"model":{"model":"j","temp":0,"temperature":1}}}`,
			keys: []string{"judge.model.temp", "judge.model.temperature"}},
		{name: "agent workflow_type agrees", doc: `{"data_path":"d.jsonl","agent":{"workflow":"react","settings":{"model":"m","workflow_type":"react"}}}`},
		{name: "agent workflow_type disagrees", doc: `{"data_path":"d.jsonl","agent":{"settings":{"model":"m","workflow_type":"triframe"}}}`,
			keys: []string{`agent.workflow "react"`, `agent.settings.workflow_type "triframe"`}},
		{name: "react agent temp and temperature", doc: `{"data_path":"d.jsonl","agent":{"settings":{"model":{"model":"m","temp":0,"temperature":1}}}}`,
			keys: []string{"agent.settings", "model.temp", "model.temperature"}},
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
