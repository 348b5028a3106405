package rollout_test

import (
	"encoding/json"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/phases/rollout"
)

// startDoc is a rollout settings document of the size a user writes: an
// AgentFlow model, a react agent with its own settings, a verifier, extra
// metrics, reducers and advantages.
const startDoc = `{
  "data_path": "bench/gsm8k.jsonl", "benchmark_name": "gsm8k", "output_dir": "results",
  "model_name": "gpt-4o-mini", "base_url": "http://127.0.0.1:8000/v1", "api_key": "${OPENAI_API_KEY}",
  "max_workers": 8, "number_of_tasks": 50, "max_turns": 12, "available_tools": ["bash", "python", "submit"],
  "num_chains": 4, "shuffle": true, "seed": 7,
  "agent": {"workflow": "react", "settings": {"tool_timeout_s": 30, "context_chars": 60000,
    "fold": {"summarize": true, "trigger_turns": 8, "nudge": "detail"}, "bash": {"output_limit": 20000}}},
  "evaluation_metric": "exact_match", "metrics": ["f1", "contains_answer"],
  "verifier": {"command": "python3 verify.py", "timeout_s": 60},
  "reducers": ["mean", "max", "at_least_2"], "advantages": ["grpo", "rloo"], "segment_reward": "geometric",
  "limits": {"tokens": 2000000, "cost": 5}
}`

// BenchmarkParseSettings decodes, defaults and validates a rollout
// settings document (what every phase call's cache miss costs).
func BenchmarkParseSettings(b *testing.B) {
	doc := json.RawMessage(startDoc)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rollout.ParseSettings(doc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSettingsAtStart is what the executor does with a rollout's
// settings when the run starts: the key check (warnings) and the
// workflow's CheckSettings.
func BenchmarkSettingsAtStart(b *testing.B) {
	doc := json.RawMessage(startDoc)
	wf := rollout.Workflow()
	b.ReportAllocs()
	for b.Loop() {
		if w := configs.SettingsWarnings(doc, wf.Name, wf.Settings); len(w) != 0 {
			b.Fatal(w)
		}
		if err := wf.CheckSettings(doc); err != nil {
			b.Fatal(err)
		}
	}
}
