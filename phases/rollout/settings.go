package rollout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flockrun/flock/grading"
	"github.com/flockrun/flock/internal/pathelem"
	"github.com/flockrun/flock/phases/agent"
	"github.com/flockrun/flock/phases/react"
	"github.com/flockrun/flock/phases/settings"
)

// Defaults of the settings that code reads (the others are the default
// tags of Settings).
const (
	// DefaultMaxConcurrency is max_concurrency's default (given after
	// AgentFlow's max_workers is mapped onto it).
	DefaultMaxConcurrency = 16
	// DefaultVerifierTimeoutS is verifier.timeout_s's default.
	DefaultVerifierTimeoutS = 300
	// MetricNone as evaluation_metric grades nothing.
	MetricNone     = "none"
	trajectoryFile = "trajectory.json"
	// externalWorkflow is the external-agent workflow (package
	// phases/externalagent), which writes its gateway trace as trajectory_file.
	externalWorkflow         = "external"
	maxAnswerBytesInLaneVars = 64 << 10
)

// Settings are the rollout workflow's settings.
type Settings struct {
	// DataPath is the benchmark file (JSONL, JSON list or {"data": [...]}).
	// A relative path is resolved against the run's work directory (the
	// CLI resolves it against the config file first).
	DataPath string `json:"data_path"`
	// Question, when set, is the whole benchmark: one task with this
	// question and no reference, data_path unused (AgentFlow's quick
	// single-question mode; flock rollout --question).
	Question string `json:"question,omitempty"`
	// DataFormat is the benchmark's format: jsonl, json, csv, tsv or
	// parquet (default: by data_path's extension; JSON otherwise).
	DataFormat string `json:"data_format,omitempty" enum:"jsonl,json,csv,tsv,parquet"`
	// Fields maps flock's row fields (id, question, answer, choices,
	// kwargs, verifier) to the file's column names, for any format.
	Fields map[string]string `json:"fields,omitempty"`
	// Shuffle shuffles the tasks (after task_ids) with Seed; Offset skips
	// that many of them, Limit keeps that many (0: all), then max_tasks
	// applies.
	Shuffle bool  `json:"shuffle,omitempty"`
	Seed    int64 `json:"seed,omitempty"`
	Offset  int   `json:"offset,omitempty" min:"0"`
	Limit   int   `json:"limit,omitempty" min:"0"`
	// BenchmarkName names the output files (default: DataPath's base name
	// without extension).
	BenchmarkName string `json:"benchmark_name,omitempty"`
	// OutputDir receives the result files (default "results" in the run's
	// work directory). Re-running with the same OutputDir resumes: finished
	// samples are not run again.
	OutputDir string `json:"output_dir,omitempty" default:"results"`
	// Agent is the workflow each sample runs and its settings.
	Agent AgentSpec `json:"agent"`
	// NumChains is the number of samples per task (default 1).
	NumChains int `json:"num_chains,omitempty" default:"1" min:"1"`
	// MaxConcurrency caps the agent runs in flight (default 16).
	MaxConcurrency int `json:"max_concurrency,omitempty" min:"1"`
	// ItemsPerLane is how many samples one lane runs before the rollout
	// refills (0, the default: all samples are spread over the lanes in
	// one round; 1: one lane per sample, refilled round by round).
	ItemsPerLane int `json:"items_per_lane,omitempty" min:"0"`
	// MaxTasks keeps the first N selected tasks (0: all).
	MaxTasks int `json:"max_tasks,omitempty" min:"0"`
	// TaskIDs keeps only these tasks (in file order).
	TaskIDs []string `json:"task_ids,omitempty"`
	// EvaluationMetric is exact_match (default), f1 (f1_score),
	// contains_answer, numeric_match, similarity, llm_judgement or none.
	EvaluationMetric string `json:"evaluation_metric,omitempty" default:"exact_match"`
	// CorrectThreshold: a score at or above it is correct (default 1).
	CorrectThreshold *float64 `json:"correct_threshold,omitempty" default:"1"`
	// Judge is the llm_judgement model.
	Judge *JudgeSpec `json:"judge,omitempty"`
	// Verifier is the default per-sample verifier; a task's own "verifier"
	// key wins.
	Verifier VerifierSpec `json:"verifier,omitempty"`
	// Metrics are more metrics scored on every sample with references,
	// and Verifiers more verifier commands by name, run after every
	// succeeded sample like the verifier; each score is in the row's
	// scores and the summary's score_means.
	Metrics   []string          `json:"metrics,omitempty"`
	Verifiers map[string]string `json:"verifiers,omitempty"`
	// Primary names the score that is the row's score (and reward): one of
	// metrics or verifiers (default: evaluation_metric, or "verifier" for
	// samples with a verifier).
	Primary string `json:"primary,omitempty"`
	// Reducers reduce each task's primary scores over its chains (mean,
	// max, mode, at_least_K); the summary's reduced has the mean over
	// tasks of each.
	Reducers []string `json:"reducers,omitempty"`
	// Episodes writes episodes_<bench>_<ts>.jsonl (default true).
	Episodes *bool `json:"episodes,omitempty"`
	// Advantages lists the estimators (grpo, rloo) whose group advantages
	// are written to groups_<bench>_<ts>.jsonl; empty writes no groups.
	Advantages []string `json:"advantages,omitempty" enum:"grpo,rloo"`
	// GroupsDropFailed leaves samples whose agent failed out of the groups
	// (by default they are members with reward 0 and their termination
	// reason).
	GroupsDropFailed bool `json:"groups_drop_failed,omitempty"`
	// GRPONoStdNorm makes GRPO only subtract the group mean.
	GRPONoStdNorm bool `json:"grpo_no_std_norm,omitempty"`
	// SegmentReward splits a folded trajectory's reward over its segments:
	// last_only (default), broadcast, uniform or geometric (with Gamma,
	// default 0.9).
	SegmentReward string  `json:"segment_reward,omitempty"`
	Gamma         float64 `json:"gamma,omitempty" default:"0.9"`
	// Resume (default true) continues the files of an earlier rollout of
	// the same benchmark in OutputDir, skipping its finished samples.
	Resume *bool `json:"resume,omitempty" default:"true"`
	// RetryFailed (default true) runs again samples whose agent run failed
	// in an earlier rollout.
	RetryFailed *bool `json:"retry_failed,omitempty" default:"true"`
	// Regrade re-grades every saved answer of the earlier rollout in
	// OutputDir with the current metric, judge and verifiers and runs no
	// agent (flock rollout --regrade; inspect_ai's "inspect score").
	Regrade bool `json:"regrade,omitempty"`
	// Models are the engine's model declarations; the agent's settings
	// inherit them unless they declare their own "models", which then win
	// whole (the two tables are not merged).
	Models json.RawMessage `json:"models,omitempty"`
	// AgentFlowKeys are AgentFlow's rollout config keys, mapped onto the
	// ones above.
	AgentFlowKeys
}

