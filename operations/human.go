package operations

import (
	"encoding/json"
	"time"
)

// Kinds a person answers: the run waits (parked, with no goroutine) until
// someone answers over the API. Package handlers/human serves them.
const (
	// KindHuman asks a person a question, with optional choices or a
	// rating scale; the answer is the op's result.
	KindHuman Kind = "human"
	// KindIntervention asks an operator to approve or replace the action
	// a run is about to execute (intervention mode, Vivaria-style).
	KindIntervention Kind = "intervention"
)

// HumanRequest is a question for a person.
type HumanRequest struct {
	Question string `json:"question"`
	// Choices, when set, are the only answers accepted (text).
	Choices []string `json:"choices,omitempty"`
	// Scale, when set, asks for a number between Min and Max (inclusive).
	Scale *Scale `json:"scale,omitempty"`
}

// Scale is a rating scale.
type Scale struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// HumanResult is a person's answer: a JSON string, or a JSON number when
// the question had a scale.
type HumanResult struct {
	Answer     json.RawMessage `json:"answer"`
	AnsweredAt time.Time       `json:"answered_at"`
}

// Text returns the answer as text (a number as it was written).
func (h *HumanResult) Text() string {
	var s string
	if json.Unmarshal(h.Answer, &s) == nil {
		return s
	}
	return string(h.Answer)
}

// Number returns the answer as a number, when it is one.
func (h *HumanResult) Number() (float64, bool) {
	var f float64
	err := json.Unmarshal(h.Answer, &f)
	return f, err == nil
}

// InterventionRequest shows an operator the action a run is about to
// execute (Action: a tool call {"name", "arguments"}, as the workflow
// proposes it) and waits for approval or a replacement.
type InterventionRequest struct {
	Question string          `json:"question"`
	Action   json.RawMessage `json:"action"`
}

// InterventionResult is the operator's decision: Approved, or Action, the
// action to execute instead (same shape as the request's).
type InterventionResult struct {
	Approved   bool            `json:"approved"`
	Action     json.RawMessage `json:"action,omitempty"`
	AnsweredAt time.Time       `json:"answered_at"`
}

// NewHuman returns a human request.
func NewHuman(h HumanRequest) Request { return Request{Kind: KindHuman, Params: &h} }

// NewIntervention returns an intervention request for action.
func NewIntervention(question string, action json.RawMessage) Request {
	return Request{Kind: KindIntervention, Params: &InterventionRequest{Question: question, Action: action}}
}

// The kinds a person answers, declared like any other (see Declare).
var (
	Human        = Declare[HumanRequest, HumanResult](KindHuman, viewHuman)
	Intervention = Declare[InterventionRequest, InterventionResult](KindIntervention, viewIntervention)
)

func viewHuman(_ Result, h *HumanResult) (map[string]any, bool) {
	v := map[string]any{"answer": ""}
	if h == nil {
		return v, false
	}
	v["answer"] = h.Text()
	return v, true
}

func viewIntervention(_ Result, d *InterventionResult) (map[string]any, bool) {
	v := map[string]any{"approved": false}
	if d == nil {
		return v, false
	}
	v["approved"] = d.Approved
	return v, true
}
