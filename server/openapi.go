package server

import (
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/labstack/echo/v5"

	"github.com/flockrun/flock/api"
)

// Route documents one route in GET /openapi.json. The API's routes are
// listed here (apiRoutes, operatorRoutes) and registered in routes and
// MountOperator; a Group documents its own (Documented);
// TestOpenAPICoversEveryRoute checks that every route echo serves is
// documented and every documented path is served.
type Route struct {
	Method  string
	Path    string // OpenAPI form: /runs/{id}
	ID      string // operationId
	Summary string
	// PathParams documents path parameters ({name}); those not listed
	// are documented as a run id ({id}) or an operation id ({op_id}).
	PathParams []Param
	// Query and Header are the route's other parameters.
	Query, Header []Param
	// Body is a value of the request body's Go type; nil for none.
	Body any
	// Status is the success status; Resp a value of its JSON body's Go
	// type, and Content its other media types (or the only ones, with
	// Resp nil).
	Status  int
	Resp    any
	Content []Content
	// Errors are the route's own statuses besides those every route may
	// answer (403, 500 and, with a token, 401), answered with a body of
	// ErrorBody's type (nil: api.Error). A status in both lists may have
	// either body, unless GroupErrors.
	Errors    []int
	ErrorBody any
	// GroupErrors: every error of the route, the server's included, has
	// ErrorBody's type, because the route's Group answers them all
	// (ErrorWriter).
	GroupErrors bool
	// Public routes need no bearer token.
	Public bool
}

// Content is one media type of a route's success answer.
type Content struct {
	// Media is the media type, e.g. "text/event-stream", "text/html".
	Media string
	// Body is a value of the body's Go type; for text/event-stream, of
	// each event's data. A string is text.
	Body any
}

// Param is a path, query or header parameter.
type Param struct {
	Name, Type, Doc string
}

var (
	limitParam = Param{"limit", "integer", "page size, 1 to 1000"}
	afterSeq   = Param{"after", "integer", "the cursor: the seq after which to start (the previous page's next)"}
)