// AgentSpec names the agent workflow of each sample.
type AgentSpec struct {
	// Workflow is any registered workflow (default react).
	Workflow string `json:"workflow,omitempty" default:"react"`
	// Settings are the agent run's settings (a JSON object).
	Settings json.RawMessage `json:"settings,omitempty"`
}

// JudgeSpec configures llm_judgement.
type JudgeSpec struct {
	Model react.ModelRef `json:"model"`
	// Instructions replace grading.DefaultJudgeInstructions.
	Instructions string `json:"instructions,omitempty"`
}

// VerifierSpec is a command run after each sample in the agent's work
// directory; its stdout is {"reward": x, "is_correct": b, "signals": {...}}
// (see grading.ParseVerifierOutput). It sees FLOCK_TASK_ID, FLOCK_CHAIN,
// FLOCK_ANSWER and FLOCK_GROUND_TRUTH (a JSON list) in its environment.
type VerifierSpec struct {
	Command  string  `json:"command,omitempty"`
	TimeoutS float64 `json:"timeout_s,omitempty" default:"300" min:"0"`
}

// ParseSettings decodes the settings, applies defaults and validates them
// (package phases/settings).
func ParseSettings(doc json.RawMessage) (Settings, error) {
	var s Settings
	if err := settings.Decode(doc, &s); err != nil {
		return s, fmt.Errorf("%w: %w", ErrSettings, err)
	}
	return s, nil
}

