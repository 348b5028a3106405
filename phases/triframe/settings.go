package triframe

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/flockrun/flock/phases/agent"
	"github.com/flockrun/flock/phases/settings"
)

// Defaults of the triframe settings.
const (
	DefaultContextTrimmingThreshold = 80_000
	DefaultOutputLimit              = 10_000
	DefaultTimeout                  = 60
	DefaultMaxActorRetries          = 3
	DefaultRatingThreshold          = -0.25
	DefaultSoftWarning              = 0.80
	DefaultHardWarning              = 0.95
	DefaultMaxSubagents             = 4
	DefaultBudgetShare              = 0.5
	DefaultReportActions            = 10
)

// Settings are triframe's keys of the run's settings document. Flock's
// keys are accepted as they are; keys of other workflows (generator ...)
// and the engine's (limits, models, scoring ...) are ignored here.
type Settings struct {
	// Advisors, Actors and Raters are model entries (Flock's
	// MiddlemanSettings). At least one actor is required.
	Advisors []agent.Model `json:"advisors"`
	Actors   []agent.Model `json:"actors"`
	Raters   []agent.Model `json:"raters"`
	// LimitType is the usage shown to the models: token (default), action,
	// time or cost. The engine enforces every limit of "limits" anyway.
	LimitType string `json:"limit_type"`
	// IntermediateScoring offers score and score_log instead of submit
	// (the run then ends by a limit). Also on when scoring.intermediate is.
	IntermediateScoring bool `json:"intermediate_scoring"`
	// RequireFunctionCall forces a tool call (tool_choice) from every model.
	RequireFunctionCall bool `json:"require_function_call"`
	// EnableAdvising (default true) runs the advisors before each step.
	EnableAdvising *bool `json:"enable_advising"`
	// EnableToolUse (default true) uses native tool calls; false switches
	// to text tool modes, fenced blocks or, with EnableXML, XML tags.
	EnableToolUse *bool `json:"enable_tool_use"`
	EnableXML     bool  `json:"enable_xml"`
	// ContextTrimmingThreshold is the size, in characters, each prompt is
	// kept under (default 80000): older history is dropped first; the
	// newest action and its output always stay, clipped head and tail when
	// they do not fit whole.
	ContextTrimmingThreshold int `json:"context_trimming_threshold"`
	// OutputLimit caps each tool output and each replayed message, in
	// characters, head and tail kept (default 10000, or
	// context_trimming_threshold when that is smaller). A value larger
	// than context_trimming_threshold is refused. It clips what the
	// models are shown; bash.output_limit, applied first by the handlers,
	// caps what is kept of each stream.
	OutputLimit int `json:"output_limit"`
	// Timeout is the initial bash/python timeout in seconds (default 60);
	// the agent changes it with set_timeout. It times every command the
	// agent runs, so bash.timeout_s and python.timeout_s could never apply:
	// a run setting either is refused at start (CheckSettings).
	Timeout int `json:"timeout"`
	// MaxActorRetries bounds how often one step goes back to the actors
	// (no usable option, or every option rated below RatingThreshold).
	// Default 3; 0 disables retries.
	MaxActorRetries *int `json:"max_actor_retries"`
	// RatingThreshold is the mean rating below which the best option is
	// rejected (default -0.25).
	RatingThreshold *float64 `json:"rating_threshold"`
	// UsageWarnings are the fractions of the limit at which tool outputs
	// carry a warning (default [0.8, 0.95]).
	UsageWarnings []float64 `json:"usage_warnings"`
	// EnableSubagents offers launch_subagents to the agent.
	EnableSubagents bool              `json:"enable_subagents"`
	Subagents       SubagentsSettings `json:"subagents"`
	// Subagent marks a run started by launch_subagents: it has conclude
	// instead of submit and cannot launch subagents itself. Set by the
	// parent, not by users.
	Subagent bool `json:"subagent"`
	// AskHuman asks a person to approve each chosen action before it runs
	// (a human operation with choices approve and reject): a rejected
	// action is not run and the actors hear so in a warning.
	AskHuman bool `json:"ask_human"`
	// Intervention puts the run in intervention mode: before each chosen
	// action runs, the run waits for an operator (an intervention
	// operation) who approves it or replaces it with an action of their
	// own (POST /runs/{id}/intervene). The run var "intervention" (true)
	// switches it on from a step on, e.g. in a fork.
	Intervention bool `json:"intervention"`
	// Tools are sandbox tools offered to the actors besides triframe's
	// own, by full name ("text2sql:execute"); the model sees
	// "text2sql-execute". Native tool calls only (enable_tool_use).
	Tools []string `json:"tools"`
	// SandboxTools are the schemas of the sandbox tools of Tools, by full
	// name, filled in from the sandbox's registry when the run starts.
	SandboxTools map[string]agent.SandboxTool `json:"sandbox_tools"`

	// Scoring is the engine's scoring section, read for its intermediate flag.
	Scoring struct {
		Intermediate bool `json:"intermediate"`
	} `json:"scoring"`
}

