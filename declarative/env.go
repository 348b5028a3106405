package declarative

import (
	"encoding/json"

	"github.com/flockrun/flock/operations"
)

// Env is what the expressions of a declarative workflow see. Field names
// in expressions are the expr tags: vars, settings, results, task, step,
// phase, entries, usage, limits, run, item, index and the function
// history(type).
type Env struct {
	// Vars are the run's vars (JSON values), over the file's vars defaults.
	// Within a phase, set assignments update it in order.
	Vars map[string]any `expr:"vars"`
	// Settings is the run's settings document over the file's settings
	// defaults (top-level keys).
	Settings map[string]any `expr:"settings"`
	// Results are the previous phase's operation results in request order.
	Results []ResultView `expr:"results"`
	Task    string       `expr:"task"`
	// Step counts phase calls in the run, starting at 1.
	Step int `expr:"step"`
	// Phase is the name of the phase being evaluated.
	Phase string `expr:"phase"`
	// Entries is the number of entries in the run's log (including those
	// appended earlier in this phase call).
	Entries int        `expr:"entries"`
	Usage   UsageView  `expr:"usage"`
	Limits  LimitsView `expr:"limits"`
	Run     RunView    `expr:"run"`
	// Item and Index are the element and position of an op's for_each list
	// while that op is templated; nil and 0 elsewhere.
	Item  any `expr:"item"`
	Index int `expr:"index"`
	// History returns the data of the log's entries of a type, oldest
	// first, including entries appended earlier in this phase call.
	History func(typ string) []any `expr:"history"`
}

// RunView identifies the run.
type RunView struct {
	ID       string `expr:"id" json:"id"`
	ParentID string `expr:"parent_id" json:"parent_id"`
	Workflow string `expr:"workflow" json:"workflow"`
}

// UsageView is what the run has consumed so far.
type UsageView struct {
	Tokens  int     `expr:"tokens" json:"tokens"`
	Actions int     `expr:"actions" json:"actions"`
	Seconds float64 `expr:"seconds" json:"seconds"`
	Cost    float64 `expr:"cost" json:"cost"`
}

// LimitsView is the run's limits (0: none).
type LimitsView struct {
	Tokens  int     `expr:"tokens" json:"tokens"`
	Actions int     `expr:"actions" json:"actions"`
	Seconds float64 `expr:"seconds" json:"seconds"`
	Cost    float64 `expr:"cost" json:"cost"`
}

// ResultView is a flat, typed view of one operation result. Fields of
// other kinds are zero. ok is true when the op did its job: no error, and
// for bash exit code 0 without timeout, for python no exception and no
// timeout, for submit accepted, for spawn a succeeded child, for sandbox
// code 0.
type ResultView struct {
	Kind  string            `expr:"kind" json:"kind"`
	Error string            `expr:"error" json:"error,omitempty"`
	OK    bool              `expr:"ok" json:"ok"`
	Meta  map[string]string `expr:"meta" json:"meta,omitempty"`
	// bash (exit_code is -1 when the op failed)
	Stdout    string `expr:"stdout" json:"stdout,omitempty"`
	Stderr    string `expr:"stderr" json:"stderr,omitempty"`
	ExitCode  int    `expr:"exit_code" json:"exit_code"`
	TimedOut  bool   `expr:"timed_out" json:"timed_out,omitempty"`
	Truncated bool   `expr:"truncated" json:"truncated,omitempty"`
	// python
	Output      string `expr:"output" json:"output,omitempty"`
	PythonError string `expr:"python_error" json:"python_error,omitempty"`
	// generate: the first output's fields, all outputs, and the first
	// output as an assistant message ready to append to a conversation.
	Content      string         `expr:"content" json:"content,omitempty"`
	Reasoning    string         `expr:"reasoning" json:"reasoning,omitempty"`
	FinishReason string         `expr:"finish_reason" json:"finish_reason,omitempty"`
	ToolCalls    []ToolCallView `expr:"tool_calls" json:"tool_calls,omitempty"`
	Outputs      []OutputView   `expr:"outputs" json:"outputs,omitempty"`
	Message      *MessageView   `expr:"message" json:"message,omitempty"`
	// submit
	Accepted bool `expr:"accepted" json:"accepted,omitempty"`
	// score (score is 0 when the scorer gave none; scored says whether it did)
	Score  float64 `expr:"score" json:"score,omitempty"`
	Scored bool    `expr:"scored" json:"scored,omitempty"`
	Text   string  `expr:"text" json:"text,omitempty"` // score or sandbox message
	// spawn
	RunID     string `expr:"run_id" json:"run_id,omitempty"`
	Status    string `expr:"status" json:"status,omitempty"`
	EndReason string `expr:"end_reason" json:"end_reason,omitempty"`
	Result    any    `expr:"result" json:"result,omitempty"`
	// sandbox
	Code int `expr:"code" json:"code,omitempty"`
	Data any `expr:"data" json:"data,omitempty"`
	// get_task
	Instructions string `expr:"instructions" json:"instructions,omitempty"`
}