// Normalize maps AgentFlow's keys onto flock's, then gives the defaults
// that AgentFlow's keys may set (max_concurrency, episodes) and the
// benchmark's name.
func (s *Settings) Normalize() error {
	if err := s.applyAgentFlow(); err != nil {
		return err
	}
	if s.MaxConcurrency == 0 {
		s.MaxConcurrency = DefaultMaxConcurrency
	}
	if s.Episodes == nil {
		t := true
		s.Episodes = &t
	}
	if s.BenchmarkName == "" && s.Question != "" {
		s.BenchmarkName = "question"
	}
	if s.BenchmarkName == "" {
		base := filepath.Base(s.DataPath)
		s.BenchmarkName = strings.TrimSuffix(base, filepath.Ext(base))
	}
	s.BenchmarkName = fileSafe(s.BenchmarkName)
	return nil
}

// Validate checks what the tags cannot: the benchmark named, a react
// agent's settings, the field mapping, the metrics, verifiers and
// reducers, the judge and the grouping.
func (s *Settings) Validate() error {
	if strings.TrimSpace(s.DataPath) == "" && strings.TrimSpace(s.Question) == "" {
		return settings.Errorf("data_path", "required (or question)")
	}
	if s.Agent.Workflow == react.Name {
		var rs react.Settings
		if err := settings.Decode(s.Agent.Settings, &rs); err != nil {
			return settings.At("agent.settings", err)
		}
	}
	for _, f := range slices.Sorted(maps.Keys(s.Fields)) {
		if !slices.Contains(fieldNames, f) {
			return settings.Errorf("fields", "%q is not one of %s", f, strings.Join(fieldNames, ", "))
		}
		if strings.TrimSpace(s.Fields[f]) == "" {
			return settings.Errorf("fields."+f, "want a column name")
		}
	}
	if s.EvaluationMetric != MetricNone && s.EvaluationMetric != grading.NameLLMJudgement {
		if _, err := grading.Lookup(s.EvaluationMetric); err != nil {
			return settings.Errorf("evaluation_metric", "%q is not one of %s, none", s.EvaluationMetric, strings.Join(grading.Names(), ", "))
		}
	}
	if s.EvaluationMetric == grading.NameLLMJudgement && (s.Judge == nil || s.Judge.Model.Model.Model == "") {
		return settings.Errorf("judge.model", "required for llm_judgement")
	}
	seen := map[string]bool{s.EvaluationMetric: true, "verifier": true}
	for i, m := range s.Metrics {
		p := fmt.Sprintf("metrics[%d]", i)
		if m == grading.NameLLMJudgement || m == MetricNone {
			return settings.Errorf(p, "%q only as evaluation_metric", m)
		}
		if _, err := grading.Lookup(m); err != nil {
			return settings.Errorf(p, "%q is not one of %s", m, strings.Join(grading.Names(), ", "))
		}
		if seen[m] {
			return settings.Errorf(p, "%q is already scored", m)
		}
		seen[m] = true
	}
	for _, name := range slices.Sorted(maps.Keys(s.Verifiers)) {
		switch {
		case seen[name]:
			return settings.Errorf("verifiers."+name, "the name is already a metric's")
		case strings.TrimSpace(s.Verifiers[name]) == "":
			return settings.Errorf("verifiers."+name, "want a command")
		}
	}
	if s.Primary != "" && !seen[s.Primary] && s.Verifiers[s.Primary] == "" {
		return settings.Errorf("primary", "%q is not evaluation_metric, one of metrics or one of verifiers", s.Primary)
	}
	for i, r := range s.Reducers {
		if err := grading.CheckReducer(r); err != nil {
			return settings.At(fmt.Sprintf("reducers[%d]", i), err)
		}
	}
	if len(s.Advantages) > 0 && !*s.Episodes {
		return settings.Errorf("advantages", "the groups hold the episodes' trajectories: set episodes true or drop advantages")
	}
	if _, err := grading.SegmentRewards(s.SegmentReward, 1, 1, s.Gamma); err != nil {
		return settings.At("segment_reward", err)
	}
	return nil
}

// Normalize gives an agent without settings empty ones.
func (a *AgentSpec) Normalize() error {
	if t := bytes.TrimSpace(a.Settings); len(t) == 0 || string(t) == "null" {
		a.Settings = json.RawMessage("{}")
	} else if t[0] != '{' {
		return settings.Errorf("settings", "must be a JSON object")
	}
	return nil
}

// Validate refuses the rollout's own workflows as the agent.
func (a *AgentSpec) Validate() error {
	if a.Workflow == Name || a.Workflow == LaneName {
		return settings.Errorf("workflow", "%q cannot be the agent", a.Workflow)
	}
	return nil
}

