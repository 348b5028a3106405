package react

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases/agent"
	"github.com/flockrun/flock/phases/settings"
)

// Defaults of the settings that others derive from (the other defaults are
// the default tags of Settings).
const (
	// DefaultOutputLimit is output_limit's default, unless context_chars
	// is smaller.
	DefaultOutputLimit = 4000
	// DefaultSystemPrompt is used when neither system_prompt nor
	// system_prompt_file is set.
	DefaultSystemPrompt = "You are a capable assistant solving a task step by step. Use the tools when they help; " +
		"every tool call gets its own result. When you are done, call submit with your final answer, exactly as it should be graded. " +
		"If no submit tool is offered, end your reply with a line \"Final answer: <answer>\"."
)

// Nudge styles of the fold trigger (AgentFly's context trigger messages).
const (
	NudgeBase     = "base"
	NudgeDetail   = "detail"
	NudgeProgress = "progress"
)

var nudges = map[string]string{
	NudgeBase: "Your context is getting long. Call the summarize tool now with a summary of your work so far; " +
		"the conversation will be replaced by the task and your summary.",
	NudgeDetail: "Your context is getting long. Call the summarize tool now with a handoff summary in four sections: " +
		"1. Goal and constraints. 2. Progress: what you did and found, with exact identifiers, paths, numbers and commands. " +
		"3. Failed approaches and why they failed. 4. Next steps. The conversation will be replaced by the task and this summary.",
	NudgeProgress: "Your context is getting long. Call the summarize tool now with a summary of your progress: " +
		"what is done, what you learned, and what remains. The conversation will be replaced by the task and your summary.",
}

// Settings are the react workflow's keys of the settings document. The
// engine's keys (models, limits, bash, python) sit beside them.
type Settings struct {
	// Model is the model entry (agent.Model), or just a model name.
	Model ModelRef `json:"model"`
	// SystemPrompt is the system prompt; a list is joined with newlines.
	SystemPrompt Text `json:"system_prompt,omitempty"`
	// SystemPromptFile is read (read_file, relative to the run's work
	// directory) when SystemPrompt is empty. It must lie beneath the work
	// directory or a read root of the server (see package files); flock run
	// resolves it against the settings file and allows its directory.
	SystemPromptFile string `json:"system_prompt_file,omitempty"`
	// Tools offered to the model, from bash, python, submit and summarize,
	// and any sandbox tool by its full name ("text2sql:execute"), offered
	// to the model as "text2sql-execute" with the schema of sandbox_tools.
	// Default bash, python, submit. An empty list offers no tools: the
	// first reply is the final answer.
	Tools *[]string `json:"tools,omitempty" default:"[\"bash\",\"python\",\"submit\"]"`
	// SandboxTools are the schemas of the sandbox tools named in tools, by
	// full name. The sandbox operation's handler fills them in from the
	// sandbox's registry when the run starts; set by hand they are
	// replaced.
	SandboxTools map[string]agent.SandboxTool `json:"sandbox_tools,omitempty"`
	// TaskKwargs are a benchmark task's kwargs (the rollout sets them):
	// before the first call, bash exports each key that is a shell name as
	// a variable (strings as they are, other values as JSON) and
	// FLOCK_TASK_KWARGS as the whole object, and python defines the dict
	// task_kwargs, so the agent's tools see them (AgentFlow passes them to
	// every tool call).
	TaskKwargs map[string]json.RawMessage `json:"task_kwargs,omitempty"`
	// InputMessages, when set, open the conversation instead of the task
	// as one user message (a benchmark's chat-message input): a leading
	// system message replaces the system prompt.
	InputMessages []operations.Message `json:"input_messages,omitempty"`
	// MaxTurns bounds the model calls (default 30).
	MaxTurns int `json:"max_turns,omitempty" default:"30" min:"0"`
	// ToolChoice is passed to the endpoint ("", auto, none, required).
	ToolChoice string `json:"tool_choice,omitempty" enum:"auto,none,required"`
	// ToolTimeoutS is the timeout of each bash and python call. When set it
	// wins over bash.timeout_s and python.timeout_s; when 0 those apply
	// (then the handlers' default, 600 s).
	ToolTimeoutS float64 `json:"tool_timeout_s,omitempty" min:"0"`
	// OutputLimit caps each tool message, head and tail kept (default 4000
	// bytes, or context_chars when that is smaller; the original cut to
	// 4000 characters). A value above a set context_chars is refused. It
	// clips what the model is shown; bash.output_limit, applied first by
	// the handlers, caps what is kept of each stream.
	OutputLimit int `json:"output_limit,omitempty" min:"0"`
	// ContextChars, when > 0, fits each prompt into this many characters,
	// keeping the system prompt, the task and the newest turn (its calls'
	// results clipped head and tail when they do not fit whole) and
	// dropping the oldest turns (agent.Budget).
	ContextChars int `json:"context_chars,omitempty" min:"0"`
	// Fold configures context folding.
	Fold Fold `json:"fold,omitempty"`
	// TrajectoryFile, when set, is written (relative to the run's work
	// directory) at the end with the run's trajectory as a
	// grading.Trajectory JSON object. The rollout workflow sets it to
	// "trajectory.json" to build episodes.
	TrajectoryFile string `json:"trajectory_file,omitempty"`
	// TrajectoryName names the trajectory (default "react"); trajectories
	// group by "task_id:name".
	TrajectoryName string `json:"trajectory_name,omitempty" default:"react"`
}

