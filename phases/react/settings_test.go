package react_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/flockrun/flock/phases/agent"
	"github.com/flockrun/flock/phases/react"
)

// TestSettingsErrors: every refused setting is named by its JSON path.
func TestSettingsErrors(t *testing.T) {
	tests := []struct {
		name, doc, want string
		badModel        bool
	}{
		{name: "no model", doc: `{}`, want: `model: required (a model name or {"model": NAME, ...})`},
		{name: "empty model", doc: `{"model":""}`, want: `model: required (a model name or {"model": NAME, ...})`},
		{name: "model a number", doc: `{"model":7}`, want: `model: want a model name or {"model": NAME, ...}`},
		{name: "model n", doc: `{"model":{"model":"m","n":-1}}`, want: "model.n: must be between 0 and 128", badModel: true},
		{name: "model temp", doc: `{"model":{"model":"m","temp":3}}`, want: "model.temp: must be between 0 and 2", badModel: true},
		{name: "model effort", doc: `{"model":{"model":"m","reasoning_effort":"max"}}`, want: `model.reasoning_effort: "max" is not one of minimal, low, medium, high`, badModel: true},
		{name: "model logprobs", doc: `{"model":{"model":"m","logprobs":-1}}`, want: "model.logprobs: want true, false or a non-negative integer, got -1"},
		{name: "tool", doc: `{"model":"m","tools":["ls"]}`, want: `tools[0]: "ls" is not one of bash, python, submit, summarize, nor a sandbox tool ("resource:tool")`},
		{name: "max_turns", doc: `{"model":"m","max_turns":-1}`, want: "max_turns: must be >= 0"},
		{name: "max_turns type", doc: `{"model":"m","max_turns":"x"}`, want: "max_turns: want a whole number, got JSON string"},
		{name: "tool_timeout_s", doc: `{"model":"m","tool_timeout_s":-1}`, want: "tool_timeout_s: must be >= 0"},
		{name: "output_limit", doc: `{"model":"m","output_limit":-1}`, want: "output_limit: must be >= 0"},
		{name: "context_chars", doc: `{"model":"m","context_chars":-1}`, want: "context_chars: must be >= 0"},
		{name: "trigger_turns", doc: `{"model":"m","fold":{"trigger_turns":-1}}`, want: "fold.trigger_turns: must be >= 0"},
		{name: "output over context", doc: `{"model":"m","context_chars":10,"output_limit":20}`, want: "output_limit (20) is larger than context_chars (10): one output could fill the whole prompt; lower output_limit or raise context_chars"},
		{name: "tool_choice", doc: `{"model":"m","tool_choice":"x"}`, want: `tool_choice: "x" is not one of auto, none, required`},
		{name: "nudge", doc: `{"model":"m","fold":{"nudge":"x"}}`, want: `fold.nudge: "x" is not one of base, detail, progress (or a text with spaces)`},
		{name: "fold type", doc: `{"model":"m","fold":7}`, want: "fold: want an object, got JSON number"},
		{name: "system prompt", doc: `{"model":"m","system_prompt":7}`, want: "system_prompt: want a string or a list of strings"},
		{name: "late system message", doc: `{"model":"m","input_messages":[{"role":"user","content":"a"},{"role":"system","content":"s"}]}`, want: "input_messages[1]: a system message may only come first"},
		{name: "assistant first", doc: `{"model":"m","input_messages":[{"role":"assistant","content":"a"}]}`, want: "input_messages[0]: the first message after the system prompt must be the user's"},
		{name: "tool role", doc: `{"model":"m","input_messages":[{"role":"user","content":"a"},{"role":"tool","content":"s"}]}`, want: `input_messages[1]: role "tool" is not system, user or assistant`},
		{name: "system only", doc: `{"model":"m","input_messages":[{"role":"system","content":"a"}]}`, want: "input_messages: no user message"},
		{name: "not an object", doc: `[1]`, want: "must be a JSON object, got JSON array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := react.ParseSettings(json.RawMessage(tt.doc))
			if want := "invalid react settings: " + tt.want; err == nil || err.Error() != want {
				t.Fatalf("err = %v\nwant %s", err, want)
			}
			if !errors.Is(err, react.ErrSettings) || errors.Is(err, agent.ErrBadModel) != tt.badModel {
				t.Fatalf("err = %v: wrong sentinels", err)
			}
		})
	}
}

// TestSettingsDefaults: defaults, the output limit kept within
// context_chars and the summarize tool offered when folding.
func TestSettingsDefaults(t *testing.T) {
	s, err := react.ParseSettings(json.RawMessage(`{"model": "m"}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxTurns != 30 || s.OutputLimit != react.DefaultOutputLimit || s.TrajectoryName != "react" || fmt.Sprint(s.ToolNames()) != "[bash python submit]" {
		t.Fatalf("defaults: %+v %v", s, s.ToolNames())
	}
	s, err = react.ParseSettings(json.RawMessage(`{"model": "m", "context_chars": 1000, "tools": [], "fold": {"trigger_turns": 3}}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.OutputLimit != 1000 || fmt.Sprint(s.ToolNames()) != "[summarize]" {
		t.Fatalf("derived: %d %v", s.OutputLimit, s.ToolNames())
	}
}
