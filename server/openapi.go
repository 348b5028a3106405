package server

import (
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/flockrun/flock/api"
)

// apiRoute documents one route for the OpenAPI document. The routes
// themselves are registered in newEcho; TestOpenAPIMatchesRoutes checks
// that the two lists agree.
type apiRoute struct {
	method  string
	path    string // OpenAPI form: /runs/{id}
	id      string // operationId
	summary string
	query   []apiParam
	header  []apiParam
	body    any // request body (a value of an api type), or nil
	status  int // success status
	resp    any // response body (a value of an api type)
	stream  bool
	errors  []int // error statuses besides those every route may answer
}

// apiParam is a query or header parameter.
type apiParam struct {
	name, typ, doc string
}

var (
	limitParam = apiParam{"limit", "integer", "page size, 1 to 1000"}
	afterSeq   = apiParam{"after", "integer", "the cursor: the seq after which to start (the previous page's next)"}
)

// apiRoutes are the API's routes, in the order of the package doc.
var apiRoutes = []apiRoute{
	{method: http.MethodGet, path: "/health", id: "health", status: http.StatusOK, resp: api.Health{},
		summary: "The server's condition: ok; degraded while some run cannot commit (still 200); unavailable (503, the same body) when it cannot read or write runs, as a cluster node whose store does not answer. Needs no token."},
	{method: http.MethodGet, path: "/openapi.json", id: "openapi", status: http.StatusOK, resp: map[string]any{},
		summary: "This document."},
	{method: http.MethodPost, path: "/start_workflow", id: "startWorkflow", status: http.StatusCreated,
		body: api.StartRequest{}, resp: api.RunStatus{},
		errors:  []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusInsufficientStorage, http.StatusServiceUnavailable},
		summary: "Start a run; returns at once with its id (Location: /runs/{id})."},
	{method: http.MethodGet, path: "/runs", id: "listRuns", status: http.StatusOK, resp: api.Runs{},
		query: []apiParam{
			{"status", "string", "only runs with this status"},
			{"workflow", "string", "only runs of this workflow"},
			{"parent_id", "string", "only the children of this run"},
			{"top", "boolean", "only the runs without a parent (not with parent_id)"},
			{"q", "string", "only the runs whose task contains this text, ignoring case; one request reads at most 2,000 runs (follow next)"},
			{"after", "string", "the cursor (the previous page's next)"},
			limitParam},
		errors:  []int{http.StatusBadRequest},
		summary: "Run heads, newest first (default limit 50), each with its task's first line, its number of child runs and of questions waiting."},
	{method: http.MethodGet, path: "/stats/runs", id: "runCounts", status: http.StatusOK, resp: api.RunCounts{},
		errors:  []int{http.StatusNotImplemented},
		summary: "How many runs the store holds, by status; at most a second old."},
	{method: http.MethodGet, path: "/runs/{id}", id: "getRun", status: http.StatusOK, resp: api.Run{},
		errors:  []int{http.StatusNotFound},
		summary: "A run's head; a live run's also says what holds it (stalled, waiting)."},
	{method: http.MethodGet, path: "/runs/{id}/entries", id: "listEntries", status: http.StatusOK, resp: api.Entries{},
		query: []apiParam{afterSeq, limitParam,
			{"type", "string", "only entries of these types (comma-separated, e.g. row or qa,qa_rejected); one request reads at most 20,000 entries (follow next)"}},
		errors:  []int{http.StatusBadRequest, http.StatusNotFound},
		summary: "A run's entry log, oldest first (default limit 100)."},
	{method: http.MethodGet, path: "/runs/{id}/ops", id: "listOps", status: http.StatusOK, resp: api.Ops{},
		query:   []apiParam{{"after", "string", "the op id after which to start (the previous page's next)"}, limitParam},
		errors:  []int{http.StatusBadRequest, http.StatusNotFound},
		summary: "A run's operation journal by step and index (default limit 100)."},
	{method: http.MethodGet, path: "/runs/{id}/usage", id: "runUsage", status: http.StatusOK, resp: api.UsageByModel{},
		query:   []apiParam{{"descendants", "boolean", "also count the run's descendant runs (at most 1,000 runs in all)"}},
		errors:  []int{http.StatusBadRequest, http.StatusNotFound},
		summary: "The tokens and cost of a run's generate operations, by model."},
	{method: http.MethodGet, path: "/runs/{id}/events", id: "streamEvents", status: http.StatusOK, resp: api.Event{}, stream: true,
		query: []apiParam{afterSeq,
			{"descendants", "boolean", "also live-only events (seq 0) of the run's operations and descendant runs"}},
		header:  []apiParam{{"Last-Event-ID", "integer", "resume after this event id; wins over after"}},
		errors:  []int{http.StatusBadRequest, http.StatusNotFound},
		summary: "Server-Sent Events (id: seq, event: type, data: Event JSON): stored events, then live ones, until the run's terminal run event. Asked with Accept: application/json (and not text/event-stream), a page of the stored events instead: {events, next}."},
	{method: http.MethodPost, path: "/runs/{id}/cancel", id: "cancelRun", status: http.StatusOK, resp: api.RunStatus{},
		errors:  []int{http.StatusNotFound, http.StatusConflict, http.StatusUnsupportedMediaType, http.StatusServiceUnavailable},
		summary: "Cancel a run and its children; returns once it has ended. 409 once it had ended."},
	{method: http.MethodPost, path: "/runs/{id}/pause", id: "pauseRun", status: http.StatusOK, resp: api.RunStatus{},
		errors:  []int{http.StatusNotFound, http.StatusConflict, http.StatusUnsupportedMediaType, http.StatusServiceUnavailable},
		summary: "Pause a run and its running children. 409 once it has ended."},
	{method: http.MethodPost, path: "/runs/{id}/resume", id: "resumeRun", status: http.StatusOK, resp: api.RunStatus{},
		errors:  []int{http.StatusNotFound, http.StatusConflict, http.StatusUnsupportedMediaType, http.StatusServiceUnavailable},
		summary: "Resume a paused run. 409 unless it is paused."},
	{method: http.MethodPost, path: "/runs/{id}/fork", id: "forkRun", status: http.StatusCreated,
		body: api.ForkRequest{}, resp: api.Forked{},
		errors:  []int{http.StatusBadRequest, http.StatusNotFound, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusServiceUnavailable},
		summary: "Start a new run from the state of this one at a past step (entries, ops, vars, work-dir snapshot), with optional edited vars and an injected message (Location: /runs/{new id})."},
	{method: http.MethodGet, path: "/runs/{id}/human", id: "listQuestions", status: http.StatusOK, resp: api.Questions{},
		errors:  []int{http.StatusNotFound},
		summary: "The questions the run waits on a person for (human and intervention operations of its current step)."},
	{method: http.MethodPost, path: "/runs/{id}/human/{op_id}/answer", id: "answerQuestion", status: http.StatusOK,
		body: api.AnswerRequest{}, resp: api.OK{},
		errors:  []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusServiceUnavailable},
		summary: "Answer a question (op_id path-escaped, its slashes as %2F); returns once the answer is journaled. 404 for an op that is no question, 409 once answered."},
	{method: http.MethodPost, path: "/runs/{id}/intervene", id: "intervene", status: http.StatusOK,
		body: api.InterveneRequest{}, resp: api.OK{},
		errors:  []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusServiceUnavailable},
		summary: "Replace (action) or approve the action a run in intervention mode waits to execute. 409 when it waits for none."},
	{method: http.MethodGet, path: "/workflows", id: "listWorkflows", status: http.StatusOK, resp: api.Workflows{},
		summary: "The registered workflows' graphs."},
}

