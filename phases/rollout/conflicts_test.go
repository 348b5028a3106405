package rollout_test

import (
	"testing"

	"github.com/flockrun/flock/phases/phasetest"
	"github.com/flockrun/flock/phases/rollout"
)

// TestConflictingSettings: the rollout's only commands are its verifiers,
// timed by verifier.timeout_s, so bash.timeout_s and python.timeout_s at
// its top level are refused, naming the keys that do apply; model entries
// with both temp and temperature are refused, the agent's included.
func TestConflictingSettings(t *testing.T) {
	phasetest.CheckConflicts(t, rollout.Workflow().CheckSettings, []phasetest.Conflict{
		{Name: "verifier timeout", Doc: `{"data_path":"d.jsonl","agent":{"settings":{"model":"m"}},"verifier":{"command":"true","timeout_s":5}}`},
		{Name: "agent's own timeouts", Doc: `{"data_path":"d.jsonl","agent":{"settings":{"model":"m","bash":{"timeout_s":5}}}}`},
		{Name: "bash.timeout_s", Doc: `{"data_path":"d.jsonl","agent":{"settings":{"model":"m"}},"bash":{"timeout_s":5}}`, Keys: []string{"bash.timeout_s", "verifier.timeout_s", "agent.settings.bash.timeout_s"}},
		{Name: "python.timeout_s", Doc: `{"data_path":"d.jsonl","agent":{"settings":{"model":"m"}},"python":{"timeout_s":5}}`, Keys: []string{"python.timeout_s", "agent.settings.python.timeout_s"}},
		{Name: "judge temp and temperature", Doc: `{"data_path":"d.jsonl","agent":{"settings":{"model":"m"}},"evaluation_metric":"llm_judgement","judge":{"model":{"model":"j","temp":0,"temperature":1}}}`,
			Keys: []string{"judge.model.temp", "judge.model.temperature"}},
		{Name: "agent workflow_type agrees", Doc: `{"data_path":"d.jsonl","agent":{"workflow":"react","settings":{"model":"m","workflow_type":"react"}}}`},
		{Name: "agent workflow_type disagrees", Doc: `{"data_path":"d.jsonl","agent":{"settings":{"model":"m","workflow_type":"triframe"}}}`,
			Keys: []string{`agent.workflow "react"`, `agent.settings.workflow_type "triframe"`}},
		{Name: "react agent temp and temperature", Doc: `{"data_path":"d.jsonl","agent":{"settings":{"model":{"model":"m","temp":0,"temperature":1}}}}`,
			Keys: []string{"agent.settings", "model.temp", "model.temperature"}},
	})
}
