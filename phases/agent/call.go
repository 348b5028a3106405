package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/flockrun/flock/operations"
)

// Call is a validated tool call. Arguments are canonical JSON (the typed
// argument struct of the tool, encoded), so equal calls have equal bytes.
type Call struct {
	// ID is the model's tool-call id; empty for text-mode calls until the
	// workflow assigns one.
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Decode decodes the arguments into v (one of the *Args types).
func (c Call) Decode(v any) error {
	if err := json.Unmarshal(c.Arguments, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadArguments, c.Name, err)
	}
	return nil
}

// Same reports whether c and d call the same tool with the same arguments.
func (c Call) Same(d Call) bool { return c.Name == d.Name && bytes.Equal(c.Arguments, d.Arguments) }

// ToolCall returns the call in wire form.
func (c Call) ToolCall() operations.ToolCall {
	args := string(c.Arguments)
	var b bytes.Buffer
	if json.Compact(&b, c.Arguments) == nil {
		args = b.String()
	}
	return operations.ToolCall{ID: c.ID, Name: c.Name, Arguments: args}
}

// Argument types of the built-in tools.
type (
	BashArgs struct {
		Command string `json:"command"`
	}
	PythonArgs struct {
		Code string `json:"code"`
	}
	SetTimeoutArgs struct {
		Timeout int `json:"timeout"`
	}
	SubmitArgs struct {
		Answer string `json:"answer"`
	}
	NoArgs     struct{}
	AdviseArgs struct {
		Advice string `json:"advice"`
	}
	RateOptionsArgs struct {
		Ratings []Rating `json:"ratings"`
	}
	// Rating is one rater's judgement of one option.
	Rating struct {
		OptionIndex int     `json:"option_index"`
		Rating      float64 `json:"rating"`
		Comment     string  `json:"comment"`
	}
	LaunchSubagentsArgs struct {
		Agents []SubagentSpec `json:"agents"`
	}
	// SubagentSpec is one subagent asked for by launch_subagents.
	SubagentSpec struct {
		Task                   string `json:"task"`
		Approach               string `json:"approach"`
		IncludeTaskDescription bool   `json:"include_task_description"`
	}
	ConcludeArgs struct {
		Result string `json:"result"`
	}
	SelectWinnerArgs struct {
		WinnerID  string `json:"winner_id"`
		Reasoning string `json:"reasoning"`
	}
)

// Validate checks the raw JSON arguments of a call to tool name, which must
// be one of allowed (nil allows every built-in tool). Empty arguments mean
// {}. The returned call has canonical arguments.
func Validate(id, name, arguments string, allowed []string) (Call, error) {
	if allowed != nil && !contains(allowed, name) {
		return Call{}, fmt.Errorf("%w: %q (offered: %s)", ErrUnknownTool, name, strings.Join(allowed, ", "))
	}
	spec, ok := specs[name]
	if !ok {
		return Call{}, fmt.Errorf("%w: %q", ErrUnknownTool, name)
	}
	args := map[string]json.RawMessage{}
	if t := strings.TrimSpace(arguments); t != "" && t != "null" {
		if err := json.Unmarshal([]byte(t), &args); err != nil {
			return Call{}, fmt.Errorf("%w: %s: arguments are not a JSON object: %v", ErrBadArguments, name, err)
		}
	}
	v, err := spec.check(args)
	if err != nil {
		return Call{}, fmt.Errorf("%w: %s: %v", ErrBadArguments, name, err)
	}
	return Call{ID: id, Name: name, Arguments: marshal(v)}, nil
}

