// Package human serves the operations a person answers: "human" (a
// question, optional choices or a rating scale) and "intervention" (approve
// or replace the action a run is about to execute). Their handler is an
// handlers.Asker: the executor never dispatches these operations; the run
// parks until an answer arrives over the API (POST
// /runs/{id}/human/{op_id}/answer, POST /runs/{id}/intervene), which this
// package checks and turns into the operation's result.
//
// # Answers
//
// A human question with choices accepts exactly one of them (a JSON
// string); with a scale, a JSON number between min and max inclusive;
// otherwise any non-empty JSON string or a number. An intervention
// accepts {"approve": true} (or the string "approve") or {"action":
// {"name": TOOL, "arguments": {...}}}, the action to execute instead.
package human

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/operations"
)

// ErrBadAnswer is returned (wrapped) for an answer that does not fit its
// question.
var ErrBadAnswer = errors.New("bad answer")

// Handler serves human and intervention operations.
type Handler struct{}

// Handle is never called by the executor (the kinds are answered through
// Answer); a direct call fails the operation, naming why.
func (Handler) Handle(_ context.Context, _ handlers.Env, req operations.Request) operations.Result {
	return operations.Failed(req, "%s operations are answered by a person over the API, not run", req.Kind)
}

// Question describes req for the person answering it.
func (Handler) Question(req operations.Request) (handlers.Question, error) {
	switch req.Kind {
	case operations.KindHuman:
		p := operations.Human.Params(req)
		if p == nil {
			return handlers.Question{}, operations.ErrMissingParams
		}
		return handlers.Question{Text: p.Question, Choices: p.Choices, Scale: p.Scale}, nil
	case operations.KindIntervention:
		p := operations.Intervention.Params(req)
		if p == nil {
			return handlers.Question{}, operations.ErrMissingParams
		}
		q := p.Question
		if q == "" {
			q = "Approve the next action, or replace it"
		}
		return handlers.Question{Text: q, Action: p.Action}, nil
	}
	return handlers.Question{}, fmt.Errorf("%s is not a question", req.Kind)
}

// Answer checks answer against req and returns the operation's result.
func (Handler) Answer(req operations.Request, answer json.RawMessage, now time.Time) (operations.Result, error) {
	answer = bytes.TrimSpace(answer)
	switch req.Kind {
	case operations.KindHuman:
		p := operations.Human.Params(req)
		if p == nil {
			return operations.Result{}, operations.ErrMissingParams
		}
		a, err := checkHuman(p, answer)
		if err != nil {
			return operations.Result{}, err
		}
		return operations.Result{Kind: req.Kind, Meta: req.Meta,
			Data: &operations.HumanResult{Answer: a, AnsweredAt: now.UTC()}}, nil
	case operations.KindIntervention:
		d, err := checkIntervention(answer)
		if err != nil {
			return operations.Result{}, err
		}
		d.AnsweredAt = now.UTC()
		return operations.Result{Kind: req.Kind, Meta: req.Meta, Data: d}, nil
	}
	return operations.Result{}, fmt.Errorf("%s is not a question", req.Kind)
}

func checkHuman(p *operations.HumanRequest, a json.RawMessage) (json.RawMessage, error) {
	var text string
	var num float64
	isText := json.Unmarshal(a, &text) == nil
	isNum := !isText && json.Unmarshal(a, &num) == nil
	switch {
	case p.Scale != nil:
		if !isNum || math.IsNaN(num) {
			return nil, fmt.Errorf("%w: answer: must be a number between %g and %g", ErrBadAnswer, p.Scale.Min, p.Scale.Max)
		}
		if num < p.Scale.Min || num > p.Scale.Max {
			return nil, fmt.Errorf("%w: answer: %g is outside the scale %g to %g", ErrBadAnswer, num, p.Scale.Min, p.Scale.Max)
		}
	case len(p.Choices) > 0:
		if !isText {
			return nil, fmt.Errorf("%w: answer: must be one of the choices %q", ErrBadAnswer, p.Choices)
		}
		found := false
		for _, c := range p.Choices {
			found = found || c == text
		}
		if !found {
			return nil, fmt.Errorf("%w: answer: %q is not one of the choices %q", ErrBadAnswer, text, p.Choices)
		}
	default:
		if !isText && !isNum {
			return nil, fmt.Errorf("%w: answer: must be a JSON string or number", ErrBadAnswer)
		}
		if isText && strings.TrimSpace(text) == "" {
			return nil, fmt.Errorf("%w: answer: empty", ErrBadAnswer)
		}
	}
	return append(json.RawMessage(nil), a...), nil
}

func checkIntervention(a json.RawMessage) (*operations.InterventionResult, error) {
	var s string
	if json.Unmarshal(a, &s) == nil {
		if s == "approve" {
			return &operations.InterventionResult{Approved: true}, nil
		}
		return nil, fmt.Errorf("%w: answer: an intervention takes \"approve\", {\"approve\": true} or {\"action\": {\"name\", \"arguments\"}} (got %q)", ErrBadAnswer, s)
	}
	var d struct {
		Approve bool            `json:"approve"`
		Action  json.RawMessage `json:"action"`
	}
	dec := json.NewDecoder(bytes.NewReader(a))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("%w: answer: an intervention takes {\"approve\": true} or {\"action\": {\"name\", \"arguments\"}}: %v", ErrBadAnswer, err)
	}
	hasAction := len(d.Action) > 0 && string(d.Action) != "null"
	switch {
	case d.Approve && hasAction:
		return nil, fmt.Errorf("%w: answer: give approve or action, not both", ErrBadAnswer)
	case d.Approve:
		return &operations.InterventionResult{Approved: true}, nil
	case !hasAction:
		return nil, fmt.Errorf("%w: answer: action: required (or approve: true)", ErrBadAnswer)
	}
	var call struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(d.Action, &call); err != nil {
		return nil, fmt.Errorf("%w: action: must be an object {\"name\", \"arguments\"}: %v", ErrBadAnswer, err)
	}
	if call.Name == "" {
		return nil, fmt.Errorf("%w: action.name: required (the tool to call, e.g. \"bash\")", ErrBadAnswer)
	}
	if len(call.Arguments) > 0 && bytes.TrimSpace(call.Arguments)[0] != '{' {
		return nil, fmt.Errorf("%w: action.arguments: must be a JSON object", ErrBadAnswer)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, d.Action); err != nil {
		return nil, fmt.Errorf("%w: action: %v", ErrBadAnswer, err)
	}
	return &operations.InterventionResult{Action: compact.Bytes()}, nil
}

func init() {
	handlers.Register(handlers.Info{ID: "flock.human",
		Kinds: []operations.Kind{operations.KindHuman, operations.KindIntervention},
		New:   func() handlers.Handler { return Handler{} }})
}

var (
	_ handlers.Handler = Handler{}
	_ handlers.Asker   = Handler{}
)
