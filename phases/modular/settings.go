package modular

import (
	"encoding/json"
	"fmt"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases/agent"
	"github.com/flockrun/flock/phases/settings"
)

// Defaults of the modular settings.
const (
	// DefaultContextTrimmingThreshold is the prompt budget in TOKENS.
	DefaultContextTrimmingThreshold = 80_000
	// DefaultKeepFirstMessages keeps the system prompt, the task and the
	// agent's first step (its call and the call's result).
	DefaultKeepFirstMessages = 4
	// DefaultOutputLimit caps each tool output and replayed message, in bytes.
	DefaultOutputLimit = 10_000
	// DefaultTimeout is the initial bash/python timeout in seconds.
	DefaultTimeout = 60
	// DefaultMaxRetries bounds consecutive generations without a usable action.
	DefaultMaxRetries = 3
	// DefaultSoftWarning and DefaultHardWarning are the usage fractions
	// above which the usage message carries a hint.
	DefaultSoftWarning = 0.75
	DefaultHardWarning = 0.90
)

// Tokenizer names accepted by the tokenizer setting.
const (
	TokenizerAuto   = "auto"
	TokenizerO200k  = "o200k_base"
	TokenizerCl100k = "cl100k_base"
	TokenizerApprox = "approx"
)

// Settings are modular's keys of the run's settings document. Flock's keys
// (generator, limit_type, intermediate_scoring, enable_tool_use,
// enable_xml) are accepted as they are; other workflows' keys and the
// engine's (limits, models, scoring ...) are ignored here, except the two
// read below.
type Settings struct {
	// Generator is the model entry that proposes every action (required).
	// Its n is the number of outputs per generate; the first usable one
	// is acted on.
	Generator *agent.Model `json:"generator"`
	// LimitType is the usage dimension the agent is told about first:
	// token (default), action, time or cost. The engine enforces every
	// limit of the settings' "limits" whatever this says.
	LimitType string `json:"limit_type"`
	// IntermediateScoring offers score and score_log instead of submit; the
	// run then ends by a limit, so one is required. Also on when
	// scoring.intermediate is.
	IntermediateScoring bool `json:"intermediate_scoring"`
	// EnableToolUse (default true) uses the API's native tool calls; false
	// switches to text tool modes: fenced blocks, or with EnableXML
	// <tool>...</tool> elements.
	EnableToolUse *bool `json:"enable_tool_use"`
	EnableXML     bool  `json:"enable_xml"`
	// RequireFunctionCall sends tool_choice "required" (tool mode only).
	RequireFunctionCall bool `json:"require_function_call"`
	// ContextTrimmingThreshold is the prompt budget in TOKENS (not
	// characters, unlike triframe's key of the same name): system prompt,
	// task, history, usage message and tool definitions together are kept
	// under it (default 80000). Tokens are counted with the model's BPE for
	// OpenAI models and estimated for others (see Tokenizer). Older history
	// goes first; the newest call and its result always stay, clipped head
	// and tail when they do not fit whole.
	ContextTrimmingThreshold int `json:"context_trimming_threshold"`
	// KeepFirstMessages is how many messages at the start of the
	// conversation are always kept, counting the system prompt and the
	// task (default 4: those two plus the agent's first call and its
	// result). At least 2. A call at the boundary keeps its result.
	KeepFirstMessages *int `json:"keep_first_messages"`
	// OutputLimit caps each tool output and each replayed message, in
	// bytes, head and tail kept (default 10000, or 4 bytes per token of
	// context_trimming_threshold when that is less). A value above 4 bytes
	// per token of context_trimming_threshold is refused. It clips what the
	// model is shown; bash.output_limit, applied first by the handlers,
	// caps what is kept of each stream.
	OutputLimit int `json:"output_limit"`
	// Timeout is the initial bash/python timeout in seconds (default 60);
	// the agent changes it with set_timeout. It times every command the
	// agent runs, so bash.timeout_s and python.timeout_s could never apply:
	// a run setting either is refused at start (CheckSettings).
	Timeout int `json:"timeout"`
	// MaxRetries bounds consecutive generations that yield no usable
	// action (the generate failed, no output had content or a call, or the
	// chosen output had no valid call). Each failure appends a warning; one
	// more ends the run as failed (end_reason no_usable_output or
	// no_valid_call). Default 3; 0 ends at the first failure.
	MaxRetries *int `json:"max_retries"`
	// UsageWarnings are the two usage fractions [soft, hard] above which
	// the usage message carries a wrap-up hint (default [0.75, 0.9]).
	UsageWarnings []float64 `json:"usage_warnings"`
	// Tokenizer counts tokens: "auto" (default: o200k_base or cl100k_base
	// for OpenAI model names, approx otherwise), "o200k_base",
	// "cl100k_base" or "approx" (bytes/4).
	Tokenizer string `json:"tokenizer"`
	// Tools are sandbox tools offered besides modular's own, by full name
	// ("text2sql:execute"); the model sees "text2sql-execute". Native tool
	// calls only (enable_tool_use).
	Tools []string `json:"tools"`
	// SandboxTools are the schemas of the sandbox tools of Tools, by full
	// name, filled in from the sandbox's registry when the run starts.
	SandboxTools map[string]agent.SandboxTool `json:"sandbox_tools"`

	// Scoring is the engine's scoring section, read for its intermediate flag.
	Scoring struct {
		Intermediate bool `json:"intermediate"`
	} `json:"scoring"`
	// Limits is the engine's limits section: intermediate scoring has no
	// submit, so it needs one to end.
	Limits operations.RunLimits `json:"limits"`
	// Models is the engine's model table, read for the endpoint name of
	// the generator (which picks the tokenizer).
	Models map[string]struct {
		Name string `json:"name"`
	} `json:"models"`
}