// apiRoutes are the API's routes, in the order of the package doc.
var apiRoutes = []Route{
	{Method: http.MethodGet, Path: "/health", ID: "health", Status: http.StatusOK, Resp: api.Health{}, Public: true,
		Summary: "The server's condition: ok; degraded while some run cannot commit (still 200); unavailable (503, the same body) when it cannot read or write runs, as a cluster node whose store does not answer. Needs no token."},
	{Method: http.MethodPost, Path: "/start_workflow", ID: "startWorkflow", Status: http.StatusCreated,
		Body: api.StartRequest{}, Resp: api.RunStatus{},
		Errors:  []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusInsufficientStorage, http.StatusServiceUnavailable},
		Summary: "Start a run; returns at once with its id (Location: /runs/{id})."},
	{Method: http.MethodGet, Path: "/runs", ID: "listRuns", Status: http.StatusOK, Resp: api.Runs{},
		Query: []Param{
			{"status", "string", "only runs with this status"},
			{"workflow", "string", "only runs of this workflow"},
			{"parent_id", "string", "only the children of this run"},
			{"top", "boolean", "only the runs without a parent (not with parent_id)"},
			{"q", "string", "only the runs whose task contains this text, ignoring case; one request reads at most 2,000 runs (follow next)"},
			{"after", "string", "the cursor (the previous page's next)"},
			limitParam},
		Errors:  []int{http.StatusBadRequest},
		Summary: "Run heads, newest first (default limit 50), each with its task's first line, its number of child runs and of questions waiting."},
	{Method: http.MethodGet, Path: "/stats/runs", ID: "runCounts", Status: http.StatusOK, Resp: api.RunCounts{},
		Errors:  []int{http.StatusNotImplemented},
		Summary: "How many runs the store holds, by status; at most a second old."},
	{Method: http.MethodGet, Path: "/runs/{id}", ID: "getRun", Status: http.StatusOK, Resp: api.Run{},
		Errors:  []int{http.StatusNotFound},
		Summary: "A run's head; a live run's also says what holds it (stalled, waiting)."},
	{Method: http.MethodGet, Path: "/runs/{id}/entries", ID: "listEntries", Status: http.StatusOK, Resp: api.Entries{},
		Query: []Param{afterSeq, limitParam,
			{"type", "string", "only entries of these types (comma-separated, e.g. row or qa,qa_rejected); one request reads at most 20,000 entries (follow next)"}},
		Errors:  []int{http.StatusBadRequest, http.StatusNotFound},
		Summary: "A run's entry log, oldest first (default limit 100)."},
	{Method: http.MethodGet, Path: "/runs/{id}/ops", ID: "listOps", Status: http.StatusOK, Resp: api.Ops{},
		Query:   []Param{{"after", "string", "the op id after which to start (the previous page's next)"}, limitParam},
		Errors:  []int{http.StatusBadRequest, http.StatusNotFound},
		Summary: "A run's operation journal by step and index (default limit 100)."},
	{Method: http.MethodGet, Path: "/runs/{id}/usage", ID: "runUsage", Status: http.StatusOK, Resp: api.UsageByModel{},
		Query:   []Param{{"descendants", "boolean", "also count the run's descendant runs (at most 1,000 runs in all)"}},
		Errors:  []int{http.StatusBadRequest, http.StatusNotFound},
		Summary: "The tokens and cost of a run's generate operations, by model."},
	{Method: http.MethodGet, Path: "/runs/{id}/events", ID: "streamEvents", Status: http.StatusOK, Resp: api.Events{}, Content: []Content{{"text/event-stream", api.Event{}}},
		Query: []Param{afterSeq,
			{"descendants", "boolean", "also live-only events (seq 0) of the run's operations and descendant runs"}},
		Header:  []Param{{"Last-Event-ID", "integer", "resume after this event id; wins over after"}},
		Errors:  []int{http.StatusBadRequest, http.StatusNotFound},
		Summary: "Server-Sent Events (id: seq, event: type, data: Event JSON): stored events, then live ones, until the run's terminal run event. Asked with Accept: application/json (and not text/event-stream), a page of the stored events instead: {events, next}."},
	{Method: http.MethodPost, Path: "/runs/{id}/cancel", ID: "cancelRun", Status: http.StatusOK, Resp: api.RunStatus{},
		Errors:  []int{http.StatusNotFound, http.StatusConflict, http.StatusUnsupportedMediaType, http.StatusServiceUnavailable},
		Summary: "Cancel a run and its children; returns once it has ended. 409 once it had ended."},
	{Method: http.MethodPost, Path: "/runs/{id}/pause", ID: "pauseRun", Status: http.StatusOK, Resp: api.RunStatus{},
		Errors:  []int{http.StatusNotFound, http.StatusConflict, http.StatusUnsupportedMediaType, http.StatusServiceUnavailable},
		Summary: "Pause a run and its running children. 409 once it has ended."},
	{Method: http.MethodPost, Path: "/runs/{id}/resume", ID: "resumeRun", Status: http.StatusOK, Resp: api.RunStatus{},
		Errors:  []int{http.StatusNotFound, http.StatusConflict, http.StatusUnsupportedMediaType, http.StatusServiceUnavailable},
		Summary: "Resume a paused run. 409 unless it is paused."},
	{Method: http.MethodPost, Path: "/runs/{id}/fork", ID: "forkRun", Status: http.StatusCreated,
		Body: api.ForkRequest{}, Resp: api.Forked{},
		Errors:  []int{http.StatusBadRequest, http.StatusNotFound, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusServiceUnavailable},
		Summary: "Start a new run from the state of this one at a past step (entries, ops, vars, work-dir snapshot), with optional edited vars and an injected message (Location: /runs/{new id})."},
	{Method: http.MethodGet, Path: "/runs/{id}/human", ID: "listQuestions", Status: http.StatusOK, Resp: api.Questions{},
		Errors:  []int{http.StatusNotFound},
		Summary: "The questions the run waits on a person for (human and intervention operations of its current step)."},
	{Method: http.MethodPost, Path: "/runs/{id}/human/{op_id}/answer", ID: "answerQuestion", Status: http.StatusOK,
		Body: api.AnswerRequest{}, Resp: api.OK{},
		Errors:  []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusServiceUnavailable},
		Summary: "Answer a question (op_id path-escaped, its slashes as %2F); returns once the answer is journaled. 404 for an op that is no question, 409 once answered."},
	{Method: http.MethodPost, Path: "/runs/{id}/intervene", ID: "intervene", Status: http.StatusOK,
		Body: api.InterveneRequest{}, Resp: api.OK{},
		Errors:  []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusServiceUnavailable},
		Summary: "Replace (action) or approve the action a run in intervention mode waits to execute. 409 when it waits for none."},
	{Method: http.MethodGet, Path: "/workflows", ID: "listWorkflows", Status: http.StatusOK, Resp: api.Workflows{},
		Summary: "The registered workflows' graphs."},
}

