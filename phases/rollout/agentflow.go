package rollout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/flockrun/flock/grading"
	"github.com/flockrun/flock/phases/agent"
	"github.com/flockrun/flock/phases/react"
	"github.com/flockrun/flock/phases/settings"
)

// AgentFlowKeys are the keys of AgentFlow's rollout config
// (rollout/core/config.py) that flock's own keys do not already spell the
// same way. A rollout accepts an AgentFlow config file unchanged: each key
// maps to flock's (see applyAgentFlow), or is accepted and has nothing to
// do in flock (parallel, save_results, save_summary, the sandbox keys).
type AgentFlowKeys struct {
	// ModelName, BaseURL and APIKey declare the agent's model (an
	// OpenAI-compatible endpoint). APIKey must be "${VAR}" (or "$VAR"):
	// flock reads keys from the environment and never stores them.
	ModelName string `json:"model_name,omitempty"`
	BaseURL   string `json:"base_url,omitempty"`
	APIKey    string `json:"api_key,omitempty"`
	// MaxRetries is the model's max_retries.
	MaxRetries *int `json:"max_retries,omitempty"`
	// MaxTurns, AvailableTools, SystemPrompt (a string or a list joined
	// with newlines) and SystemPromptFile are the react agent's max_turns,
	// tools, system_prompt and system_prompt_file.
	MaxTurns         int             `json:"max_turns,omitempty"`
	AvailableTools   []string        `json:"available_tools,omitempty"`
	SystemPrompt     json.RawMessage `json:"system_prompt,omitempty"`
	SystemPromptFile string          `json:"system_prompt_file,omitempty"`
	// MaxWorkers is max_concurrency; NumberOfTasks is max_tasks.
	MaxWorkers    int `json:"max_workers,omitempty"`
	NumberOfTasks int `json:"number_of_tasks,omitempty"`
	// Parallel is accepted: flock always runs max_concurrency samples at
	// once.
	Parallel *bool `json:"parallel,omitempty"`
	// EvaluateResults false and TrajectoryOnly true grade nothing
	// (evaluation_metric none).
	EvaluateResults *bool `json:"evaluate_results,omitempty"`
	TrajectoryOnly  *bool `json:"trajectory_only,omitempty"`
	// Evaluator* declare the llm_judgement judge; without
	// EvaluatorModelName the judge is the agent's model, as in AgentFlow.
	EvaluatorModelName   string          `json:"evaluator_model_name,omitempty"`
	EvaluatorBaseURL     string          `json:"evaluator_base_url,omitempty"`
	EvaluatorAPIKey      string          `json:"evaluator_api_key,omitempty"`
	EvaluatorTemperature *float64        `json:"evaluator_temperature,omitempty"`
	EvaluatorMaxRetries  *int            `json:"evaluator_max_retries,omitempty"`
	EvaluatorExtraParams json.RawMessage `json:"evaluator_extra_params,omitempty"`
	// SaveTrajectories is episodes. SaveResults and SaveSummary are
	// accepted: flock always writes the results and the summary.
	SaveTrajectories *bool `json:"save_trajectories,omitempty"`
	SaveResults      *bool `json:"save_results,omitempty"`
	SaveSummary      *bool `json:"save_summary,omitempty"`
	// The sandbox keys are accepted and not read here: available_tools may
	// name flock's tools and sandbox tools ("rag:search"), served by the
	// sandbox of flock serve --sandbox-config or of the run's sandbox_url.
	ResourceTypes       []string        `json:"resource_types,omitempty"`
	ResourceInitConfigs json.RawMessage `json:"resource_init_configs,omitempty"`
	SandboxServerURL    string          `json:"sandbox_server_url,omitempty"`
	SandboxAutoStart    *bool           `json:"sandbox_auto_start,omitempty"`
	SandboxConfigPath   string          `json:"sandbox_config_path,omitempty"`
	SandboxTimeout      float64         `json:"sandbox_timeout,omitempty"`
}

var envRef = regexp.MustCompile(`^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}|([A-Za-z_][A-Za-z0-9_]*))$`)

// keyEnv returns the variable an AgentFlow api_key names, or an error that
// never quotes the value (it may be a key).
func keyEnv(field, v string) (string, error) {
	if v == "" {
		return "", nil
	}
	m := envRef.FindStringSubmatch(strings.TrimSpace(v))
	if m == nil {
		return "", settings.Errorf(field, "flock takes no API key in settings (settings are stored with the run); "+
			"put the key in an environment variable and write %s: \"${VAR}\"", field)
	}
	return m[1] + m[2], nil
}

// conflict reports two keys of one setting with different values.
func conflict(a, b string) error {
	return fmt.Errorf("%w: %s and %s set the same thing to different values: give one", agent.ErrSettingsConflict, a, b)
}