// marshal encodes v without HTML escaping; v is always a plain struct.
func marshal(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // argument structs always encode
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// stringish reads a JSON string; numbers and booleans are taken as their
// text (models sometimes submit 6 for "6").
func stringish(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	t := strings.TrimSpace(string(raw))
	if t == "true" || t == "false" {
		return t, true
	}
	var f json.Number
	if json.Unmarshal(raw, &f) == nil {
		return f.String(), true
	}
	return "", false
}

// integer reads an integral JSON number or a numeric string.
func integer(raw json.RawMessage) (int, bool) {
	var f float64
	if json.Unmarshal(raw, &f) != nil {
		s, ok := stringish(raw)
		if !ok {
			return 0, false
		}
		var err error
		if f, err = strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil {
			return 0, false
		}
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || math.Abs(f) > 1e15 {
		return 0, false
	}
	return int(f), true
}

// number reads a finite JSON number or a numeric string.
func number(raw json.RawMessage) (float64, bool) {
	var f float64
	if json.Unmarshal(raw, &f) != nil {
		s, ok := stringish(raw)
		if !ok {
			return 0, false
		}
		var err error
		if f, err = strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil {
			return 0, false
		}
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// textArgs is a tool argument struct with one string field.
type textArgs interface {
	BashArgs | PythonArgs | SubmitArgs | AdviseArgs | ConcludeArgs
}

func checkText[T textArgs](a map[string]json.RawMessage, key string, nonEmpty bool) (any, error) {
	raw, ok := a[key]
	if !ok {
		return nil, fmt.Errorf("missing %q", key)
	}
	s, ok := stringish(raw)
	if !ok {
		return nil, fmt.Errorf("%q must be a string", key)
	}
	if nonEmpty && strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%q is empty", key)
	}
	var v T
	// All textArgs have exactly one string field; set it through JSON.
	b, _ := json.Marshal(map[string]string{key: s})
	_ = json.Unmarshal(b, &v)
	return v, nil
}

func checkNone(map[string]json.RawMessage) (any, error) { return NoArgs{}, nil }

func checkTimeout(a map[string]json.RawMessage) (any, error) {
	raw, ok := a["timeout"]
	if !ok {
		return nil, fmt.Errorf(`missing "timeout"`)
	}
	n, ok := integer(raw)
	if !ok {
		return nil, fmt.Errorf(`"timeout" must be a whole number of seconds, got %s`, clip(string(raw), 40))
	}
	if n < MinTimeout || n > MaxTimeout {
		return nil, fmt.Errorf(`"timeout" must be between %d and %d seconds, got %d`, MinTimeout, MaxTimeout, n)
	}
	return SetTimeoutArgs{Timeout: n}, nil
}

// list reads a JSON array, also when a model double-encoded it as a string.
func list(raw json.RawMessage) ([]map[string]json.RawMessage, bool) {
	var items []map[string]json.RawMessage
	if json.Unmarshal(raw, &items) == nil {
		return items, true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && json.Unmarshal([]byte(s), &items) == nil {
		return items, true
	}
	return nil, false
}

// listArg reads the non-empty array argument key; shape describes its
// items for the error message.
func listArg(a map[string]json.RawMessage, key, shape string) ([]map[string]json.RawMessage, error) {
	raw, ok := a[key]
	if !ok {
		return nil, fmt.Errorf(`missing %q`, key)
	}
	items, ok := list(raw)
	if !ok {
		return nil, fmt.Errorf(`%q must be an array of %s`, key, shape)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf(`%q is empty`, key)
	}
	return items, nil
}

func checkRatings(a map[string]json.RawMessage) (any, error) {
	items, err := listArg(a, "ratings", "{option_index, rating, comment}")
	if err != nil {
		return nil, err
	}
	out := RateOptionsArgs{Ratings: make([]Rating, 0, len(items))}
	for i, it := range items {
		idx, ok := integer(it["option_index"])
		if !ok || idx < 0 {
			return nil, fmt.Errorf(`ratings[%d].option_index must be a non-negative integer`, i)
		}
		r, ok := number(it["rating"])
		if !ok {
			return nil, fmt.Errorf(`ratings[%d].rating must be a number`, i)
		}
		r = min(MaxRating, max(MinRating, r))
		c, _ := stringish(it["comment"])
		out.Ratings = append(out.Ratings, Rating{OptionIndex: idx, Rating: r, Comment: c})
	}
	return out, nil
}

func checkAgents(a map[string]json.RawMessage) (any, error) {
	items, err := listArg(a, "agents", "{task, approach, include_task_description}")
	if err != nil {
		return nil, err
	}
	out := LaunchSubagentsArgs{Agents: make([]SubagentSpec, 0, len(items))}
	for i, it := range items {
		t, _ := stringish(it["task"])
		if strings.TrimSpace(t) == "" {
			return nil, fmt.Errorf(`agents[%d].task is missing or empty`, i)
		}
		ap, _ := stringish(it["approach"])
		var inc bool
		if r, ok := it["include_task_description"]; ok {
			if json.Unmarshal(r, &inc) != nil {
				return nil, fmt.Errorf(`agents[%d].include_task_description must be a boolean`, i)
			}
		}
		out.Agents = append(out.Agents, SubagentSpec{Task: t, Approach: ap, IncludeTaskDescription: inc})
	}
	return out, nil
}

func checkWinner(a map[string]json.RawMessage) (any, error) {
	w, ok := stringish(a["winner_id"])
	if !ok || strings.TrimSpace(w) == "" {
		return nil, fmt.Errorf(`"winner_id" is missing or empty`)
	}
	r, _ := stringish(a["reasoning"])
	return SelectWinnerArgs{WinnerID: strings.TrimSpace(w), Reasoning: r}, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
