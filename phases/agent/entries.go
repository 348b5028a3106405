package agent

import "github.com/flockrun/flock/operations"

// Entry types shared by the agent workflows. Each carries a one-line
// Summary that the CLI prints as the agent's steps.
const (
	EntryToolOutput = "tool_output"
	EntryWarning    = "warning"
)

// Option is one candidate action proposed by a model.
type Option struct {
	// Content is the model's text; in text modes without the call block.
	Content string `json:"content"`
	// Call is the valid tool call, or nil.
	Call *Call `json:"call,omitempty"`
	// Invalid says why the model's attempted call was rejected.
	Invalid string `json:"invalid,omitempty"`
	// Reasoning is the model's reasoning text, kept for replay.
	Reasoning string `json:"reasoning,omitempty"`
	// Source says who proposed it, e.g. "actor 0 (with advice) #1".
	Source string `json:"source,omitempty"`
}

// Describe renders the option's action for people.
func (o Option) Describe() string {
	if o.Call != nil {
		return Describe(*o.Call)
	}
	if o.Invalid != "" {
		return "invalid call (" + Line(o.Invalid, 120) + ")"
	}
	return "no call: " + Line(o.Content, 120)
}

// ToolOutput is the result of an executed call as the model sees it.
type ToolOutput struct {
	Summary string `json:"summary"`
	// Tool is the tool name; CallID answers the call (tool mode).
	Tool   string `json:"tool"`
	CallID string `json:"call_id,omitempty"`
	// Output is the formatted, trimmed result.
	Output string `json:"output"`
	// Notice is the usage notice shown with it.
	Notice string `json:"notice,omitempty"`
	// Failed marks a non-zero exit, an error or a timeout.
	Failed bool `json:"failed,omitempty"`
	// Images are the result's images (see ResultImages), sent with the
	// output's message.
	Images []operations.Image `json:"images,omitempty"`
}

// Warning is a note to the agent (and to people) about something that
// went wrong in the scaffolding: no valid call, retries exhausted ...
type Warning struct {
	Summary string `json:"summary"`
	Message string `json:"message"`
}

// NewWarning returns a warning whose summary is the message's first line.
func NewWarning(msg string) Warning { return Warning{Summary: Line(msg, 200), Message: msg} }