// openAPIRoute documents GET /openapi.json, which every server serves
// (New and NewBare).
var openAPIRoute = Route{Method: http.MethodGet, Path: "/openapi.json", ID: "openapi", Status: http.StatusOK, Resp: map[string]any{},
	Summary: "This document: the OpenAPI 3.1 document of every route the server serves."}

// operatorRoutes are the routes of MountOperator, documented when mounted.
var operatorRoutes = []Route{
	{Method: http.MethodGet, Path: "/operator", ID: "operatorInfo", Status: http.StatusOK, Resp: api.Operator{},
		Summary: "The data directory this server holds (operator token only: the command line checks the server it found in the data directory's server file)."},
	{Method: http.MethodPost, Path: "/operator/runs", ID: "handover", Status: http.StatusCreated, Body: api.Handover{}, Resp: api.RunStatus{},
		Errors:  []int{http.StatusBadRequest, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusServiceUnavailable},
		Summary: "Start a run handed over by the command line, with its grants and keys (operator token only); 200 with resumed when the unfinished run of the same key was resumed instead."},
	{Method: http.MethodPost, Path: "/operator/runs/{id}/resume", ID: "handoverResume", Status: http.StatusOK, Body: api.HandoverResume{}, Resp: api.RunStatus{},
		Errors:  []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusUnsupportedMediaType, http.StatusServiceUnavailable},
		Summary: "Resume a run and every unfinished descendant nothing drives, with the keys handed over (operator token only). 409 when a key is still missing."},
}

// openAPI builds the OpenAPI 3.1 document of the server: the API's routes,
// what was mounted beside them (Mount, MountUI, MountGateway,
// MountOperator, the groups), and the schemas of the Go types they use.
func (s *Server) openAPI() map[string]any {
	d := &document{s: s, sc: &schemas{defs: map[string]any{}}, paths: map[string]any{}}
	d.add(openAPIRoute)
	if s.eng != nil {
		d.add(apiRoutes...)
	}
	if s.op != nil {
		d.add(operatorRoutes...)
	}
	d.add(s.uiRoutes()...)
	d.add(s.mountedRoutes()...)
	if s.gateway {
		d.add(gatewayRoutes...)
	}
	for _, g := range s.groups {
		if doc, ok := g.(Documented); ok {
			d.add(doc.Routes()...)
		}
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "flock",
			"version":     "1",
			"description": "flock's HTTP API: start, follow and control runs of workflows. Every error is a JSON body {\"error\"} (beneath /api/v1, the sandbox's envelope; beneath /gateway/, OpenAI's error object) and every response carries X-Request-ID.",
		},
		"paths":      d.paths,
		"components": map[string]any{"schemas": d.sc.defs},
	}
	if s.cfg.AuthToken != "" {
		doc["components"].(map[string]any)["securitySchemes"] = map[string]any{
			"bearer": map[string]any{"type": "http", "scheme": "bearer"}}
		doc["security"] = []any{map[string]any{"bearer": []any{}}}
	}
	return doc
}

// document is an OpenAPI document being built.
type document struct {
	s     *Server
	sc    *schemas
	paths map[string]any
}

// add documents routes.
func (d *document) add(routes ...Route) {
	for _, r := range routes {
		item, _ := d.paths[r.Path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			d.paths[r.Path] = item
		}
		item[strings.ToLower(r.Method)] = d.operation(r)
	}
}