// OutputView is one choice of a generate.
type OutputView struct {
	Content      string         `expr:"content" json:"content"`
	Reasoning    string         `expr:"reasoning" json:"reasoning,omitempty"`
	FinishReason string         `expr:"finish_reason" json:"finish_reason,omitempty"`
	ToolCalls    []ToolCallView `expr:"tool_calls" json:"tool_calls,omitempty"`
}

// MessageView is a chat message, in the JSON shape of operations.Message.
type MessageView struct {
	Role      string         `expr:"role" json:"role"`
	Content   string         `expr:"content" json:"content"`
	ToolCalls []ToolCallView `expr:"tool_calls" json:"tool_calls,omitempty"`
}

// ToolCallView is a tool call; it encodes like operations.ToolCall plus
// "args", Arguments decoded (nil when it is not a JSON object), which
// operations.ToolCall ignores when the call is sent back to a model.
type ToolCallView struct {
	ID        string         `expr:"id" json:"id"`
	Name      string         `expr:"name" json:"name"`
	Arguments string         `expr:"arguments" json:"arguments"`
	Args      map[string]any `expr:"args" json:"args,omitempty"`
}

func toolCallViews(in []operations.ToolCall) []ToolCallView {
	if len(in) == 0 {
		return nil
	}
	out := make([]ToolCallView, len(in))
	for i, c := range in {
		out[i] = ToolCallView{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
		var args map[string]any
		if json.Unmarshal([]byte(c.Arguments), &args) == nil {
			out[i].Args = args
		}
	}
	return out
}

// newResultView flattens r.
func newResultView(r operations.Result) ResultView {
	v := ResultView{Kind: string(r.Kind), Error: r.Error, Meta: r.Meta}
	if v.Meta == nil {
		v.Meta = map[string]string{}
	}
	ok := r.Error == ""
	switch r.Kind {
	case operations.KindBash:
		v.ExitCode = -1
		if b := r.Bash; b != nil {
			v.Stdout, v.Stderr, v.ExitCode, v.TimedOut, v.Truncated = b.Stdout, b.Stderr, b.ExitCode, b.TimedOut, b.Truncated
		}
		ok = ok && r.Bash != nil && v.ExitCode == 0 && !v.TimedOut
	case operations.KindPython:
		if p := r.Python; p != nil {
			v.Output, v.PythonError, v.TimedOut, v.Truncated = p.Output, p.Error, p.TimedOut, p.Truncated
		}
		ok = ok && r.Python != nil && v.PythonError == "" && !v.TimedOut
	case operations.KindGenerate:
		if g := r.Generate; g != nil {
			for i, o := range g.Outputs {
				ov := OutputView{Content: o.Content, Reasoning: o.Reasoning, FinishReason: o.FinishReason, ToolCalls: toolCallViews(o.ToolCalls)}
				v.Outputs = append(v.Outputs, ov)
				if i == 0 {
					v.Content, v.Reasoning, v.FinishReason, v.ToolCalls = ov.Content, ov.Reasoning, ov.FinishReason, ov.ToolCalls
					v.Message = &MessageView{Role: operations.RoleAssistant, Content: ov.Content, ToolCalls: ov.ToolCalls}
				}
			}
		}
		ok = ok && r.Generate != nil && len(r.Generate.Outputs) > 0
	case operations.KindSubmit:
		v.Accepted = r.Submit != nil && r.Submit.Accepted
		ok = ok && v.Accepted
	case operations.KindScore:
		if s := r.Score; s != nil {
			v.Text = s.Message
			if s.Score != nil {
				v.Score, v.Scored = *s.Score, true
			}
		}
	case operations.KindSpawn:
		if s := r.Spawn; s != nil {
			v.RunID, v.Status, v.EndReason = s.RunID, s.Status, s.EndReason
			if s.Error != "" && v.Error == "" {
				v.Error = s.Error
			}
			v.Result = decodeJSON(s.Result)
		}
		ok = ok && v.Status == "succeeded"
	case operations.KindSandbox:
		if s := r.Sandbox; s != nil {
			v.Code, v.Text, v.Data = s.Code, s.Message, decodeJSON(s.Data)
		}
		ok = ok && r.Sandbox != nil && v.Code == 0
	case operations.KindGetTask:
		if t := r.GetTask; t != nil {
			v.Instructions = t.Instructions
		}
	}
	v.OK = ok
	return v
}

// decodeJSON decodes raw into plain values (nil when empty or invalid).
func decodeJSON(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}
