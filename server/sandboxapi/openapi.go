package sandboxapi

import (
	"net/http"

	"github.com/flockrun/flock/sandbox"
	"github.com/flockrun/flock/server"
)

// The answers without an envelope, typed so that GET /openapi.json
// documents what the handlers write.
type (
	// healthAnswer is AgentFlow's GET /health.
	healthAnswer struct {
		Status    string `json:"status" doc:"healthy"`
		Timestamp string `json:"timestamp" doc:"UTC, e.g. 2026-01-02T15:04:05.000000"`
	}
	// toolList is GET /api/v1/tools.
	toolList struct {
		Tools []sandbox.ToolInfo `json:"tools"`
		Count int                `json:"count"`
	}
	// shutdownAnswer is POST /api/v1/server/shutdown.
	shutdownAnswer struct {
		Status          string `json:"status" doc:"success"`
		Message         string `json:"message"`
		SessionsCleaned int    `json:"sessions_cleaned"`
	}
)

// Statuses beyond 200 and those every route may answer (403, 500, and
// 401 with a token).
var (
	// bodyErrors are a POST's: a malformed or incomplete body (or a
	// failure the backend calls the request's, codes 4xxx), a body too
	// large, a body that is not JSON.
	bodyErrors = []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType}
	// sessionErrors add the answer for a session that does not exist.
	sessionErrors = append(bodyErrors[:len(bodyErrors):len(bodyErrors)], http.StatusNotFound)
	// batchErrors add 207, some of the batch failed (code 5010).
	batchErrors = append(bodyErrors[:len(bodyErrors):len(bodyErrors)], http.StatusMultiStatus)
)

// Routes documents the routes Register adds (server.Documented): every
// answer beneath /api/v1 and of /ready, errors included, is JSON, and
// every error an envelope.
func (h *API) Routes() []server.Route {
	var out []server.Route
	if h.opts.Health {
		out = append(out, server.Route{Method: http.MethodGet, Path: "/health", ID: "sandboxHealth", Status: http.StatusOK,
			Resp: healthAnswer{}, Public: true,
			Summary: "AgentFlow's liveness answer (no envelope); needs no token."})
	}
	env := sandbox.Envelope{}
	envelope := func(method, path, id string, errs []int, summary string) server.Route {
		r := server.Route{Method: method, Path: path, ID: id, Status: http.StatusOK, Resp: env, Errors: errs, Summary: summary}
		if method == http.MethodPost {
			r.Body = map[string]any{}
		}
		return r
	}
	plain := func(method, path, id string, resp any, errs []int, summary string) server.Route {
		r := envelope(method, path, id, errs, summary)
		r.Resp = resp
		return r
	}
	out = append(out,
		plain(http.MethodGet, "/ready", "sandboxReady", sandbox.Readiness{}, nil,
			"Readiness: the tools, the workers with a session and the sessions (no envelope)."),
		envelope(http.MethodPost, Prefix+"/execute", "sandboxExecute", bodyErrors,
			"Run a tool: {worker_id, action (a tool name), params, timeout (seconds)?, trace_id?}; the envelope's data is the tool's answer, its code the tool's failure (4xxx: 400, 5xxx: 500)."),
		envelope(http.MethodPost, Prefix+"/execute/batch", "sandboxExecuteBatch", batchErrors,
			"Run several tools: {worker_id, actions: [{action, params, timeout}], parallel (false), stop_on_error (true)}; data {results: [envelope...], total, executed, success_count}; 207 (code 5010) when some failed."),
		envelope(http.MethodPost, Prefix+"/session/create", "sandboxSessionCreate", bodyErrors,
			"Create the worker's session of a resource type: {worker_id, resource_type, session_config, custom_name?}; 500 (code 4007) when it cannot be initialised."),
		envelope(http.MethodPost, Prefix+"/session/destroy", "sandboxSessionDestroy", sessionErrors,
			"Destroy the worker's session of a resource type: {worker_id, resource_type}; 404 (code 4007) when there is none."),
		envelope(http.MethodPost, Prefix+"/session/fork", "sandboxSessionFork", bodyErrors,
			"flock's own: create the worker's session of a resource type as a copy of from_worker_id's: {worker_id, resource_type, from_worker_id}."),
		envelope(http.MethodPost, Prefix+"/session/list", "sandboxSessionList", bodyErrors,
			"The worker's sessions: {worker_id}; data {worker_id, sessions, count}."),
		envelope(http.MethodPost, Prefix+"/session/refresh", "sandboxSessionRefresh", sessionErrors,
			"Extend the worker's session of a resource type, or all of the worker's: {worker_id, resource_type?}; 404 (code 4007) when there is none."),
		envelope(http.MethodPost, Prefix+"/lifecycle/heartbeat", "sandboxHeartbeat", bodyErrors,
			"Extend every session of the worker: {worker_id}; data {worker_id, active_sessions, timestamp}."),
		envelope(http.MethodPost, Prefix+"/lifecycle/status", "sandboxStatus", bodyErrors,
			"The worker's sessions and the tools: {worker_id}; data {worker_id, active_resources, sessions, tools_available}."),
		envelope(http.MethodPost, Prefix+"/worker/disconnect", "sandboxDisconnect", bodyErrors,
			"Destroy every session of the worker: {worker_id}; data {worker_id, sessions_cleaned}."),
		envelope(http.MethodPost, Prefix+"/init/resource", "sandboxInitResource", bodyErrors,
			"Get or create the worker's session of a resource type: {worker_id, resource_type, init_config}; data {session_id, resource_type, session_status, error}."),
		envelope(http.MethodPost, Prefix+"/init/batch", "sandboxInitBatch", batchErrors,
			"Get or create several sessions: {worker_id, resource_configs: {TYPE: config}}; 207 (code 5010) when some failed, 500 (code 5009) when all did."),
		plain(http.MethodGet, Prefix+"/tools", "sandboxTools", toolList{}, []int{http.StatusBadRequest},
			"The tools the configuration enabled, each with its JSON Schema (no envelope); ?include_hidden=true also the hidden ones."),
		plain(http.MethodGet, Prefix+"/tools/{name}/schema", "sandboxToolSchema", sandbox.ToolInfo{}, []int{http.StatusNotFound},
			"One tool of the list (a simple name resolves as in execute, no envelope); 404 when unknown."),
		plain(http.MethodPost, Prefix+"/warmup", "sandboxWarmup", sandbox.WarmUpResult{}, bodyErrors,
			"Warm the named backends ({backends: [name...] or null for all}) one after the other (no envelope)."),
		plain(http.MethodGet, Prefix+"/warmup/status", "sandboxWarmupStatus", sandbox.WarmupStatus{}, nil,
			"Each enabled backend's warm-up state (no envelope)."),
		plain(http.MethodPost, Prefix+"/server/shutdown", "sandboxShutdown", shutdownAnswer{}, bodyErrors,
			"Destroy the caller's sessions ({cleanup_sessions (true)}); flock sandbox then stops gracefully, flock serve keeps running (no envelope)."),
	)
	for i := range out {
		if out[i].Path == "/health" {
			continue // not the group's: the server's {"error"} answers its errors
		}
		out[i].ErrorBody, out[i].GroupErrors = env, true
		switch out[i].Path {
		case Prefix + "/tools":
			out[i].Query = []server.Param{{Name: "include_hidden", Type: "boolean", Doc: "also the hidden tools"}}
		case Prefix + "/tools/{name}/schema":
			out[i].PathParams = []server.Param{{Name: "name", Type: "string", Doc: "the tool's name (resource:tool, or a simple name)"}}
		}
	}
	return out
}