// operatorRoutes are the routes of MountOperator, documented when mounted.
var operatorRoutes = []apiRoute{
	{method: http.MethodGet, path: "/operator", id: "operatorInfo", status: http.StatusOK, resp: api.Operator{},
		summary: "The data directory this server holds (operator token only: the command line checks the server it found in the data directory's server file)."},
	{method: http.MethodPost, path: "/operator/runs", id: "handover", status: http.StatusCreated, body: api.Handover{}, resp: api.RunStatus{},
		errors:  []int{http.StatusBadRequest, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusServiceUnavailable},
		summary: "Start a run handed over by the command line, with its grants and keys (operator token only); 200 with resumed when the unfinished run of the same key was resumed instead."},
	{method: http.MethodPost, path: "/operator/runs/{id}/resume", id: "handoverResume", status: http.StatusOK, body: api.HandoverResume{}, resp: api.RunStatus{},
		errors:  []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusUnsupportedMediaType, http.StatusServiceUnavailable},
		summary: "Resume a run and every unfinished descendant nothing drives, with the keys handed over (operator token only). 409 when a key is still missing."},
}

// openAPI builds the OpenAPI 3.1 document of the server: apiRoutes, the
// paths given to Mount, and the schemas of the api types they use.
func (s *Server) openAPI() map[string]any {
	sc := &schemas{defs: map[string]any{}}
	errRef := sc.of(reflect.TypeFor[api.Error]())
	paths := map[string]any{}
	routes := apiRoutes
	if s.op != nil {
		routes = append(slices.Clone(routes), operatorRoutes...)
	}
	for _, r := range routes {
		item, _ := paths[r.path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[r.path] = item
		}
		item[strings.ToLower(r.method)] = s.operation(r, sc, errRef)
	}
	for _, p := range s.ui {
		paths[p] = map[string]any{"get": map[string]any{
			"operationId": "ui" + p,
			"summary":     "The browser viewer's page and assets (package viewer); needs no token.",
			"responses": s.errorResponses(map[string]any{
				"200": map[string]any{"description": "OK", "content": map[string]any{"text/html": map[string]any{}}},
			}, false, []int{http.StatusNotFound}, errRef),
		}}
	}
	for _, p := range s.mounted {
		paths[p] = map[string]any{"get": map[string]any{
			"operationId": "mounted" + p,
			"summary":     "Mounted by the command line (Prometheus metrics at /metrics); not JSON.",
			"responses": s.errorResponses(map[string]any{
				"200": map[string]any{"description": "OK", "content": map[string]any{"text/plain": map[string]any{}}},
			}, true, nil, errRef),
		}}
	}
	s.gatewayOpenAPI(paths)
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "flock",
			"version":     "1",
			"description": "flock's HTTP API: start, follow and control runs of workflows. Every error is a JSON body {\"error\"} and every response carries X-Request-ID.",
		},
		"paths":      paths,
		"components": map[string]any{"schemas": sc.defs},
	}
	if s.cfg.AuthToken != "" {
		doc["components"].(map[string]any)["securitySchemes"] = map[string]any{
			"bearer": map[string]any{"type": "http", "scheme": "bearer"}}
		doc["security"] = []any{map[string]any{"bearer": []any{}}}
	}
	return doc
}

