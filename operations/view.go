package operations

import (
	"encoding/json"

	"github.com/flockrun/flock/record"
)

// View flattens r into the fields a workflow file's expressions read as
// results[i].NAME: kind, error, failure (Result.Code), ok and meta, the fields of every
// registered kind (zero unless they are r's kind's), then r's kind's own
// (KindInfo.View). ok is true when the operation did its job: no error and
// whatever its kind's view requires.
func (r Result) View() map[string]any {
	kinds.RLock()
	v := make(map[string]any, len(kinds.fields)+5)
	for k, z := range kinds.fields {
		v[k] = z
	}
	info := kinds.byKind[r.Kind]
	kinds.RUnlock()
	meta := map[string]string(r.Meta) // expressions see a plain map
	if meta == nil {
		meta = map[string]string{}
	}
	v["kind"], v["error"], v["failure"], v["meta"] = string(r.Kind), r.Error, string(r.Code), meta
	ok := r.Error == ""
	if info.View != nil {
		fields, kindOK := info.View(r)
		for k, x := range fields {
			v[k] = x
		}
		ok = ok && kindOK
	}
	v["ok"] = ok
	return v
}

// ViewFields returns the zero value of every field a result view may
// have, by name: the common ones and those of every registered kind. A
// workflow compiler type-checks expressions against it.
func ViewFields() map[string]any {
	kinds.RLock()
	defer kinds.RUnlock()
	out := make(map[string]any, len(kinds.fields)+5)
	for k, z := range kinds.fields {
		out[k] = z
	}
	out["kind"], out["error"], out["failure"], out["ok"], out["meta"] = "", "", "", false, map[string]string{}
	return out
}

// OutputView is one choice of a generate, as workflow files see it.
type OutputView struct {
	Content      string         `expr:"content" json:"content"`
	Reasoning    string         `expr:"reasoning" json:"reasoning,omitempty"`
	FinishReason string         `expr:"finish_reason" json:"finish_reason,omitempty"`
	ToolCalls    []ToolCallView `expr:"tool_calls" json:"tool_calls,omitempty"`
}

// MessageView is a chat message, in the JSON shape of Message.
type MessageView struct {
	Role      string         `expr:"role" json:"role"`
	Content   string         `expr:"content" json:"content"`
	ToolCalls []ToolCallView `expr:"tool_calls" json:"tool_calls,omitempty"`
}

// ToolCallView is a tool call; it encodes like ToolCall plus "args",
// Arguments decoded (nil when it is not a JSON object), which ToolCall
// ignores when the call is sent back to a model.
type ToolCallView struct {
	ID        string         `expr:"id" json:"id"`
	Name      string         `expr:"name" json:"name"`
	Arguments string         `expr:"arguments" json:"arguments"`
	Args      map[string]any `expr:"args" json:"args,omitempty"`
}

func toolCallViews(in []ToolCall) []ToolCallView {
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

// DecodeJSON decodes raw into plain values (nil when empty or invalid),
// for views of JSON payloads.
func DecodeJSON(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

// The views of the kinds declared in builtin.go. A kind's view returns
// all its fields whatever the result holds (see View).

// bash: exit_code is -1 when the op failed; ok needs exit code 0 without timeout.
func viewBash(_ Result, b *BashResult) (map[string]any, bool) {
	v := map[string]any{"stdout": "", "stderr": "", "exit_code": -1, "timed_out": false, "truncated": false}
	if b == nil {
		return v, false
	}
	v["stdout"], v["stderr"], v["exit_code"], v["timed_out"], v["truncated"] = b.Stdout, b.Stderr, b.ExitCode, b.TimedOut, b.Truncated
	return v, b.ExitCode == 0 && !b.TimedOut
}

// python: ok needs no exception and no timeout.
func viewPython(_ Result, p *PythonResult) (map[string]any, bool) {
	v := map[string]any{"output": "", "python_error": "", "timed_out": false, "truncated": false}
	if p == nil {
		return v, false
	}
	v["output"], v["python_error"], v["timed_out"], v["truncated"] = p.Output, p.Error, p.TimedOut, p.Truncated
	return v, p.Error == "" && !p.TimedOut
}

// generate: the first output's fields, all outputs, and the first output
// as an assistant message ready to append to a conversation; ok needs an
// output.
func viewGenerate(_ Result, g *GenerateResult) (map[string]any, bool) {
	var outputs []OutputView
	var first OutputView
	var msg *MessageView
	if g != nil {
		for i, o := range g.Outputs {
			ov := OutputView{Content: o.Content, Reasoning: o.Reasoning, FinishReason: o.FinishReason, ToolCalls: toolCallViews(o.ToolCalls)}
			outputs = append(outputs, ov)
			if i == 0 {
				first = ov
				msg = &MessageView{Role: RoleAssistant, Content: ov.Content, ToolCalls: ov.ToolCalls}
			}
		}
	}
	return map[string]any{"content": first.Content, "reasoning": first.Reasoning, "finish_reason": first.FinishReason,
		"tool_calls": first.ToolCalls, "outputs": outputs, "message": msg}, len(outputs) > 0
}

// submit: ok needs the submission accepted.
func viewSubmit(_ Result, s *SubmitResult) (map[string]any, bool) {
	accepted := s != nil && s.Accepted
	return map[string]any{"accepted": accepted}, accepted
}

// score: score is 0 when the scorer gave none; scored says whether it
// did; text is its message.
func viewScore(_ Result, s *ScoreResult) (map[string]any, bool) {
	v := map[string]any{"score": 0.0, "scored": false, "text": ""}
	if s != nil {
		v["text"] = s.Message
		if s.Score != nil {
			v["score"], v["scored"] = *s.Score, true
		}
	}
	return v, true
}

// spawn: the child's id, status, end reason and result (its error, when
// the op has none); ok needs a succeeded child.
func viewSpawn(r Result, s *SpawnResult) (map[string]any, bool) {
	v := map[string]any{"run_id": "", "status": "", "end_reason": "", "result": any(nil), "error": r.Error}
	if s == nil {
		return v, false
	}
	v["run_id"], v["status"], v["end_reason"], v["result"] = s.RunID, string(s.Status), s.EndReason, DecodeJSON(s.Result)
	if s.Error != "" && r.Error == "" {
		v["error"] = s.Error
	}
	return v, s.Status == record.StatusSucceeded
}

// sandbox: code, text (the message) and data; ok needs code 0.
func viewSandbox(_ Result, s *SandboxResult) (map[string]any, bool) {
	v := map[string]any{"code": 0, "text": "", "data": any(nil)}
	if s == nil {
		return v, false
	}
	v["code"], v["text"], v["data"] = s.Code, s.Message, DecodeJSON(s.Data)
	return v, s.Code == 0
}

// get_task: the instructions.
func viewGetTask(_ Result, t *GetTaskResult) (map[string]any, bool) {
	v := map[string]any{"instructions": ""}
	if t != nil {
		v["instructions"] = t.Instructions
	}
	return v, true
}
