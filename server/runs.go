package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// Page sizes of the paginated routes.
const (
	maxLimit         = 1000
	defaultRunsLimit = 50
	defaultLogLimit  = 100
)

// startFields are the keys a start body may have.
var startFields = []string{"workflow", "settings", "task"}

// startWorkflow answers POST /start_workflow: it creates a run and returns
// at once with 201 and the run's id.
func (s *Server) startWorkflow(c *echo.Context) error {
	req, err := decodeStart(c.Request().Body)
	if err != nil {
		return err
	}
	if err := refuseKeyNames(req.Settings); err != nil {
		return err
	}
	head, warnings, err := s.roles.starter.StartRunWithWarnings(c.Request().Context(), req)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/runs/"+head.ID)
	return c.JSON(http.StatusCreated, api.RunStatus{RunID: head.ID, Status: head.Status, Warnings: warnings})
}

// decodeStart reads a start body. Errors name the field or the byte offset
// at fault; a body over the size limit yields the BodyLimit error as is.
func decodeStart(body io.Reader) (workflows.StartRequest, error) {
	var req workflows.StartRequest
	raw, err := decodeObject(body, startFields)
	if err != nil {
		return req, err
	}
	if v, ok := raw["workflow"]; ok {
		if err := json.Unmarshal(v, &req.Workflow); err != nil {
			return req, badInput("workflow", "must be a string, got JSON %s", jsonKind(v))
		}
	}
	if v, ok := raw["task"]; ok {
		if err := json.Unmarshal(v, &req.Task); err != nil {
			return req, badInput("task", "must be a string, got JSON %s", jsonKind(v))
		}
	}
	if v := raw["settings"]; len(v) > 0 && jsonKind(v) != "null" {
		if v[0] != '{' {
			return req, badInput("settings", "must be a JSON object, got JSON %s", jsonKind(v))
		}
		req.Settings = v
	}
	return req, nil
}

// jsonError words a decoding error of a request body that should be a
// JSON object with the given fields.
func jsonError(err error, offset int64, fields []string) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case isBodyLimit(err):
		return err
	case errors.Is(err, io.EOF):
		return badInput("body", "empty; expected a JSON object with %s", strings.Join(fields, ", "))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badInput("body", "malformed JSON: unexpected end of input at byte %d", offset)
	case errors.As(err, &se):
		return badInput("body", "malformed JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	case errors.As(err, &te):
		return badInput("body", "expected a JSON object, got JSON %s", te.Value)
	}
	if slowBody(err) {
		return errSlowBody
	}
	return badInput("body", "cannot read the request body: %v", err)
}

// errSlowBody answers a body that did not arrive within body_timeout_s
// (the listener's read deadline, package internal/httpserver).
var errSlowBody = echo.NewHTTPError(http.StatusRequestTimeout,
	"request body not received in time (the server's body_timeout_s); the connection is closed")

// slowBody reports whether err is the read deadline of a request body.
func slowBody(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// isBodyLimit reports whether err is the BodyLimit middleware's "too large".
func isBodyLimit(err error) bool {
	return echo.StatusCode(err) == http.StatusRequestEntityTooLarge
}

// jsonKind names the JSON type of a valid JSON value.
func jsonKind(v []byte) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// listRuns answers GET /runs: heads newest first, filtered, paginated,
// each with its task's first line, its number of children and of
// questions. top=true keeps the runs without a parent; q keeps those
// whose task contains q (see searchRuns).
func (s *Server) listRuns(c *echo.Context) error {
	f := state.RunFilter{
		Status:   state.Status(c.QueryParam("status")),
		Workflow: c.QueryParam("workflow"),
		ParentID: c.QueryParam("parent_id"),
		After:    c.QueryParam("after"),
	}
	if f.Status != "" && !f.Status.Valid() {
		return badInput("status", "must be one of running, paused, succeeded, failed, cancelled (got %q)", f.Status)
	}
	top, err := queryBool(c, "top")
	if err != nil {
		return err
	}
	if top && f.ParentID != "" {
		return badInput("top", "top=true lists runs without a parent; it cannot be combined with parent_id")
	}
	f.TopLevel = top
	q := strings.TrimSpace(c.QueryParam("q"))
	if len(q) > maxQuery {
		return badInput("q", "is %d bytes long; at most %d", len(q), maxQuery)
	}
	limit, err := queryLimit(c, defaultRunsLimit)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if q != "" {
		views, next, err := s.searchRuns(ctx, f, q, limit)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, api.Runs{Runs: views, Next: next})
	}
	f.Limit = limit
	runs, next, err := s.store.Runs(ctx, f)
	if err != nil {
		return err
	}
	views := make([]api.Run, 0, len(runs))
	for _, r := range runs {
		v, err := s.runView(ctx, r, nil)
		if err != nil {
			return err
		}
		views = append(views, v)
	}
	return c.JSON(http.StatusOK, api.Runs{Runs: views, Next: next})
}

// getRun answers GET /runs/:id with the run's head, its vars and what
// describe adds.
func (s *Server) getRun(c *echo.Context) error {
	head, err := s.run(c)
	if err != nil {
		return err
	}
	v, err := s.runView(c.Request().Context(), head, nil)
	if err != nil {
		return err
	}
	v.Vars = head.Vars
	if !head.Status.Terminal() {
		v = withLive(v, s.roles.monitor.Live(head.ID))
	}
	return c.JSON(http.StatusOK, v)
}