// operation documents one route.
func (s *Server) operation(r apiRoute, sc *schemas, errRef map[string]any) map[string]any {
	op := map[string]any{"operationId": r.id, "summary": r.summary}
	var params []any
	for _, name := range pathParams(r.path) {
		doc := "the run id"
		if name == "op_id" {
			doc = "the operation id (<run>/<step>/<index>), path-escaped"
		}
		params = append(params, map[string]any{"name": name, "in": "path", "required": true,
			"schema": map[string]any{"type": "string"}, "description": doc})
	}
	for _, p := range r.query {
		params = append(params, map[string]any{"name": p.name, "in": "query",
			"schema": map[string]any{"type": p.typ}, "description": p.doc})
	}
	for _, p := range r.header {
		params = append(params, map[string]any{"name": p.name, "in": "header",
			"schema": map[string]any{"type": p.typ}, "description": p.doc})
	}
	if params != nil {
		op["parameters"] = params
	}
	if r.body != nil {
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{
			"application/json": map[string]any{"schema": sc.of(reflect.TypeOf(r.body))}}}
	}
	ok := map[string]any{"description": http.StatusText(r.status)}
	switch {
	case r.stream:
		ok["content"] = map[string]any{"text/event-stream": map[string]any{
			"schema": map[string]any{"type": "string", "description": "each event's data is an Event"},
			// OpenAPI 3.1 has no SSE item type; the Event schema is named here.
			"x-event-schema": sc.of(reflect.TypeOf(r.resp)),
		}}
	case r.path == "/openapi.json":
		ok["content"] = map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "object"}}}
	default:
		ok["content"] = map[string]any{"application/json": map[string]any{"schema": sc.of(reflect.TypeOf(r.resp))}}
	}
	op["responses"] = s.errorResponses(map[string]any{strconv.Itoa(r.status): ok}, r.path != "/health", r.errors, errRef)
	if r.path == "/health" && s.cfg.AuthToken != "" {
		op["security"] = []any{} // /health never needs the token
	}
	return op
}

// errorResponses adds the error statuses of a route to responses: those
// every route may answer (403 from the guard, 500), 401 when a token is
// required, and the route's own.
func (s *Server) errorResponses(responses map[string]any, auth bool, own []int, errRef map[string]any) map[string]any {
	codes := append([]int{http.StatusForbidden, http.StatusInternalServerError}, own...)
	if auth && s.cfg.AuthToken != "" {
		codes = append(codes, http.StatusUnauthorized)
	}
	sort.Ints(codes)
	for _, c := range codes {
		responses[strconv.Itoa(c)] = map[string]any{
			"description": http.StatusText(c),
			"content":     map[string]any{"application/json": map[string]any{"schema": errRef}},
		}
	}
	return responses
}

// pathParams returns the {names} of an OpenAPI path.
func pathParams(path string) []string {
	var names []string
	for {
		i := strings.IndexByte(path, '{')
		if i < 0 {
			return names
		}
		j := strings.IndexByte(path[i:], '}')
		if j < 0 {
			return names
		}
		names = append(names, path[i+1:i+j])
		path = path[i+j+1:]
	}
}

// openAPIHandler answers GET /openapi.json.
func (s *Server) openAPIHandler(c *echo.Context) error {
	return c.JSON(http.StatusOK, s.openAPI())
}
