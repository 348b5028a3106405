// Package server is flock's HTTP API (docs/design.md; README.md lists the
// routes): it starts runs, lists and reads them, streams their events and
// cancels them.
//
// It depends on the engine's roles, not on the executor: each group of
// routes asks for its own interface of one to three methods (Starter,
// Controller, Forker, Questioner, Subscriber, Catalog, Monitor; Engine is
// them together, what New takes, and *workflows.Executor plays them all),
// the operator routes for one more found by type assertion (Launcher);
// stored runs are read through a state.Reader. It answers with the view
// types of package api, converted field by field from the journal's
// structs (state.Run, state.Op, state.Event, record.Entry), so the journal
// schema can change without breaking clients; a golden test
// (TestWireGolden) pins every route's JSON byte for byte. Package client
// is the Go client of these routes.
//
// # Routes
//
//	GET  /health               {"status":"ok"}, or "degraded" with the stalled runs (or a cluster store electing leaders); 503 "unavailable" when runs cannot be read or written (a cluster node's store lost a stream, or has not answered for 30 s); never needs a token
//	GET  /openapi.json         the OpenAPI 3.1 document of these routes
//	POST /start_workflow       {"workflow","settings","task"} -> 201 {"run_id","status"}
//	GET  /runs                 ?status=&workflow=&parent_id=&top=&q=&after=&limit= -> {"runs","next"}; each run with "task" (first line), "children", "questions"
//	GET  /runs/:id             the run head with its "vars"; a live run's says what holds it ("stalled", "waiting")
//	GET  /runs/:id/entries     ?after=&limit=&type= -> {"entries","next"}
//	GET  /runs/:id/ops         ?after=&limit= -> {"ops","next"}
//	GET  /runs/:id/usage       ?descendants= -> {"models":[{"model","calls","errors","prompt_tokens","completion_tokens","cost"}],"runs"}
//	GET  /runs/:id/events      Server-Sent Events, resumable with Last-Event-ID
//	POST /runs/:id/cancel      -> {"run_id","status"}; 409 once the run has ended
//	POST /runs/:id/pause       -> {"run_id","status":"paused"}; 409 once the run has ended
//	POST /runs/:id/resume      -> {"run_id","status":"running"}; 409 unless the run is paused
//	POST /runs/:id/fork        {"step","vars"?,"message"?} -> 201 {"run_id","status"}; 400 for a step the run never reached
//	GET  /runs/:id/human       {"pending":[{"op_id","kind","question","choices"?,"scale"?,"action"?,"asked_at"}]}
//	POST /runs/:id/human/:op_id/answer  {"answer": text|number} -> {"ok":true} once journaled; 404 no such question, 409 answered
//	POST /runs/:id/intervene   {"action":{...}} or {"approve":true} -> {"ok":true}; 409 when the run waits for no intervention
//	GET  /workflows            {"workflows":[graph...]}
//	GET  /stats/runs           {"total","running","paused","succeeded","failed","cancelled"}, at most 1 s old
//	GET  /, GET /ui/NAME       the browser viewer (MountUI, package viewer): its page and each of its assets; no token needed
//
// MountGateway adds the model gateway of external agents (package
// gateway): POST /gateway/:session/v1/chat/completions, POST
// /gateway/:session/v1/responses and GET /gateway/:session/v1/models,
// OpenAI-compatible, authenticated by the
// session's own token instead of the server's (which neither opens them
// nor is needed there); the guard's checks apply to them as to every route.
//
// MountGroup mounts the routes of another package (a Group) behind the
// same guard, bearer token and body limit: flock serve --sandbox-config
// mounts AgentFlow's sandbox API (package server/sandboxapi), whose
// errors are AgentFlow envelopes (a Group may answer its own errors,
// ErrorWriter). NewBare is a server of groups alone: flock sandbox.
//
// Paginated lists return "next", the cursor to pass as "after" for the next
// page; it is empty when there was nothing more at the time of the call.
// "limit" is 1 to 1000 (default 50 for runs, 100 for entries and ops).
// Two filters read a bounded part of the store per request and may answer
// a short (even empty) page with a "next" to go on from: a search of the
// runs by task text (q=, case-insensitive; 2,000 runs a request) and the
// entries of some types (type=row or type=qa,qa_rejected; 20,000 entries a
// request).
//
// # OpenAPI
//
// GET /openapi.json is generated at run time, on every server (New and
// NewBare): a Route documents each route (parameters, request body,
// success and error statuses and their bodies) by Go values of the types
// it answers, and schemas turns those types into JSON Schema by
// reflection (json tags give the names, omitempty makes a field
// optional, a pointer without it may be null, a doc tag is its
// description; time.Time is a date-time string, json.RawMessage any
// JSON). apiRoutes and operatorRoutes are the API's, gatewayRoutes the
// gateway's; the viewer's page and each of its assets (MountUI), the
// paths given to Mount, and the routes of a Group that documents them
// (Documented, as server/sandboxapi does) are listed too. Errors have
// the Error schema, beneath /gateway/ also OpenAI's error object, and a
// group's own when it answers them (ErrorWriter).
// TestOpenAPICoversEveryRoute walks echo's route table of every kind of
// server flock runs and checks it against the document both ways (a real
// request of every documented operation answers a documented status and
// body); TestOpenAPIDescribesResponses validates more real answers.
//
// # Errors
//
// Every error is a JSON body {"error": "..."} whose text names the bad field
// or the unknown run. Handlers return Go errors; one error handler maps them
// to statuses with errors.Is: ErrBadInput, workflows.ErrBadRequest and
// workflows.ErrUnknownWorkflow give 400 (a bad "after" cursor included),
// ErrRefused 403 or 415 (see Security), state.ErrNotFound 404,
// workflows.ErrEnded 409, an oversize body 413, workflows.ErrStopped and
// state.ErrUnavailable (a cluster store electing new leaders) 503, and
// anything else 500 with a request id and no internals. Every response,
// refusals included, carries the request id in X-Request-ID.
//
// # Events
//
// GET /runs/:id/events replays the run's stored events after the
// Last-Event-ID header (or ?after=) and then follows live ones, without
// gaps or duplicates: it subscribes before it reads the store and drops
// events whose seq it has already sent. Each event is
//
//	id: <seq>
//	event: <type>
//	data: <event JSON>
//
// The terminal "run" event's message is the run's end reason; its data
// holds {"error": ...} when the run's error says more than the reason (a
// model failure names the model, the endpoint's host and the cause). An
// "op" event's data holds the op's error and failure code (model_error,
// rate_limited, timeout, unavailable) when it failed. A client that
// connects while the run waits on a retry or a stalled commit first gets
// the live-only "waiting" / "stalled" events that say so.
//
// A comment line is sent every 15 s while nothing happens. The stream ends
// after the run's terminal "run" event, when the client goes away, or when
// the server shuts down.
//
// # Security
//
// A non-loopback listen address requires configs.Server.AuthToken; New
// refuses the configuration otherwise, and refuses tokens shorter than
// configs.MinAuthTokenLen (16) bytes. With a token, every route but
// /health requires "Authorization: Bearer <token>" (compared in constant
// time). The viewer's page and assets (MountUI) need no token: they hold
// no data, and the viewer sends the token the user types as a header, so
// no cookie ever authenticates a request. Bodies are capped at
// configs.Server.MaxBodyBytes (max_body_bytes, 16 MiB by default) while
// they are read, not only by Content-Length; a sandbox body (decoded into
// maps) may hold at most 100,000 JSON values, counted before it is decoded.
// Start serves through internal/httpserver: the header must arrive within
// header_timeout_s and a body within body_timeout_s of it (a trickling
// client loses its connection, token or not), and every answer carries
// X-Content-Type-Options: nosniff. The bound address is recorded in
// internal/selfaddr while the server listens, so that the sandbox's
// network guard never lets a tool reach it.
//
// A web page the user has open must not be able to drive a server on
// loopback, nor read its answers after rebinding its own DNS name to
// 127.0.0.1. Before authentication and routing (so that neither a 401 nor
// a 404 answers a foreign page), every request passes three checks, each
// refusal a JSON error naming the header and the setting that allows it:
//
//   - Host (every route, /health included): a loopback name or address
//     (localhost, 127.0.0.0/8, ::1, with or without port), the specific
//     host of the listen address (not 0.0.0.0 or ::), or a name in
//     configs.Server.PublicNames (public_names). Anything else is 403. We
//     answer 403 rather than 421 Misdirected Request: 421 invites clients
//     to retry on another connection, and no connection would fare better.
//   - Origin (every route, the event stream included): absent (curl,
//     programs), the request's own origin (http:// or, under TLS,
//     https:// plus Host), or one of configs.Server.AllowedOrigins
//     (allowed_origins), compared after configs.NormalizeOrigin. Anything
//     else, "null" included, is 403. Listed origins get CORS headers, and
//     their preflights (OPTIONS with Access-Control-Request-Method) a 204,
//     so that their pages can read answers and send JSON with a token.
//   - Content-Type (every method but GET, HEAD and OPTIONS, so future
//     routes inherit it): application/json, parameters allowed, case
//     ignored; anything else is 415. A request with no body
//     (Content-Length 0, no Transfer-Encoding) and no Content-Type passes
//     (curl -X POST .../cancel). Browsers send text/plain and form bodies
//     cross-site without a preflight; JSON needs one, which only allowed
//     origins get.
//
// # Logging
//
// The server logs through the *slog.Logger given to New, the one logger of
// the binary (the command line builds it with the level of --log-level),
// and hands it to echo, whose own default would write JSON to stdout.
// Every request gets a debug line (method, URI, status, latency, request
// id, remote address: the connection's, not X-Forwarded-For); errors
// answered with a 5xx get an error line, a recovered panic one error line
// with its stack. No line carries a header: the bearer token never
// reaches the log.
//
// # Caveats
//
// echo (v5) is confined to this package and the groups mounted from
// beneath it (server/sandboxapi), so that echo's next major version again
// touches nothing else. Shutdown ends open event streams
// first, then drains other requests; stop the executor after the server so
// in-flight requests can still read state.
package server