// ParseSettings decodes, checks and completes modular settings.
func ParseSettings(doc json.RawMessage) (Settings, error) {
	var s Settings
	if len(doc) == 0 {
		doc = json.RawMessage("{}")
	}
	if err := settings.Decode(doc, &s); err != nil {
		return s, fmt.Errorf("%w: %w", ErrSettings, err)
	}
	if err := s.check(); err != nil {
		return s, fmt.Errorf("%w: %w", ErrSettings, err)
	}
	s.applyDefaults()
	if err := agent.CheckSandboxTools(s.Tools, s.Mode()); err != nil {
		return s, fmt.Errorf("%w: %w", ErrSettings, err)
	}
	return s, nil
}

func (s *Settings) check() error {
	if s.Generator == nil {
		return fmt.Errorf(`generator: required: the model entry that proposes actions, e.g. {"model": "gpt-4o"}`)
	}
	if err := settings.At("generator", s.Generator.Validate()); err != nil {
		return err
	}
	if _, err := agent.ParseLimitType(s.LimitType); err != nil {
		return err
	}
	switch {
	case s.ContextTrimmingThreshold < 0:
		return fmt.Errorf("context_trimming_threshold: must be >= 0 (tokens)")
	case s.KeepFirstMessages != nil && *s.KeepFirstMessages < 2:
		return fmt.Errorf("keep_first_messages: must be at least 2 (the system prompt and the task)")
	case s.OutputLimit < 0:
		return fmt.Errorf("output_limit: must be >= 0")
	case s.Timeout < 0 || s.Timeout > agent.MaxTimeout:
		return fmt.Errorf("timeout: must be between 0 and %d seconds", agent.MaxTimeout)
	case s.MaxRetries != nil && *s.MaxRetries < 0:
		return fmt.Errorf("max_retries: must be >= 0")
	}
	if s.OutputLimit > outputBudget(s.ContextTrimmingThreshold) {
		return fmt.Errorf("output_limit (%d bytes) is larger than context_trimming_threshold (%d tokens) holds at %d bytes a token: "+
			"one output could fill the whole prompt; lower output_limit or raise context_trimming_threshold",
			s.OutputLimit, threshold(s.ContextTrimmingThreshold), bytesPerToken)
	}
	if n := len(s.UsageWarnings); n != 0 {
		if n != 2 || s.UsageWarnings[0] <= 0 || s.UsageWarnings[1] > 1 || s.UsageWarnings[0] >= s.UsageWarnings[1] {
			return fmt.Errorf("usage_warnings: want two increasing fractions in (0, 1], e.g. [0.75, 0.9]")
		}
	}
	if (s.IntermediateScoring || s.Scoring.Intermediate) && s.Limits == (operations.RunLimits{}) {
		return fmt.Errorf("intermediate_scoring: there is no submit tool, so the run ends only by a limit; " +
			"set limits.tokens, limits.actions, limits.seconds or limits.cost")
	}
	switch s.Tokenizer {
	case "", TokenizerAuto, TokenizerO200k, TokenizerCl100k, TokenizerApprox:
	default:
		return fmt.Errorf("tokenizer: %q is not one of auto, o200k_base, cl100k_base, approx", s.Tokenizer)
	}
	return nil
}

func (s *Settings) applyDefaults() {
	if s.EnableToolUse == nil {
		t := true
		s.EnableToolUse = &t
	}
	if s.ContextTrimmingThreshold == 0 {
		s.ContextTrimmingThreshold = DefaultContextTrimmingThreshold
	}
	if s.KeepFirstMessages == nil {
		n := DefaultKeepFirstMessages
		s.KeepFirstMessages = &n
	}
	if s.OutputLimit == 0 {
		s.OutputLimit = min(DefaultOutputLimit, outputBudget(s.ContextTrimmingThreshold))
	}
	if s.Timeout == 0 {
		s.Timeout = DefaultTimeout
	}
	if s.MaxRetries == nil {
		n := DefaultMaxRetries
		s.MaxRetries = &n
	}
	if len(s.UsageWarnings) == 0 {
		s.UsageWarnings = []float64{DefaultSoftWarning, DefaultHardWarning}
	}
	if s.Tokenizer == "" {
		s.Tokenizer = TokenizerAuto
	}
	if s.Scoring.Intermediate {
		s.IntermediateScoring = true
	}
}

// bytesPerToken is how many bytes of output a token of the budget is taken
// to hold when output_limit (bytes) is checked against
// context_trimming_threshold (tokens): the approx tokenizer's estimate.
const bytesPerToken = 4

// threshold is a context_trimming_threshold with its default.
func threshold(t int) int {
	if t == 0 {
		return DefaultContextTrimmingThreshold
	}
	return t
}

// outputBudget is the largest output_limit the threshold t allows.
func outputBudget(t int) int { return threshold(t) * bytesPerToken }

// Mode is the tool-calling mode the settings select.
func (s *Settings) Mode() agent.Mode { return agent.ModeOf(*s.EnableToolUse, s.EnableXML) }

// Toolset is the agent's tools: bash, python, set_timeout and submit, or
// score and score_log instead of submit with intermediate scoring.
func (s *Settings) Toolset() []string {
	return agent.Toolset{IntermediateScoring: s.IntermediateScoring}.Names()
}

// limitType is the parsed LimitType (checked by ParseSettings).
func (s *Settings) limitType() agent.LimitType {
	t, _ := agent.ParseLimitType(s.LimitType)
	return t
}

// endpointModel is the name the generator's endpoint knows the model by.
func (s *Settings) endpointModel() string {
	if m, ok := s.Models[s.Generator.Model]; ok && m.Name != "" {
		return m.Name
	}
	return s.Generator.Model
}
