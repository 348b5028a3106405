package rollout_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/flockrun/flock/phases/agent"
	"github.com/flockrun/flock/phases/rollout"
)

// TestSettingsErrors: every refused setting is named by its JSON path,
// nested ones included (the react agent's settings), under the rollout's
// sentinel.
func TestSettingsErrors(t *testing.T) {
	const a = `"data_path":"d","agent":{"settings":{"model":"m"}}`
	tests := []struct {
		name, doc, want string
		conflict        bool
	}{
		{name: "no data", doc: `{"agent":{"settings":{"model":"m"}}}`, want: "data_path: required (or question)"},
		{name: "not an object", doc: `[1]`, want: "must be a JSON object, got JSON array"},
		{name: "type", doc: `{` + a + `,"num_chains":"x"}`, want: "num_chains: want a whole number, got JSON string"},
		{name: "rollout as agent", doc: `{"data_path":"d","agent":{"workflow":"rollout"}}`, want: `agent.workflow: "rollout" cannot be the agent`},
		{name: "agent settings not object", doc: `{"data_path":"d","agent":{"settings":[1]}}`, want: "agent.settings: must be a JSON object"},
		{name: "react model required", doc: `{"data_path":"d","agent":{"settings":{}}}`, want: `agent.settings.model: required (a model name or {"model": NAME, ...})`},
		{name: "react model temp", doc: `{"data_path":"d","agent":{"settings":{"model":{"model":"m","temp":3}}}}`, want: "agent.settings.model.temp: must be between 0 and 2"},
		{name: "react temperature", doc: `{"data_path":"d","agent":{"settings":{"model":{"model":"m","temperature":3}}}}`, want: "agent.settings.model.temperature: must be between 0 and 2"},
		{name: "num_chains", doc: `{` + a + `,"num_chains":-1}`, want: "num_chains: must be >= 1"},
		{name: "max_concurrency", doc: `{` + a + `,"max_concurrency":-1}`, want: "max_concurrency: must be >= 1"},
		{name: "items_per_lane", doc: `{` + a + `,"items_per_lane":-1}`, want: "items_per_lane: must be >= 0"},
		{name: "max_tasks", doc: `{` + a + `,"max_tasks":-1}`, want: "max_tasks: must be >= 0"},
		{name: "offset", doc: `{` + a + `,"offset":-1}`, want: "offset: must be >= 0"},
		{name: "limit", doc: `{` + a + `,"limit":-1}`, want: "limit: must be >= 0"},
		{name: "verifier timeout", doc: `{` + a + `,"verifier":{"timeout_s":-1}}`, want: "verifier.timeout_s: must be >= 0"},
		{name: "data_format", doc: `{` + a + `,"data_format":"xml"}`, want: `data_format: "xml" is not one of jsonl, json, csv, tsv, parquet`},
		{name: "fields", doc: `{` + a + `,"fields":{"id":" "}}`, want: "fields.id: want a column name"},
		{name: "metric", doc: `{` + a + `,"evaluation_metric":"bleu"}`, want: `evaluation_metric: "bleu" is not one of choice, contains_answer, exact_match, f1, llm_judgement, numeric_match, similarity, none`},
		{name: "judge required", doc: `{` + a + `,"evaluation_metric":"llm_judgement"}`, want: "judge.model: required for llm_judgement"},
		{name: "judge temp", doc: `{` + a + `,"evaluation_metric":"llm_judgement","judge":{"model":{"model":"j","temp":5}}}`, want: "judge.model.temp: must be between 0 and 2"},
		{name: "metric judge", doc: `{` + a + `,"metrics":["llm_judgement"]}`, want: `metrics[0]: "llm_judgement" only as evaluation_metric`},
		{name: "metric twice", doc: `{` + a + `,"metrics":["exact_match"]}`, want: `metrics[0]: "exact_match" is already scored`},
		{name: "verifier name", doc: `{` + a + `,"verifiers":{"exact_match":"x"}}`, want: "verifiers.exact_match: the name is already a metric's"},
		{name: "verifier command", doc: `{` + a + `,"verifiers":{"v":" "}}`, want: "verifiers.v: want a command"},
		{name: "primary", doc: `{` + a + `,"primary":"zz"}`, want: `primary: "zz" is not evaluation_metric, one of metrics or one of verifiers`},
		{name: "reducer", doc: `{` + a + `,"reducers":["median"]}`, want: `reducers[0]: unknown metric: reducer "median" (want mean, max, mode or at_least_K with K >= 1)`},
		{name: "advantages without episodes", doc: `{` + a + `,"advantages":["grpo"],"episodes":false}`, want: "advantages: the groups hold the episodes' trajectories: set episodes true or drop advantages"},
		{name: "advantage", doc: `{` + a + `,"advantages":["ppo"]}`, want: `advantages[0]: "ppo" is not one of grpo, rloo`},
		{name: "segment reward", doc: `{` + a + `,"segment_reward":"x"}`, want: `segment_reward: unknown segment reward mode: "x"`},
		{name: "api key", doc: `{"data_path":"d","model_name":"m","api_key":"sk-123"}`, want: `api_key: flock takes no API key in settings (settings are stored with the run); put the key in an environment variable and write api_key: "${VAR}"`},
		{name: "available tool", doc: `{"data_path":"d","available_tools":["ls"]}`, want: `available_tools: flock has no tool "ls" (its tools: bash, python, submit, summarize; sandbox tools are named "resource:tool", as "rag:search")`},
		{name: "agentflow keys for another agent", doc: `{"data_path":"d","model_name":"m","agent":{"workflow":"triframe"}}`, want: `model_name, max_turns, available_tools and system_prompt set react's model, but agent.workflow is "triframe": set them in agent.settings`},
		{name: "models", doc: `{"data_path":"d","models":[1]}`, want: "models: want an object of model entries"},
		{name: "max_workers", doc: `{"data_path":"d","max_workers":3,"max_concurrency":4}`, conflict: true, want: "conflicting settings: max_concurrency and max_workers set the same thing to different values: give one"},
		{name: "save_trajectories", doc: `{"data_path":"d","save_trajectories":true,"episodes":false}`, conflict: true, want: "conflicting settings: episodes and save_trajectories set the same thing to different values: give one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rollout.ParseSettings(json.RawMessage(tt.doc))
			if want := "invalid rollout settings: " + tt.want; err == nil || err.Error() != want {
				t.Fatalf("err = %v\nwant %s", err, want)
			}
			if !errors.Is(err, rollout.ErrSettings) || errors.Is(err, agent.ErrSettingsConflict) != tt.conflict {
				t.Fatalf("err = %v: wrong sentinels", err)
			}
			if err := rollout.CheckSettings(json.RawMessage(tt.doc)); err == nil {
				t.Fatal("CheckSettings passed it")
			}
		})
	}
}

