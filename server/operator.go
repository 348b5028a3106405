package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/workflows"
)

// The operator's routes: fork a run from a past step, list and answer the
// questions a run waits on (human and intervention operations), and
// replace the action a run in intervention mode is about to execute.

// forkRun answers POST /runs/:id/fork {"step", "vars"?, "message"?} with
// 201 and the new run's id.
func (s *Server) forkRun(c *echo.Context) error {
	raw, err := decodeObject(c.Request().Body, []string{"step", "vars", "message"})
	if err != nil {
		return err
	}
	var req workflows.ForkRequest
	v, ok := raw["step"]
	if !ok {
		return badInput("step", "required: the step to fork from (0 to the run's current step)")
	}
	if err := json.Unmarshal(v, &req.Step); err != nil {
		return badInput("step", "must be a non-negative integer, got JSON %s", jsonKind(v))
	}
	if v, ok := raw["vars"]; ok && jsonKind(v) != "null" {
		if jsonKind(v) != "object" {
			return badInput("vars", "must be a JSON object of var names to values, got JSON %s", jsonKind(v))
		}
		if err := json.Unmarshal(v, &req.Vars); err != nil {
			return badInput("vars", "%v", err)
		}
	}
	if v, ok := raw["message"]; ok && jsonKind(v) != "null" {
		if err := json.Unmarshal(v, &req.Message); err != nil {
			return badInput("message", "must be a string, got JSON %s", jsonKind(v))
		}
	}
	id := c.Param("id")
	head, warnings, err := s.roles.forker.ForkWithWarnings(c.Request().Context(), id, req)
	if err != nil {
		return &runError{id: id, err: err}
	}
	c.Response().Header().Set(echo.HeaderLocation, "/runs/"+head.ID)
	return c.JSON(http.StatusCreated, api.Forked{RunID: head.ID, Status: head.Status, Warnings: warnings})
}

// listQuestions answers GET /runs/:id/human: the questions the run's
// current step waits on.
func (s *Server) listQuestions(c *echo.Context) error {
	id := c.Param("id")
	qs, err := s.roles.questioner.Questions(c.Request().Context(), id)
	if err != nil {
		return &runError{id: id, err: err}
	}
	out := api.Questions{Pending: []api.Question{}}
	for _, q := range qs {
		v := api.Question{OpID: q.OpID, Kind: string(q.Kind), Question: q.Text, Choices: q.Choices,
			Action: q.Action, AskedAt: q.AskedAt}
		if q.Scale != nil {
			v.Scale = &api.Scale{Min: q.Scale.Min, Max: q.Scale.Max}
		}
		out.Pending = append(out.Pending, v)
	}
	return c.JSON(http.StatusOK, out)
}

// answerQuestion answers POST /runs/:id/human/:op/answer {"answer": ...};
// the op id is path-escaped (its slashes as %2F).
func (s *Server) answerQuestion(c *echo.Context) error {
	id := c.Param("id")
	op, err := url.PathUnescape(c.Param("op_id"))
	if err != nil {
		return badInput("op_id", "malformed escaping: %v", err)
	}
	raw, err := decodeObject(c.Request().Body, []string{"answer"})
	if err != nil {
		return err
	}
	ans, ok := raw["answer"]
	if !ok || jsonKind(ans) == "null" {
		return badInput("answer", "required: a JSON string or number")
	}
	if err := s.roles.questioner.Answer(c.Request().Context(), id, op, ans); err != nil {
		return &runError{id: id, err: err}
	}
	return c.JSON(http.StatusOK, api.OK{OK: true})
}

// intervene answers POST /runs/:id/intervene {"action": {...}} (or
// {"approve": true}): the decision on the action the run waits to execute.
func (s *Server) intervene(c *echo.Context) error {
	id := c.Param("id")
	raw, err := decodeObject(c.Request().Body, []string{"action", "approve"})
	if err != nil {
		return err
	}
	action, hasAction := raw["action"]
	hasAction = hasAction && jsonKind(action) != "null"
	var approve bool
	if v, ok := raw["approve"]; ok {
		if err := json.Unmarshal(v, &approve); err != nil {
			return badInput("approve", "must be a boolean, got JSON %s", jsonKind(v))
		}
	}
	var ans []byte
	switch {
	case hasAction && approve:
		return badInput("body", "give action or approve, not both")
	case hasAction:
		if jsonKind(action) != "object" {
			return badInput("action", "must be an object {\"name\": TOOL, \"arguments\": {...}}, got JSON %s", jsonKind(action))
		}
		ans, _ = json.Marshal(map[string]json.RawMessage{"action": action})
	case approve:
		ans = []byte(`{"approve":true}`)
	default:
		return badInput("action", "required: the action to execute instead ({\"name\", \"arguments\"}), or approve: true")
	}
	if err := s.roles.questioner.Intervene(c.Request().Context(), id, ans); err != nil {
		return &runError{id: id, err: err}
	}
	return c.JSON(http.StatusOK, api.OK{OK: true})
}

// decodeObject reads a JSON object body with only the given keys, its
// values trimmed. Errors name the field or the byte offset at fault; a
// body over the size limit yields the BodyLimit error as is.
func decodeObject(body io.Reader, fields []string) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(body)
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, jsonError(err, dec.InputOffset(), fields)
	}
	if raw == nil {
		return nil, badInput("body", "expected a JSON object with %s, got null", strings.Join(fields, ", "))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if isBodyLimit(err) {
			return nil, err
		}
		return nil, badInput("body", "unexpected data after the JSON object at byte %d", dec.InputOffset())
	}
	var unknown []string
	for k := range raw {
		known := false
		for _, f := range fields {
			known = known || k == f
		}
		if !known {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, badInput(strings.Join(unknown, ", "), "unknown field (expected %s)", strings.Join(fields, ", "))
	}
	for k, v := range raw {
		raw[k] = bytes.TrimSpace(v)
	}
	return raw, nil
}