// applyAgentFlow maps AgentFlow's keys onto s's own. A flock key set beside
// its AgentFlow alias must agree with it.
func (s *Settings) applyAgentFlow() error {
	a := s.AgentFlowKeys
	for _, k := range []struct {
		dst             *int
		v               int
		flockKey, afKey string
	}{{&s.MaxConcurrency, a.MaxWorkers, "max_concurrency", "max_workers"}, {&s.MaxTasks, a.NumberOfTasks, "max_tasks", "number_of_tasks"}} {
		switch {
		case k.v == 0:
		case *k.dst == 0:
			*k.dst = k.v
		case *k.dst != k.v:
			return conflict(k.flockKey, k.afKey)
		}
	}
	if (a.EvaluateResults != nil && !*a.EvaluateResults) || (a.TrajectoryOnly != nil && *a.TrajectoryOnly) {
		s.EvaluationMetric = MetricNone
	}
	if a.SaveTrajectories != nil {
		if s.Episodes != nil && *s.Episodes != *a.SaveTrajectories {
			return conflict("episodes", "save_trajectories")
		}
		v := *a.SaveTrajectories
		s.Episodes = &v
	}
	if err := s.agentFlowModels(); err != nil {
		return err
	}
	return s.agentFlowAgent()
}

// agentFlowModels declares model_name and evaluator_model_name as
// OpenAI-compatible endpoints in models (unless models declares them) and
// makes the judge of llm_judgement the evaluator's model, else the
// agent's, as AgentFlow does.
func (s *Settings) agentFlowModels() error {
	a := s.AgentFlowKeys
	models := map[string]json.RawMessage{}
	if m := bytes.TrimSpace(s.Models); len(m) > 0 && string(m) != "null" {
		if err := json.Unmarshal(m, &models); err != nil {
			return settings.Errorf("models", "want an object of model entries")
		}
	}
	add := func(name, baseURL, apiKey, keyField string, retries *int) error {
		if _, ok := models[name]; ok || name == "" {
			return nil
		}
		env, err := keyEnv(keyField, apiKey)
		if err != nil {
			return err
		}
		e := map[string]any{"provider": "openai"}
		if baseURL != "" {
			e["base_url"] = baseURL
		}
		if env != "" {
			e["api_key_env"] = env
		}
		if retries != nil {
			e["max_retries"] = *retries
		}
		models[name], err = json.Marshal(e)
		return err
	}
	if err := add(a.ModelName, a.BaseURL, a.APIKey, "api_key", a.MaxRetries); err != nil {
		return err
	}
	judge := a.EvaluatorModelName
	if judge == "" {
		judge = a.ModelName
	} else if err := add(judge, a.EvaluatorBaseURL, a.EvaluatorAPIKey, "evaluator_api_key", a.EvaluatorMaxRetries); err != nil {
		return err
	}
	if s.Judge == nil && judge != "" && s.EvaluationMetric == grading.NameLLMJudgement {
		s.Judge = &JudgeSpec{Model: react.ModelRef{Model: agent.Model{Model: judge, Temperature: a.EvaluatorTemperature}}}
	}
	if len(models) == 0 {
		return nil
	}
	b, err := json.Marshal(models)
	s.Models = b
	return err
}

// agentFlowAgent sets the react agent's model, max_turns, tools and system
// prompt from AgentFlow's keys; one the agent's settings also set must
// agree.
func (s *Settings) agentFlowAgent() error {
	a := s.AgentFlowKeys
	keys := map[string]any{}
	if a.ModelName != "" {
		keys["model"] = a.ModelName
	}
	if a.MaxTurns > 0 {
		keys["max_turns"] = a.MaxTurns
	}
	if a.AvailableTools != nil {
		for _, name := range a.AvailableTools {
			if !react.Offers(name) {
				return settings.Errorf("available_tools", "flock has no tool %q (its tools: bash, python, submit, summarize; "+
					"sandbox tools are named \"resource:tool\", as \"rag:search\")", name)
			}
		}
		keys["tools"] = a.AvailableTools
	}
	if p := bytes.TrimSpace(a.SystemPrompt); len(p) > 0 && string(p) != "null" {
		keys["system_prompt"] = json.RawMessage(p)
	}
	if a.SystemPromptFile != "" {
		keys["system_prompt_file"] = a.SystemPromptFile
	}
	if len(keys) == 0 {
		return nil
	}
	if wf := s.Agent.Workflow; wf != react.Name {
		names := slices.Sorted(maps.Keys(keys))
		return fmt.Errorf("model_name, max_turns, available_tools and system_prompt set react's %s, but agent.workflow is %q: "+
			"set them in agent.settings", strings.Join(names, ", "), wf)
	}
	var as map[string]json.RawMessage
	if err := json.Unmarshal(s.Agent.Settings, &as); err != nil {
		return settings.Errorf("agent.settings", "must be a JSON object")
	}
	if as == nil {
		as = map[string]json.RawMessage{}
	}
	afName := map[string]string{"model": "model_name", "max_turns": "max_turns", "tools": "available_tools",
		"system_prompt": "system_prompt", "system_prompt_file": "system_prompt_file"}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		b, err := json.Marshal(keys[k])
		if err != nil {
			return err
		}
		if old, ok := as[k]; ok {
			if digest(json.RawMessage(old)) != digest(json.RawMessage(b)) {
				return conflict("agent.settings."+k, afName[k])
			}
			continue
		}
		as[k] = b
	}
	b, err := json.Marshal(as)
	s.Agent.Settings = b
	return err
}