// CheckSettings checks a rollout's settings at start: ParseSettings, then
// the keys that would be ignored beside another (agent.ErrSettingsConflict,
// naming both). The rollout itself runs no commands but its verifiers,
// timed by verifier.timeout_s, so bash.timeout_s and python.timeout_s at
// its top level are refused: the agents' commands take theirs from
// agent.settings. Model entries with both temp and temperature are
// refused, in judge.model and, for a react agent, in agent.settings.
func CheckSettings(doc json.RawMessage) error {
	s, err := ParseSettings(doc)
	if err != nil {
		return err
	}
	bash, python := agent.EngineTimeoutKeys(doc)
	if bash {
		return fmt.Errorf("%w: bash.timeout_s would time nothing: the rollout's own commands are its verifiers, "+
			"timed by verifier.timeout_s (default %d s), and the agents' commands take agent.settings.bash.timeout_s: "+
			"move it to one of those", agent.ErrSettingsConflict, DefaultVerifierTimeoutS)
	}
	if python {
		return fmt.Errorf("%w: python.timeout_s would time nothing: the rollout runs no python itself, "+
			"and the agents' python calls take agent.settings.python.timeout_s: move it there", agent.ErrSettingsConflict)
	}
	var agentDoc struct {
		WorkflowType string `json:"workflow_type"`
	}
	if json.Unmarshal(s.Agent.Settings, &agentDoc) == nil && agentDoc.WorkflowType != "" && agentDoc.WorkflowType != s.Agent.Workflow {
		return fmt.Errorf("%w: agent.workflow %q and agent.settings.workflow_type %q name different workflows: give one, or make them agree",
			agent.ErrSettingsConflict, s.Agent.Workflow, agentDoc.WorkflowType)
	}
	if s.Judge != nil {
		if err := s.Judge.Model.CheckConflicts("judge.model"); err != nil {
			return err
		}
	}
	if s.Agent.Workflow == react.Name {
		if err := react.CheckSettings(s.Agent.Settings); err != nil {
			return fmt.Errorf("agent.settings: %w", err)
		}
	}
	return nil
}

// primary names the score the summary's mean_score is of.
func (s Settings) primary() string {
	if s.Primary != "" {
		return s.Primary
	}
	if s.Verifier.Command != "" {
		return "verifier"
	}
	return s.EvaluationMetric
}

// fileSafe keeps a name usable inside a file name.
func fileSafe(name string) string {
	s := pathelem.Safe(name)
	if s == "" {
		return "benchmark"
	}
	return s
}

// abs resolves p against the run's work directory.
func abs(workDir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(workDir, p)
}

// Files are the output files of one rollout.
type Files struct {
	Dir        string `json:"dir"`
	Manifest   string `json:"manifest"`
	Results    string `json:"results_file"`
	Evaluation string `json:"evaluation_file"`
	Summary    string `json:"summary_file"`
	Episodes   string `json:"episodes_file,omitempty"`
	Groups     string `json:"groups_file,omitempty"`
}

// files names the output files for timestamp ts.
func (s Settings) files(workDir, ts string) Files {
	dir := abs(workDir, s.OutputDir)
	name := func(kind, ext string) string {
		return filepath.Join(dir, kind+"_"+s.BenchmarkName+"_"+ts+ext)
	}
	f := Files{
		Dir:        dir,
		Manifest:   filepath.Join(dir, "rollout_"+s.BenchmarkName+".json"),
		Results:    name("results", ".jsonl"),
		Evaluation: name("evaluation", ".json"),
		Summary:    name("summary", ".json"),
	}
	if *s.Episodes {
		f.Episodes = name("episodes", ".jsonl")
	}
	if len(s.Advantages) > 0 {
		f.Groups = name("groups", ".jsonl")
	}
	return f
}

// agentSettings returns the agent's settings with the models inherited and,
// for react with episodes on, the trajectory file set.
func (s Settings) agentSettings() (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(s.Agent.Settings, &m); err != nil {
		return nil, fmt.Errorf("%w: agent.settings: %v", ErrSettings, err)
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	if _, ok := m["models"]; !ok && len(s.Models) > 0 {
		m["models"] = s.Models
	}
	if (s.Agent.Workflow == react.Name || s.Agent.Workflow == externalWorkflow) && *s.Episodes {
		if _, ok := m["trajectory_file"]; !ok {
			m["trajectory_file"] = json.RawMessage(`"` + trajectoryFile + `"`)
		}
	}
	return json.Marshal(m)
}
