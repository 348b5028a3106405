package operations

import (
	"encoding/json"
	"time"
)

// Kinds a person answers: the run waits (parked, with no goroutine) until
// someone answers over the API. They are registered by this package with
// payloads in Request.Ext and Result.Ext; package handlers/human serves
// them.
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
func NewHuman(h HumanRequest) Request { return Request{Kind: KindHuman, Ext: &h} }

// NewIntervention returns an intervention request for action.
func NewIntervention(question string, action json.RawMessage) Request {
	return Request{Kind: KindIntervention, Ext: &InterventionRequest{Question: question, Action: action}}
}

// HumanParams returns r's human params, or nil.
func (r Request) HumanParams() *HumanRequest { p, _ := r.Ext.(*HumanRequest); return p }

// InterventionParams returns r's intervention params, or nil.
func (r Request) InterventionParams() *InterventionRequest {
	p, _ := r.Ext.(*InterventionRequest)
	return p
}

// Human returns r's human answer, or nil.
func (r Result) Human() *HumanResult { p, _ := r.Ext.(*HumanResult); return p }

// Intervention returns r's intervention decision, or nil.
func (r Result) Intervention() *InterventionResult {
	p, _ := r.Ext.(*InterventionResult)
	return p
}

func viewHuman(r Result) (map[string]any, bool) {
	v := map[string]any{"answer": ""}
	h := r.Human()
	if h == nil {
		return v, false
	}
	v["answer"] = h.Text()
	return v, true
}

func viewIntervention(r Result) (map[string]any, bool) {
	v := map[string]any{"approved": false}
	d := r.Intervention()
	if d == nil {
		return v, false
	}
	v["approved"] = d.Approved
	return v, true
}

func init() {
	RegisterKind(KindInfo{Kind: KindHuman, View: viewHuman,
		NewParams: func() any { return new(HumanRequest) }, NewResult: func() any { return new(HumanResult) }})
	RegisterKind(KindInfo{Kind: KindIntervention, View: viewIntervention,
		NewParams: func() any { return new(InterventionRequest) }, NewResult: func() any { return new(InterventionResult) }})
}
