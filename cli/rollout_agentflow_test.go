package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/phases/rollout"
)

// agentflowConfig is an AgentFlow rollout config file written from
// AgentFlow's documented keys (rollout/core/config.py), unchanged.
const agentflowConfig = `{
  "benchmark_name": "af_shell",
  "data_path": "shell.jsonl",
  "output_dir": "af_results",
  "model_name": "openai/gpt-4o-mini",
  "api_key": "${OPENROUTER_API_KEY}",
  "base_url": "https://openrouter.ai/api/v1",
  "max_turns": 6,
  "max_retries": 3,
  "max_workers": 2,
  "parallel": true,
  "available_tools": ["bash"],
  "system_prompt": ["You are a careful shell agent.", "Answer with the number only."],
  "evaluate_results": true,
  "evaluation_metric": "numeric_match",
  "evaluator_model_name": "openai/gpt-4o-mini",
  "evaluator_api_key": "${OPENROUTER_API_KEY}",
  "evaluator_base_url": "https://openrouter.ai/api/v1",
  "evaluator_temperature": 0.0,
  "evaluator_max_retries": 3,
  "evaluator_extra_params": {},
  "resource_types": [],
  "resource_init_configs": {},
  "sandbox_server_url": "http://127.0.0.1:18890",
  "sandbox_auto_start": false,
  "sandbox_config_path": "",
  "sandbox_timeout": 120,
  "number_of_tasks": 2,
  "task_ids": [],
  "save_results": true,
  "save_trajectories": true,
  "trajectory_only": false,
  "save_summary": true
}
`

// TestRolloutAgentFlowConfig runs an unchanged AgentFlow rollout config on
// the simulated model: every key is accepted and mapped (issue 13,
// point 4).
func TestRolloutAgentFlowConfig(t *testing.T) {
	dir := t.TempDir()
	bench, err := os.ReadFile("../configs/examples/shell-tasks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"af.json": agentflowConfig, "shell.jsonl": string(bench)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	code := Main(t.Context(), []string{"rollout", "--config", filepath.Join(dir, "af.json"), "--data", filepath.Join(dir, "data"), "--mode", "simulated"}, &out, &out)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out.String())
	}
	if strings.Contains(out.String(), "unknown settings key") || strings.Contains(out.String(), "does not use") {
		t.Fatalf("AgentFlow keys reported as unknown:\n%s", out.String())
	}
	var man rollout.Manifest
	testkit.ReadJSON(t, filepath.Join(dir, "af_results", "rollout_af_shell.json"), &man)
	var sum rollout.Summary
	testkit.ReadJSON(t, man.Summary, &sum)
	// number_of_tasks 2; numeric_match; save_trajectories keeps episodes.
	if sum.TotalTasks != 2 || sum.FinishedSamples != 2 || sum.Metric != "numeric_match" || man.Episodes == "" {
		t.Fatalf("summary %+v", sum)
	}
	lines := testkit.ReadLines(t, man.Episodes)
	var ep struct {
		Trajectories []struct {
			Steps []struct {
				ChatCompletions []struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"chat_completions"`
			} `json:"steps"`
		} `json:"trajectories"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &ep); err != nil || len(ep.Trajectories) == 0 || len(ep.Trajectories[0].Steps) == 0 {
		t.Fatalf("episode %s: %v", lines[0], err)
	}
	if sys := ep.Trajectories[0].Steps[0].ChatCompletions[0]; sys.Role != "system" || sys.Content != "You are a careful shell agent.\nAnswer with the number only." {
		t.Fatalf("system prompt %+v", sys)
	}

	// --question: AgentFlow's quick single-question mode.
	out.Reset()
	code = Main(t.Context(), []string{"rollout", "--config", filepath.Join(dir, "af.json"), "--data", filepath.Join(dir, "data"), "--mode", "simulated",
		"--output-dir", filepath.Join(dir, "q"), "--question", "Create a file hello.txt containing flock, then submit the number of bytes in it."}, &out, &out)
	if code != 0 || !strings.Contains(out.String(), "answer: ") || !strings.Contains(out.String(), "1 of 1") {
		t.Fatalf("--question: exit %d\n%s", code, out.String())
	}
}

// TestRolloutAgentFlowRefusals: tools flock does not have and unknown
// keys are refused, naming the tool or the key, never echoing the config's
// literal API key (which flock takes: TestRolloutLiteralKeyCanary).
func TestRolloutAgentFlowRefusals(t *testing.T) {
	for name, tc := range map[string]struct{ from, to, want string }{
		"tool":        {`"available_tools": ["bash"]`, `"available_tools": ["bash", "web-search"]`, `web-search`},
		"unknown key": {`"max_workers"`, `"max_wokers"`, `unknown key "max_wokers" (did you mean "max_workers"?)`},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := strings.Replace(agentflowConfig, tc.from, tc.to, 1)
			cfg = strings.Replace(cfg, `"api_key": "${OPENROUTER_API_KEY}"`, `"api_key": "sk-secret-123"`, 1)
			if err := os.WriteFile(filepath.Join(dir, "af.json"), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "shell.jsonl"), []byte(`{"id": "a", "question": "q?", "answer": "1"}`+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			code := Main(t.Context(), []string{"rollout", "--config", filepath.Join(dir, "af.json"), "--data", filepath.Join(dir, "data"), "--mode", "simulated"}, &out, &out)
			if code == 0 || !strings.Contains(out.String(), tc.want) || strings.Contains(out.String(), "sk-secret-123") {
				t.Fatalf("exit %d\n%s", code, out.String())
			}
		})
	}
}

// TestRolloutTaskKwargs: a task's kwargs reach the agent's tools: bash sees
// them as environment variables, python as the dict task_kwargs.
func TestRolloutTaskKwargs(t *testing.T) {
	h := newHandRollout(t, "")
	h.write("bench.jsonl", `{"id": "k", "question": "Which database?", "answer": "concert_singer|concert_singer", "kwargs": {"db_id": "concert_singer"}}
`)
	h.write("script.jsonl", `{"match": "Which database?", "tool_calls": [{"name": "bash", "arguments": {"command": "printf '%s|' \"$db_id\""}}, {"name": "python", "arguments": {"code": "print(task_kwargs['db_id'])"}}]}
{"match": "concert_singer", "content": "Final answer: concert_singer|concert_singer"}
{"content": "Final answer: kwargs missing"}
`)
	h.write("rollout.yaml", strings.Replace(mustRead(t, h.config), "max_turns: 3}", "max_turns: 3, tools: [bash, python]}", 1))
	if out, code := h.run(); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	_, _, rows, _ := h.state()
	if r := rows["k"]; !r.Correct {
		b, _ := os.ReadFile(filepath.Join(r.WorkDir, "trajectory.json"))
		t.Fatalf("kwargs did not reach the tools: %+v\n%s", r, b)
	}
}
