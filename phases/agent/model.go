package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases/settings"
)

// Model is one model entry of an agent's settings, in the shape of Flock's
// MiddlemanSettings. Keys Flock accepts that have no meaning here
// (logit_bias, function_call, cache_key, delegation_token, priority,
// max_reasoning_tokens) are accepted and ignored; they carry the tag
// settings:"flock-unused", so a run that sets one is warned at start.
type Model struct {
	// Model is the model name (required), looked up in the settings' models.
	Model string `json:"model"`
	// Temp is the sampling temperature; unset means the endpoint's default.
	Temp *float64 `json:"temp,omitempty"`
	// Temperature is an alias of Temp. A run whose entry sets both is
	// refused at start (CheckConflicts); a stored run that has both (from
	// before that check) goes on with Temp.
	Temperature *float64 `json:"temperature,omitempty"`
	// N is the number of completions per request (default 1).
	N int `json:"n,omitempty"`
	// MaxTokens caps each completion; 0 means the endpoint's default.
	MaxTokens int `json:"max_tokens,omitempty"`
	// ReasoningEffort is "", "minimal", "low", "medium" or "high".
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	// Stop sequences.
	Stop []string `json:"stop,omitempty"`
	// Logprobs asks for log probabilities: true, or (Flock) a number of top
	// alternatives per token.
	Logprobs Logprobs `json:"logprobs,omitzero"`

	MaxReasoningTokens int                `json:"max_reasoning_tokens,omitempty" settings:"flock-unused"`
	LogitBias          map[string]float64 `json:"logit_bias,omitempty" settings:"flock-unused"`
	FunctionCall       json.RawMessage    `json:"function_call,omitempty" settings:"flock-unused"`
	CacheKey           string             `json:"cache_key,omitempty" settings:"flock-unused"`
	DelegationToken    string             `json:"delegation_token,omitempty" settings:"flock-unused"`
	Priority           string             `json:"priority,omitempty" settings:"flock-unused"`
}

// Logprobs is Flock's logprobs setting: a bool, or an int counting the top
// alternatives wanted per token (0 means logprobs without alternatives).
type Logprobs struct {
	On  bool
	Top int
}

// UnmarshalJSON accepts true, false, null or a non-negative integer.
func (l *Logprobs) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch string(b) {
	case "null", "false":
		*l = Logprobs{}
		return nil
	case "true":
		*l = Logprobs{On: true}
		return nil
	}
	n, err := strconv.Atoi(string(b))
	if err != nil || n < 0 {
		return fmt.Errorf("want true, false or a non-negative integer, got %s", b)
	}
	*l = Logprobs{On: true, Top: n}
	return nil
}

// MarshalJSON writes the integer form when alternatives are asked for.
func (l Logprobs) MarshalJSON() ([]byte, error) {
	switch {
	case l.Top > 0:
		return []byte(strconv.Itoa(l.Top)), nil
	case l.On:
		return []byte("true"), nil
	}
	return []byte("false"), nil
}

// IsZero lets omitzero drop an unset Logprobs.
func (l Logprobs) IsZero() bool { return !l.On && l.Top == 0 }

// Validate checks the entry. The error (wrapping ErrBadModel) is a
// *settings.Error whose path is relative to the entry ("temp"); the
// settings decoder places it ("actors[1].temp"), or a caller with
// settings.At.
func (m Model) Validate() error {
	bad := func(key, reason string) error { return &settings.Error{Path: key, Reason: reason, Err: ErrBadModel} }
	switch {
	case m.Model == "":
		return bad("model", "required")
	case m.N < 0 || m.N > 128:
		return bad("n", "must be between 0 and 128")
	case m.MaxTokens < 0:
		return bad("max_tokens", "must be >= 0")
	case m.Temp != nil && (*m.Temp < 0 || *m.Temp > 2):
		return bad("temp", "must be between 0 and 2")
	case m.Temp == nil && m.Temperature != nil && (*m.Temperature < 0 || *m.Temperature > 2):
		return bad("temperature", "must be between 0 and 2")
	}
	switch m.ReasoningEffort {
	case "", "minimal", "low", "medium", "high":
	default:
		return bad("reasoning_effort", fmt.Sprintf("%q is not one of minimal, low, medium, high", m.ReasoningEffort))
	}
	return nil
}

func (m Model) temperature() *float64 {
	if m.Temp != nil {
		return m.Temp
	}
	return m.Temperature
}

// Samples is the number of outputs one request yields (N, at least 1).
func (m Model) Samples() int { return max(1, m.N) }

// Request builds a generate request for this entry. toolChoice is "",
// "auto", "none", "required" or a tool name; it is dropped when no tools
// are offered.
func (m Model) Request(msgs []operations.Message, tools []operations.Tool, toolChoice string) operations.GenerateRequest {
	g := operations.GenerateRequest{
		Model:           m.Model,
		Messages:        msgs,
		Tools:           tools,
		N:               m.Samples(),
		Temperature:     m.temperature(),
		MaxTokens:       m.MaxTokens,
		Stop:            m.Stop,
		ReasoningEffort: m.ReasoningEffort,
		Logprobs:        m.Logprobs.On,
		TopLogprobs:     m.Logprobs.Top,
	}
	if len(tools) > 0 {
		g.ToolChoice = toolChoice
	}
	return g
}

// WithFormat labels r, a generate request of an agent that calls tools in
// mode, with its answer format (operations.MetaFormat) when mode is a
// text mode, so that a model stand-in answers in it without reading the
// prompt's instructions; live models ignore the label.
func WithFormat(r operations.Request, mode Mode) operations.Request {
	if mode == ModeFenced || mode == ModeXML {
		return r.WithMeta(operations.MetaFormat, string(mode))
	}
	return r
}