// SubagentsSettings configures launch_subagents.
type SubagentsSettings struct {
	// MaxAgents caps the agents of one launch (default 4).
	MaxAgents int `json:"max_agents"`
	// BudgetShare is the fraction of the parent's remaining budget (each
	// limit) shared evenly by the agents of one launch (default 0.5).
	BudgetShare float64 `json:"budget_share"`
	// Judge is the model judging tournament matches (default: the first
	// rater, else the first actor).
	Judge *agent.Model `json:"judge"`
	// ReportActions is how many of a subagent's last actions its report
	// holds (default 10).
	ReportActions int `json:"report_actions"`
}

// ParseSettings decodes, checks and completes triframe settings.
func ParseSettings(doc json.RawMessage) (Settings, error) {
	var s Settings
	if err := settings.Decode(doc, &s); err != nil {
		return s, fmt.Errorf("triframe settings: %w", err)
	}
	if err := s.check(); err != nil {
		return s, err
	}
	s.applyDefaults()
	return s, nil
}

func (s *Settings) check() error {
	if len(s.Actors) == 0 {
		return errors.New("actors: at least one actor model entry is required")
	}
	for _, g := range []struct {
		name string
		list []agent.Model
	}{{"advisors", s.Advisors}, {"actors", s.Actors}, {"raters", s.Raters}} {
		for i, m := range g.list {
			if err := settings.At(fmt.Sprintf("%s[%d]", g.name, i), m.Validate()); err != nil {
				return err
			}
		}
	}
	if _, err := agent.ParseLimitType(s.LimitType); err != nil {
		return err
	}
	switch {
	case s.ContextTrimmingThreshold < 0:
		return errors.New("context_trimming_threshold: must be >= 0")
	case s.OutputLimit < 0:
		return errors.New("output_limit: must be >= 0")
	case s.Timeout < 0 || s.Timeout > agent.MaxTimeout:
		return fmt.Errorf("timeout: must be between 0 and %d", agent.MaxTimeout)
	case s.MaxActorRetries != nil && *s.MaxActorRetries < 0:
		return errors.New("max_actor_retries: must be >= 0")
	case s.Subagents.MaxAgents < 0:
		return errors.New("subagents.max_agents: must be >= 0")
	case s.Subagents.BudgetShare < 0 || s.Subagents.BudgetShare > 1:
		return errors.New("subagents.budget_share: must be between 0 and 1")
	case s.Subagents.ReportActions < 0:
		return errors.New("subagents.report_actions: must be >= 0")
	}
	if s.OutputLimit > 0 && s.OutputLimit > s.threshold() {
		return fmt.Errorf("output_limit (%d) is larger than context_trimming_threshold (%d): one output could fill the whole prompt; "+
			"lower output_limit or raise context_trimming_threshold", s.OutputLimit, s.threshold())
	}
	for i, f := range s.UsageWarnings {
		if f <= 0 || f > 1 {
			return fmt.Errorf("usage_warnings[%d]: must be in (0, 1]", i)
		}
	}
	// Before applyDefaults: enable_tool_use unset is its default, true.
	if err := agent.CheckSandboxTools(s.Tools, agent.ModeOf(s.EnableToolUse == nil || *s.EnableToolUse, s.EnableXML)); err != nil {
		return err
	}
	if s.Subagents.Judge != nil {
		if err := settings.At("subagents.judge", s.Subagents.Judge.Validate()); err != nil {
			return err
		}
	}
	return nil
}

