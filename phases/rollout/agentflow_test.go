package rollout_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/flockrun/flock/phases/agent"
	"github.com/flockrun/flock/phases/rollout"
)

// TestAgentFlowKeys maps AgentFlow's keys and refuses a flock key that
// disagrees with its AgentFlow alias.
func TestAgentFlowKeys(t *testing.T) {
	s, err := rollout.ParseSettings(json.RawMessage(`{"data_path": "b.jsonl", "model_name": "m1", "max_workers": 3,
		"number_of_tasks": 5, "max_turns": 4, "available_tools": ["bash"], "evaluate_results": false, "save_trajectories": false}`))
	if err != nil {
		t.Fatal(err)
	}
	var as map[string]any
	if err := json.Unmarshal(s.Agent.Settings, &as); err != nil {
		t.Fatal(err)
	}
	if s.MaxConcurrency != 3 || s.MaxTasks != 5 || s.EvaluationMetric != rollout.MetricNone || *s.Episodes ||
		as["model"] != "m1" || as["max_turns"] != 4.0 || len(as["tools"].([]any)) != 1 {
		t.Fatalf("mapped %+v agent %v", s, as)
	}
	var models map[string]map[string]any
	if err := json.Unmarshal(s.Models, &models); err != nil || models["m1"]["provider"] != "openai" {
		t.Fatalf("models %s", s.Models)
	}
	for _, doc := range []string{
		`{"data_path": "b", "max_workers": 3, "max_concurrency": 4}`,
		`{"data_path": "b", "model_name": "m1", "agent": {"settings": {"model": "m2"}}}`,
		`{"data_path": "b", "save_trajectories": true, "episodes": false}`,
	} {
		if _, err := rollout.ParseSettings(json.RawMessage(doc)); !errors.Is(err, agent.ErrSettingsConflict) {
			t.Fatalf("%s: %v, want a conflict", doc, err)
		}
	}
}