// operation documents one route.
func (d *document) operation(r Route) map[string]any {
	op := map[string]any{"operationId": r.ID, "summary": r.Summary}
	var params []any
	for _, name := range pathParams(r.Path) {
		doc := "the run id"
		if name == "op_id" {
			doc = "the operation id (<run>/<step>/<index>), path-escaped"
		}
		for _, p := range r.PathParams {
			if p.Name == name {
				doc = p.Doc
			}
		}
		params = append(params, map[string]any{"name": name, "in": "path", "required": true,
			"schema": map[string]any{"type": "string"}, "description": doc})
	}
	for _, in := range []struct {
		where string
		ps    []Param
	}{{"query", r.Query}, {"header", r.Header}} {
		for _, p := range in.ps {
			params = append(params, map[string]any{"name": p.Name, "in": in.where,
				"schema": map[string]any{"type": p.Type}, "description": p.Doc})
		}
	}
	if params != nil {
		op["parameters"] = params
	}
	if r.Body != nil {
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{
			"application/json": map[string]any{"schema": d.sc.of(reflect.TypeOf(r.Body))}}}
	}
	content := map[string]any{}
	if r.Resp != nil {
		content["application/json"] = map[string]any{"schema": d.sc.of(reflect.TypeOf(r.Resp))}
	}
	for _, c := range r.Content {
		if c.Media == "text/event-stream" {
			content[c.Media] = map[string]any{
				"schema": map[string]any{"type": "string", "description": "Server-Sent Events; each event's data is the x-event-schema"},
				// OpenAPI 3.1 has no SSE item type; the data's schema is named here.
				"x-event-schema": d.sc.of(reflect.TypeOf(c.Body)),
			}
			continue
		}
		content[c.Media] = map[string]any{"schema": d.sc.of(reflect.TypeOf(c.Body))}
	}
	responses := map[string]any{strconv.Itoa(r.Status): map[string]any{"description": http.StatusText(r.Status), "content": content}}
	d.errorResponses(responses, r)
	op["responses"] = responses
	if r.Public && d.s.cfg.AuthToken != "" {
		op["security"] = []any{} // no bearer token
	}
	return op
}

// errorResponses adds the error statuses of r to responses: those every
// route may answer (403 from the guard, 500), 401 when a token is
// required, and the route's own. The server's are api.Error (unless the
// route's group answers them, GroupErrors), the route's own ErrorBody.
func (d *document) errorResponses(responses map[string]any, r Route) {
	common := []int{http.StatusForbidden, http.StatusInternalServerError}
	if !r.Public && d.s.cfg.AuthToken != "" {
		common = append(common, http.StatusUnauthorized)
	}
	errRef := d.sc.of(reflect.TypeFor[api.Error]())
	own := errRef
	if r.ErrorBody != nil {
		own = d.sc.of(reflect.TypeOf(r.ErrorBody))
	}
	server := errRef
	if r.GroupErrors {
		server = own
	}
	codes := slices.Concat(common, r.Errors)
	sort.Ints(codes)
	for _, c := range slices.Compact(codes) {
		schema := server
		switch inOwn, inCommon := slices.Contains(r.Errors, c), slices.Contains(common, c); {
		case inOwn && inCommon && !r.GroupErrors && r.ErrorBody != nil:
			schema = map[string]any{"oneOf": []any{own, server}}
		case inOwn:
			schema = own
		}
		responses[strconv.Itoa(c)] = map[string]any{
			"description": http.StatusText(c),
			"content":     map[string]any{"application/json": map[string]any{"schema": schema}},
		}
	}
}

// operationID names the route of path for an operationId: prefix and
// the path's words in camel case ("ui", "app.js" -> "uiAppJs").
func operationID(prefix, path string) string {
	var b strings.Builder
	b.WriteString(prefix)
	upper := true
	for _, r := range path {
		switch {
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
			if upper {
				r = unicode.ToUpper(r)
			}
			b.WriteRune(r)
			upper = false
		default:
			upper = true
		}
	}
	return b.String()
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
