package modular

import (
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases/agent"
)

// Entry types of the modular log. Each carries a one-line Summary that the
// CLI prints as the agent's steps. tool_output and warning extend the
// shared agent.ToolOutput and agent.Warning (they decode as those).
const (
	EntryTask       = "task"
	EntryChoice     = "choice"
	EntryToolOutput = agent.EntryToolOutput
	EntryWarning    = agent.EntryWarning
)

// Vars of a modular run; all small.
const (
	// VarContext holds the prompter's Context for the next generate.
	VarContext = "context"
	// VarTimeout is the bash/python timeout set by set_timeout (seconds);
	// unset means the settings' timeout.
	VarTimeout = "timeout"
	// VarFailures counts consecutive generations without a usable action;
	// unset means 0.
	VarFailures = "failures"
)

// Task records the task and how the agent is set up, at the start of a run.
type Task struct {
	Summary string `json:"summary"`
	Task    string `json:"task"`
	// Model is the generator's model; Tokenizer the resolved tokenizer
	// (o200k_base, cl100k_base or approx).
	Model     string     `json:"model"`
	Tokenizer string     `json:"tokenizer"`
	Tools     []string   `json:"tools"`
	Mode      agent.Mode `json:"mode"`
}

// Choice is the generator output the discriminator picked: the first with
// content, a valid call or an attempted call.
type Choice struct {
	Summary string `json:"summary"`
	agent.Option
	// Attempt is the rejected native tool call (tool mode), replayed so
	// that its error message answers it; arguments that were not JSON are
	// replaced by {}.
	Attempt *operations.ToolCall `json:"attempt,omitempty"`
	// Output is the index of the chosen output among Outputs.
	Output  int `json:"output"`
	Outputs int `json:"outputs"`
	// Tokens counts the replayed message's content, so prompters need not
	// tokenize it again.
	Tokens int `json:"tokens,omitempty"`
}

// ToolOutput is agent.ToolOutput with its token count.
type ToolOutput struct {
	agent.ToolOutput
	Tokens int `json:"tokens,omitempty"`
}

// Warning is agent.Warning addressed to the model (unless Internal), as
// the result of the call CallID when it answers one.
type Warning struct {
	agent.Warning
	CallID string `json:"call_id,omitempty"`
	// Internal warnings are for people only (a failed generate); they are
	// not replayed to the model.
	Internal bool `json:"internal,omitempty"`
}

// Context is the prompter's decision about the next prompt: the first
// KeepFirst messages of the conversation, a trimmed-history notice when
// Dropped > 0, the messages after the dropped ones, then the Usage
// message. Clips trim the contents of kept messages (by index in the
// conversation; the newest turn's, when it does not fit whole). Messages
// is the conversation's length when it was planned; Tokens the prompt's
// estimated size (tools included).
type Context struct {
	Messages  int          `json:"messages"`
	KeepFirst int          `json:"keep_first"`
	Dropped   int          `json:"dropped"`
	Clips     []agent.Clip `json:"clips,omitempty"`
	Tokens    int          `json:"tokens"`
	Usage     string       `json:"usage"`
}