func (s *Settings) applyDefaults() {
	t := true
	if s.EnableAdvising == nil {
		s.EnableAdvising = &t
	}
	if s.EnableToolUse == nil {
		s.EnableToolUse = &t
	}
	if s.ContextTrimmingThreshold == 0 {
		s.ContextTrimmingThreshold = DefaultContextTrimmingThreshold
	}
	if s.OutputLimit == 0 {
		s.OutputLimit = min(DefaultOutputLimit, s.ContextTrimmingThreshold)
	}
	if s.Timeout == 0 {
		s.Timeout = DefaultTimeout
	}
	if s.MaxActorRetries == nil {
		n := DefaultMaxActorRetries
		s.MaxActorRetries = &n
	}
	if s.RatingThreshold == nil {
		r := DefaultRatingThreshold
		s.RatingThreshold = &r
	}
	if len(s.UsageWarnings) == 0 {
		s.UsageWarnings = []float64{DefaultSoftWarning, DefaultHardWarning}
	}
	if s.Scoring.Intermediate {
		s.IntermediateScoring = true
	}
	if s.Subagent {
		s.EnableSubagents = false
	}
	if s.Subagents.MaxAgents == 0 {
		s.Subagents.MaxAgents = DefaultMaxSubagents
	}
	if s.Subagents.BudgetShare == 0 {
		s.Subagents.BudgetShare = DefaultBudgetShare
	}
	if s.Subagents.ReportActions == 0 {
		s.Subagents.ReportActions = DefaultReportActions
	}
	if s.Subagents.Judge == nil {
		j := s.Actors[0]
		if len(s.Raters) > 0 {
			j = s.Raters[0]
		}
		j.N = 1
		s.Subagents.Judge = &j
	}
}

// threshold is context_trimming_threshold with its default.
func (s *Settings) threshold() int {
	if s.ContextTrimmingThreshold == 0 {
		return DefaultContextTrimmingThreshold
	}
	return s.ContextTrimmingThreshold
}

// Mode is the tool-calling mode the settings select.
func (s *Settings) Mode() agent.Mode { return agent.ModeOf(*s.EnableToolUse, s.EnableXML) }

// Advising reports whether advisors run.
func (s *Settings) Advising() bool { return *s.EnableAdvising && len(s.Advisors) > 0 }

// Limit is the parsed limit type.
func (s *Settings) Limit() agent.LimitType {
	lt, _ := agent.ParseLimitType(s.LimitType)
	return lt
}

// Toolset is the actor's toolset.
func (s *Settings) Toolset() agent.Toolset {
	return agent.Toolset{IntermediateScoring: s.IntermediateScoring && !s.Subagent, Conclude: s.Subagent, Subagents: s.EnableSubagents}
}

// finish names the finishing action for prompts and warnings.
func (s *Settings) finish() string {
	switch {
	case s.Subagent:
		return "conclude with your result"
	case s.IntermediateScoring:
		return "make sure your best work is in place and scored"
	}
	return "submit your answer"
}

// thresholds are the usage warnings.
func (s *Settings) thresholds() []agent.Threshold {
	th := agent.Warnings(s.UsageWarnings[0], s.UsageWarnings[len(s.UsageWarnings)-1], s.finish())
	if len(s.UsageWarnings) == 1 {
		return th[:1]
	}
	return th
}