// TestSettingsDefaults: the defaults of a minimal document, and AgentFlow's
// keys mapped onto flock's.
func TestSettingsDefaults(t *testing.T) {
	s, err := rollout.ParseSettings(json.RawMessage(`{"data_path": "x/bench.v1.jsonl", "agent": {"settings": null}}`))
	if err == nil {
		t.Fatal("a react agent without a model passed")
	}
	s, err = rollout.ParseSettings(json.RawMessage(`{"data_path": "x/bench.v1.jsonl", "agent": {"settings": {"model": "m"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case s.Agent.Workflow != "react" || s.NumChains != 1 || s.MaxConcurrency != rollout.DefaultMaxConcurrency || s.MaxTasks != 0:
		t.Fatalf("agent and counts: %+v", s)
	case s.EvaluationMetric != "exact_match" || *s.CorrectThreshold != 1 || s.Verifier.TimeoutS != rollout.DefaultVerifierTimeoutS:
		t.Fatalf("grading: %+v", s)
	case !*s.Episodes || !*s.Resume || !*s.RetryFailed || s.Gamma != 0.9 || s.OutputDir != "results" || s.BenchmarkName != "bench.v1":
		t.Fatalf("files: %+v", s)
	}
	s, err = rollout.ParseSettings(json.RawMessage(`{"question": "q?", "model_name": "m", "max_workers": 3, "save_trajectories": false, "agent": {}}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.BenchmarkName != "question" || s.MaxConcurrency != 3 || *s.Episodes || string(s.Agent.Settings) != `{"model":"m"}` {
		t.Fatalf("question mode: %+v %s", s, s.Agent.Settings)
	}
}