// Fold configures context folding (AgentFly's summarize tool and context
// trigger).
type Fold struct {
	// Summarize offers the summarize tool (also implied by TriggerTurns).
	Summarize bool `json:"summarize,omitempty"`
	// TriggerTurns, when > 0, adds a user nudge asking for a summary once
	// the current segment holds that many assistant turns; once per
	// segment.
	TriggerTurns int `json:"trigger_turns,omitempty" min:"0"`
	// Nudge is the nudge style (base, detail, progress; default base) or,
	// when it contains a space, the nudge text itself.
	Nudge string `json:"nudge,omitempty"`
	// Force sets tool_choice to summarize on the nudged turn, so the model
	// must fold.
	Force bool `json:"force,omitempty"`
}

// Validate checks the nudge style.
func (f Fold) Validate() error {
	if n := f.Nudge; n != "" && !strings.Contains(n, " ") {
		if _, ok := nudges[n]; !ok {
			return settings.Errorf("nudge", "%q is not one of base, detail, progress (or a text with spaces)", n)
		}
	}
	return nil
}

// ModelRef is a model entry written either as an agent.Model object or as
// a bare model name.
type ModelRef struct{ agent.Model }

// UnmarshalJSON accepts "name" or {"model": "name", ...}.
func (m *ModelRef) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		m.Model = agent.Model{Model: s}
		return nil
	case len(b) > 0 && b[0] != '{' && string(b) != "null":
		return errors.New(`want a model name or {"model": NAME, ...}`)
	}
	return settings.Unmarshal(b, &m.Model)
}

// Validate requires the model's name, then checks the entry
// (agent.Model.Validate).
func (m ModelRef) Validate() error {
	if m.Model.Model == "" {
		return &settings.Error{Reason: `required (a model name or {"model": NAME, ...})`}
	}
	return m.Model.Validate()
}

// Text is a string, or a list of strings joined with newlines.
type Text string

// UnmarshalJSON accepts a string or a list of strings.
func (t *Text) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*t = Text(s)
		return nil
	}
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("want a string or a list of strings")
	}
	*t = Text(strings.Join(l, "\n"))
	return nil
}

// offerable are the tools react can run.
var offerable = []string{agent.ToolBash, agent.ToolPython, agent.ToolSubmit, agent.ToolSummarize}

// Offers reports whether react can offer a tool of this name: one of its
// own, or a sandbox tool ("resource:tool").
func Offers(name string) bool { return contains(offerable, name) || agent.IsSandboxTool(name) }

// ParseSettings decodes the settings, applies defaults and validates them
// (package phases/settings).
func ParseSettings(doc json.RawMessage) (Settings, error) {
	var s Settings
	if err := settings.Decode(doc, &s); err != nil {
		return s, fmt.Errorf("%w: %w", ErrSettings, err)
	}
	return s, nil
}

// Normalize gives output_limit its default, at most context_chars, and
// offers the summarize tool when folding is on.
func (s *Settings) Normalize() error {
	if s.OutputLimit == 0 {
		s.OutputLimit = DefaultOutputLimit
		if s.ContextChars > 0 {
			s.OutputLimit = min(s.OutputLimit, s.ContextChars)
		}
	}
	if (s.Fold.Summarize || s.Fold.TriggerTurns > 0) && !contains(*s.Tools, agent.ToolSummarize) {
		t := append(append([]string{}, *s.Tools...), agent.ToolSummarize)
		s.Tools = &t
	}
	return nil
}

// Validate checks the tools, output_limit against context_chars and the
// input messages.
func (s *Settings) Validate() error {
	for i, name := range *s.Tools {
		if !Offers(name) {
			return settings.Errorf(fmt.Sprintf("tools[%d]", i), "%q is not one of %s, nor a sandbox tool (\"resource:tool\")", name, strings.Join(offerable, ", "))
		}
	}
	if _, err := agent.SandboxNames(*s.Tools); err != nil {
		return settings.At("tools", err)
	}
	if s.ContextChars > 0 && s.OutputLimit > s.ContextChars {
		return settings.Errorf("", "output_limit (%d) is larger than context_chars (%d): one output could fill the whole prompt; "+
			"lower output_limit or raise context_chars", s.OutputLimit, s.ContextChars)
	}
	for i, m := range s.InputMessages {
		p := fmt.Sprintf("input_messages[%d]", i)
		first := i == 0 || (i == 1 && s.InputMessages[0].Role == operations.RoleSystem)
		switch {
		case m.Role == operations.RoleSystem && i != 0:
			return settings.Errorf(p, "a system message may only come first")
		case first && m.Role != operations.RoleSystem && m.Role != operations.RoleUser:
			return settings.Errorf(p, "the first message after the system prompt must be the user's")
		case m.Role != operations.RoleSystem && m.Role != operations.RoleUser && m.Role != operations.RoleAssistant:
			return settings.Errorf(p, "role %q is not system, user or assistant", m.Role)
		}
	}
	if len(s.InputMessages) == 1 && s.InputMessages[0].Role == operations.RoleSystem {
		return settings.Errorf("input_messages", "no user message")
	}
	return nil
}

// CheckSettings checks a run's settings at start: ParseSettings, then a
// model entry with both temp and temperature (agent.ErrSettingsConflict).
// tool_timeout_s beside bash.timeout_s or python.timeout_s is not a
// conflict: the more specific tool_timeout_s wins (see Settings).
func CheckSettings(doc json.RawMessage) error {
	s, err := ParseSettings(doc)
	if err != nil {
		return err
	}
	return s.Model.CheckConflicts("model")
}

// ToolNames returns the offered tools.
func (s Settings) ToolNames() []string {
	if s.Tools == nil {
		return nil
	}
	return *s.Tools
}

func (s Settings) nudgeText() string {
	n := s.Fold.Nudge
	if strings.Contains(n, " ") {
		return n
	}
	if n == "" {
		n = NudgeBase
	}
	return nudges[n]
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