// listEntries answers GET /runs/:id/entries: the entry log oldest first,
// after the entry seq given as "after"; with type, only the entries of
// those types (see filteredEntries).
func (s *Server) listEntries(c *echo.Context) error {
	after, err := queryUint(c, "after")
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, defaultLogLimit)
	if err != nil {
		return err
	}
	types, err := entryTypes(c)
	if err != nil {
		return err
	}
	head, err := s.run(c)
	if err != nil {
		return err
	}
	var (
		entries []phases.Entry
		next    string
	)
	if types != nil {
		entries, next, err = s.filteredEntries(c.Request().Context(), head.ID, after, limit, types)
	} else {
		// One more than asked tells whether there is a next page.
		entries, err = s.store.Entries(c.Request().Context(), head.ID, after, limit+1)
		entries, next = page(entries, limit, func(e phases.Entry) string { return strconv.FormatUint(e.Seq, 10) })
	}
	if err != nil {
		return &runError{id: head.ID, err: err}
	}
	views := make([]api.Entry, 0, len(entries))
	for _, e := range entries {
		views = append(views, viewEntry(e))
	}
	return c.JSON(http.StatusOK, api.Entries{Entries: views, Next: next})
}

// listOps answers GET /runs/:id/ops: the operation journal by step and
// index, after the op id given as "after".
func (s *Server) listOps(c *echo.Context) error {
	after := c.QueryParam("after")
	limit, err := queryLimit(c, defaultLogLimit)
	if err != nil {
		return err
	}
	head, err := s.run(c)
	if err != nil {
		return err
	}
	if err := checkOpCursor(head.ID, after); err != nil {
		return err
	}
	ops, err := s.store.Ops(c.Request().Context(), head.ID, after, limit+1)
	if err != nil {
		return &runError{id: head.ID, err: err}
	}
	ops, next := page(ops, limit, func(op state.Op) string { return op.ID })
	views := make([]api.Op, 0, len(ops))
	for _, op := range ops {
		v, err := viewOp(op)
		if err != nil {
			return &runError{id: head.ID, err: err}
		}
		views = append(views, v)
	}
	return c.JSON(http.StatusOK, api.Ops{Ops: views, Next: next})
}

// checkOpCursor checks that after is empty or an op id of run id: a
// cursor of another form is the client's mistake, not the store's.
func checkOpCursor(id, after string) error {
	if after == "" {
		return nil
	}
	run, _, _, err := state.ParseOpID(after)
	if err != nil {
		return badInput("after", "must be an op id of run %s, as returned in \"next\" (got %q)", id, after)
	}
	if run != id {
		return badInput("after", "%q is an op of run %s, not of run %s", after, run, id)
	}
	return nil
}

// page cuts items, read with limit+1 to learn whether more follow, to
// limit and returns the cursor of the next page ("" when there is none).
// It never returns nil, so the JSON is an empty list rather than null.
func page[T any](items []T, limit int, cursor func(T) string) ([]T, string) {
	if len(items) > limit {
		items = items[:limit]
		return items, cursor(items[limit-1])
	}
	if items == nil {
		items = []T{}
	}
	return items, ""
}

// cancelRun answers POST /runs/:id/cancel. The executor cancels the run and
// its children and returns once the run has ended; a run that had already
// ended gives 409.
func (s *Server) cancelRun(c *echo.Context) error {
	return s.control(c, s.roles.controller.Cancel)
}

// pauseRun answers POST /runs/:id/pause: the run (and its running
// children) stop being driven and get status paused; operations in flight
// run again on resume. Pausing a paused run is a no-op; an ended run gives 409.
func (s *Server) pauseRun(c *echo.Context) error {
	return s.control(c, s.roles.controller.Pause)
}

// resumeRun answers POST /runs/:id/resume for a paused run; any other
// status gives 409.
func (s *Server) resumeRun(c *echo.Context) error {
	return s.control(c, s.roles.controller.Resume)
}

// control applies a pause or resume and answers with the run's status.
func (s *Server) control(c *echo.Context, act func(context.Context, string) error) error {
	id := c.Param("id")
	ctx := c.Request().Context()
	if err := act(ctx, id); err != nil {
		re := &runError{id: id, err: err}
		if head, herr := s.store.Run(ctx, id); herr == nil {
			re.status = head.Status
		}
		return re
	}
	head, err := s.store.Run(ctx, id)
	if err != nil {
		return &runError{id: id, err: err}
	}
	return c.JSON(http.StatusOK, api.RunStatus{RunID: head.ID, Status: head.Status})
}

// listWorkflows answers GET /workflows with every registered graph.
func (s *Server) listWorkflows(c *echo.Context) error {
	list := s.roles.catalog.Workflows()
	graphs := make([]api.Graph, 0, len(list))
	for _, g := range list {
		graphs = append(graphs, viewGraph(g))
	}
	return c.JSON(http.StatusOK, api.Workflows{Workflows: graphs})
}

// run reads the head of the run named by the :id parameter.
func (s *Server) run(c *echo.Context) (state.Run, error) {
	id := c.Param("id")
	head, err := s.store.Run(c.Request().Context(), id)
	if err != nil {
		return state.Run{}, &runError{id: id, err: err}
	}
	return head, nil
}

// queryLimit parses the "limit" parameter (1 to maxLimit, default def).
func queryLimit(c *echo.Context, def int) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		return 0, badInput("limit", "must be an integer between 1 and %d (got %q)", maxLimit, v)
	}
	return n, nil
}

// queryUint parses an optional non-negative integer parameter (default 0).
func queryUint(c *echo.Context, name string) (uint64, error) {
	v := c.QueryParam(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, badInput(name, "must be a non-negative integer (got %q)", v)
	}
	return n, nil
}
