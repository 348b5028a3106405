package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/sandbox"
)

// sandboxPrefix is where the sandbox routes live; every answer beneath it,
// errors included, is JSON, and errors are AgentFlow envelopes.
const sandboxPrefix = "/api/v1"

// NewSandbox returns a server of the sandbox service alone (`flock
// sandbox`): GET /health, GET /ready and the /api/v1 routes, behind the same
// guard and bearer token as New's. shutdown, if not nil, is called after
// POST /api/v1/server/shutdown has answered.
func NewSandbox(cfg configs.Server, svc *sandbox.Service, shutdown func(), logger *slog.Logger) (*Server, error) {
	if svc == nil {
		return nil, errors.New("server: sandbox service is nil")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// The sandbox config's server section may set the listener's bounds.
	if sc := svc.ServerSettings(); sc.MaxBodyBytes > 0 || sc.HeaderTimeout > 0 || sc.BodyTimeout > 0 {
		if sc.MaxBodyBytes > 0 {
			cfg.MaxBodyBytes = sc.MaxBodyBytes
		}
		if sc.HeaderTimeout > 0 {
			cfg.HeaderTimeoutS = sc.HeaderTimeout.Seconds()
		}
		if sc.BodyTimeout > 0 {
			cfg.BodyTimeoutS = sc.BodyTimeout.Seconds()
		}
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	g, err := newGuard(cfg)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s := &Server{guard: g, cfg: cfg, log: logger, heartbeat: DefaultHeartbeat, quit: make(chan struct{}),
		public: map[string]bool{"/health": true}}
	s.e = s.newEcho()
	s.mountSandbox(svc, shutdown)
	return s, nil
}

// MountSandbox serves svc under /api/v1 plus GET /ready (`flock serve
// --sandbox-config`). Call it before Start.
func (s *Server) MountSandbox(svc *sandbox.Service) { s.mountSandbox(svc, nil) }

func (s *Server) mountSandbox(svc *sandbox.Service, shutdown func()) {
	h := &sandboxRoutes{svc: svc, s: s, shutdown: shutdown}
	s.sandbox = svc
	s.e.GET("/ready", h.ready)
	g := s.e.Group(sandboxPrefix)
	g.POST("/execute", h.withCaller(h.execute))
	g.POST("/execute/batch", h.withCaller(h.batch))
	g.POST("/session/create", h.withCaller(h.create))
	g.POST("/session/destroy", h.withCaller(h.destroy))
	g.POST("/session/fork", h.withCaller(h.fork))
	g.POST("/session/list", h.withCaller(h.list))
	g.POST("/session/refresh", h.withCaller(h.refresh))
	g.POST("/lifecycle/heartbeat", h.withCaller(h.heartbeat))
	g.POST("/lifecycle/status", h.withCaller(h.status))
	g.POST("/worker/disconnect", h.withCaller(h.disconnect))
	g.POST("/init/resource", h.withCaller(h.initResource))
	g.POST("/init/batch", h.withCaller(h.initBatch))
	g.GET("/tools", h.tools)
	g.GET("/tools/:name/schema", h.schema)
	g.POST("/warmup", h.warmup)
	g.GET("/warmup/status", h.warmupStatus)
	g.POST("/server/shutdown", h.serverShutdown)
	// Anything else beneath the prefix is an enveloped 404 or 405
	// (handleError).
}

type sandboxRoutes struct {
	svc      *sandbox.Service
	s        *Server
	shutdown func()
}

// body is a decoded request body with AgentFlow's loose typing: unknown
// keys are ignored.
type body map[string]any

// errEnvelope is a request-level failure answered as an envelope.
type errEnvelope struct {
	status int
	code   int
	msg    string
}

func (e *errEnvelope) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &errEnvelope{status: http.StatusBadRequest, code: sandbox.CodeInvalidRequestFormat, msg: fmt.Sprintf(format, args...)}
}

// maxBodyValues bounds the JSON values (every string, number, literal,
// object and array, keys included) of a sandbox request body. Decoded into
// map[string]any a value costs 50 to 400 bytes whatever its size in the
// body, so the body's byte limit alone let a small body take a lot of
// memory; 100,000 values cost at most about 40 MB.
const maxBodyValues = 100_000

// decode reads the JSON object of the request; an empty body is {}. A body
// of more than maxBodyValues values is refused (413) before it is decoded.
func decode(c *echo.Context) (body, error) {
	data, err := io.ReadAll(c.Request().Body)
	if slowBody(err) {
		return nil, errSlowBody
	}
	if err != nil {
		return nil, err
	}
	b := body{}
	if len(strings.TrimSpace(string(data))) == 0 {
		return b, nil
	}
	if !fewValues(data, maxBodyValues) {
		return nil, &errEnvelope{status: http.StatusRequestEntityTooLarge, code: sandbox.CodeInvalidRequestFormat,
			msg: fmt.Sprintf("request body too large: it holds more than %d JSON values", maxBodyValues)}
	}
	if err := json.Unmarshal(data, &b); err != nil || b == nil {
		return nil, badRequest("request body must be a JSON object")
	}
	return b, nil
}

// fewValues reports whether the JSON text data holds at most max values
// (keys counted as values). It only counts, at the speed of a byte scan;
// json.Unmarshal validates afterwards.
func fewValues(data []byte, max int) bool {
	n := 0
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case c == '{' || c == '[':
		case c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z':
			for i+1 < len(data) && (data[i+1] == '.' || data[i+1] == '+' || data[i+1] == '-' || data[i+1] >= '0' && data[i+1] <= '9' || data[i+1] >= 'a' && data[i+1] <= 'z' || data[i+1] >= 'A' && data[i+1] <= 'Z') {
				i++
			}
		default:
			continue
		}
		if n++; n > max {
			return false
		}
	}
	return true
}

func (b body) str(key string, required bool) (string, error) {
	v, ok := b[key]
	if !ok || v == nil {
		if required {
			return "", badRequest("missing required field: %s", key)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", badRequest("field %s must be a string", key)
	}
	if required && s == "" {
		return "", badRequest("field %s must not be empty", key)
	}
	return s, nil
}

func (b body) obj(key string) (map[string]any, error) {
	v, ok := b[key]
	if !ok || v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, badRequest("field %s must be an object", key)
	}
	return m, nil
}

func (b body) boolean(key string, def bool) (bool, error) {
	v, ok := b[key]
	if !ok || v == nil {
		return def, nil
	}
	x, ok := v.(bool)
	if !ok {
		return false, badRequest("field %s must be a boolean", key)
	}
	return x, nil
}

func (b body) seconds(key string) (time.Duration, error) {
	v, ok := b[key]
	if !ok || v == nil {
		return 0, nil
	}
	f, ok := v.(float64)
	if !ok || f < 0 || f > 1e6 {
		return 0, badRequest("field %s must be a non-negative number of seconds", key)
	}
	return time.Duration(f * float64(time.Second)), nil
}

// caller builds the request's identity: the token's digest when a token is
// required (one token is one caller), the body's worker_id and trace_id.
// withCaller adapts a route that needs the decoded body and the caller it
// names: the prologue every worker-scoped route shares.
func (h *sandboxRoutes) withCaller(fn func(c *echo.Context, b body, cl sandbox.Caller) error) echo.HandlerFunc {
	return func(c *echo.Context) error {
		b, err := decode(c)
		if err != nil {
			return err
		}
		cl, err := h.caller(c, b)
		if err != nil {
			return err
		}
		return fn(c, b, cl)
	}
}

func (h *sandboxRoutes) caller(c *echo.Context, b body) (sandbox.Caller, error) {
	worker, err := b.str("worker_id", true)
	if err != nil {
		return sandbox.Caller{}, err
	}
	trace, err := b.str("trace_id", false)
	if err != nil {
		return sandbox.Caller{}, err
	}
	return sandbox.Caller{Caller: h.s.callerID(), Worker: worker, TraceID: trace}, nil
}

// callerID names the authenticated caller: a digest of the token, never the
// token itself; "" without auth.
func (s *Server) callerID() string {
	if s.cfg.AuthToken == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("flock sandbox caller\x00" + s.cfg.AuthToken))
	return hex.EncodeToString(sum[:8])
}

// reply writes env with the status its code calls for, or status when not 0.
func reply(c *echo.Context, env sandbox.Envelope, status int) error {
	if status == 0 {
		status = sandbox.HTTPStatus(env.Code)
	}
	return c.JSON(status, env)
}

func (h *sandboxRoutes) execute(c *echo.Context, b body, cl sandbox.Caller) error {
	a, err := action(b)
	if err != nil {
		return err
	}
	return reply(c, h.svc.Execute(c.Request().Context(), cl, a), 0)
}

func action(b body) (sandbox.Action, error) {
	name, err := b.str("action", true)
	if err != nil {
		return sandbox.Action{}, err
	}
	params, err := b.obj("params")
	if err != nil {
		return sandbox.Action{}, err
	}
	timeout, err := b.seconds("timeout")
	if err != nil {
		return sandbox.Action{}, err
	}
	return sandbox.Action{Action: name, Params: params, Timeout: timeout}, nil
}

func (h *sandboxRoutes) batch(c *echo.Context, b body, cl sandbox.Caller) error {
	raw, ok := b["actions"].([]any)
	if !ok {
		return badRequest("field actions must be an array of {action, params, timeout}")
	}
	actions := make([]sandbox.Action, 0, len(raw))
	for i, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			return badRequest("actions[%d] must be an object", i)
		}
		a, err := action(body(m))
		if err != nil {
			return badRequest("actions[%d]: %s", i, err.Error())
		}
		actions = append(actions, a)
	}
	parallel, err := b.boolean("parallel", false)
	if err != nil {
		return err
	}
	stop, err := b.boolean("stop_on_error", true)
	if err != nil {
		return err
	}
	env := h.svc.Batch(c.Request().Context(), cl, actions, parallel, stop)
	status := 0
	if env.Code == sandbox.CodePartialFailure {
		status = http.StatusMultiStatus
	}
	return reply(c, env, status)
}

func (h *sandboxRoutes) create(c *echo.Context, b body, cl sandbox.Caller) error {
	rt, err := b.str("resource_type", true)
	if err != nil {
		return err
	}
	cfg, err := b.obj("session_config")
	if err != nil {
		return err
	}
	custom, err := b.str("custom_name", false)
	if err != nil {
		return err
	}
	env := h.svc.CreateSession(c.Request().Context(), cl, rt, cfg, custom)
	return reply(c, env, initStatus(env))
}

// fork creates the worker's session of resource_type as a fork of
// from_worker_id's (flock's own route; AgentFlow has none).
func (h *sandboxRoutes) fork(c *echo.Context, b body, cl sandbox.Caller) error {
	rt, err := b.str("resource_type", true)
	if err != nil {
		return err
	}
	from, err := b.str("from_worker_id", true)
	if err != nil {
		return err
	}
	env := h.svc.ForkSession(c.Request().Context(), cl, from, rt)
	return reply(c, env, initStatus(env))
}

// initStatus is AgentFlow's status for a failed initialisation: 500 with
// code 4007.
func initStatus(env sandbox.Envelope) int {
	if env.Code == sandbox.CodeResourceNotInitialized {
		return http.StatusInternalServerError
	}
	return 0
}

// notFoundStatus is AgentFlow's status for "no session": 404 with 4007.
func notFoundStatus(env sandbox.Envelope) int {
	if env.Code == sandbox.CodeResourceNotInitialized {
		return http.StatusNotFound
	}
	return 0
}

func (h *sandboxRoutes) destroy(c *echo.Context, b body, cl sandbox.Caller) error {
	rt, err := b.str("resource_type", true)
	if err != nil {
		return err
	}
	env := h.svc.DestroySession(c.Request().Context(), cl, rt)
	return reply(c, env, notFoundStatus(env))
}

func (h *sandboxRoutes) list(c *echo.Context, b body, cl sandbox.Caller) error {
	return reply(c, h.svc.ListSessions(cl), 0)
}

func (h *sandboxRoutes) refresh(c *echo.Context, b body, cl sandbox.Caller) error {
	rt, err := b.str("resource_type", false)
	if err != nil {
		return err
	}
	env := h.svc.RefreshSession(cl, rt)
	return reply(c, env, notFoundStatus(env))
}

func (h *sandboxRoutes) heartbeat(c *echo.Context, b body, cl sandbox.Caller) error {
	return reply(c, h.svc.Heartbeat(cl), 0)
}

func (h *sandboxRoutes) status(c *echo.Context, b body, cl sandbox.Caller) error {
	return reply(c, h.svc.Status(cl), 0)
}

func (h *sandboxRoutes) disconnect(c *echo.Context, b body, cl sandbox.Caller) error {
	return reply(c, h.svc.Disconnect(c.Request().Context(), cl), 0)
}

func (h *sandboxRoutes) initResource(c *echo.Context, b body, cl sandbox.Caller) error {
	rt, err := b.str("resource_type", true)
	if err != nil {
		return err
	}
	cfg, err := b.obj("init_config")
	if err != nil {
		return err
	}
	env := h.svc.CreateSession(c.Request().Context(), cl, rt, cfg, "")
	env = initData(env, rt)
	return reply(c, env, initStatus(env))
}

// initData reshapes a create answer as init/resource's data.
func initData(env sandbox.Envelope, rt string) sandbox.Envelope {
	d, _ := env.Data.(map[string]any)
	out := map[string]any{"session_id": d["session_id"], "resource_type": rt, "session_status": "active", "error": nil}
	if env.Code != 0 {
		out["session_status"], out["error"] = "error", env.Message
	}
	env.Data = out
	env.Meta.Tool = "init:resource"
	return env
}

func (h *sandboxRoutes) initBatch(c *echo.Context, b body, cl sandbox.Caller) error {
	cfgs, err := b.obj("resource_configs")
	if err != nil {
		return err
	}
	start := time.Now()
	results := map[string]any{}
	success := 0
	var trace string
	for rt, v := range cfgs {
		cfg, _ := v.(map[string]any)
		if content, ok := cfg["content"].(map[string]any); ok {
			cfg = content
		}
		env := initData(h.svc.CreateSession(c.Request().Context(), cl, rt, cfg, ""), rt)
		trace = env.Meta.TraceID
		d := env.Data.(map[string]any)
		st := "success"
		if env.Code != 0 {
			st = "error"
		} else {
			success++
		}
		results[rt] = map[string]any{"status": st, "session_id": d["session_id"], "session_status": d["session_status"], "error": d["error"]}
	}
	if cl.TraceID != "" || trace == "" {
		trace = cl.TraceID
	}
	env := sandbox.Envelope{Code: 0, Message: "success",
		Data: map[string]any{"worker_id": cl.Worker, "results": results, "total": len(cfgs), "success_count": success},
		Meta: sandbox.Meta{Tool: "init:batch", ResourceType: "session", TraceID: trace, ExecutionTimeMS: float64(time.Since(start).Microseconds()) / 1000}}
	status := 0
	switch {
	case success == len(cfgs):
	case success == 0:
		env.Code, env.Message = sandbox.CodeAllRequestsFailed, "All resource initializations failed"
	default:
		env.Code, env.Message = sandbox.CodePartialFailure, fmt.Sprintf("%d out of %d resource initializations failed", len(cfgs)-success, len(cfgs))
		status = http.StatusMultiStatus
	}
	return reply(c, env, status)
}

func (h *sandboxRoutes) tools(c *echo.Context) error {
	include := false
	switch strings.ToLower(c.QueryParam("include_hidden")) {
	case "", "false", "0", "no":
	case "true", "1", "yes":
		include = true
	default:
		return badRequest("include_hidden must be true or false")
	}
	tools := h.svc.Tools(include)
	return c.JSON(http.StatusOK, map[string]any{"tools": tools, "count": len(tools)})
}

func (h *sandboxRoutes) schema(c *echo.Context) error {
	name := c.Param("name")
	t, ok := h.svc.Tool(name)
	if !ok {
		return &errEnvelope{status: http.StatusNotFound, code: sandbox.CodeInvalidRequestFormat, msg: "Tool not found: " + name}
	}
	return c.JSON(http.StatusOK, t)
}

func (h *sandboxRoutes) warmup(c *echo.Context) error {
	b, err := decode(c)
	if err != nil {
		return err
	}
	var names []string
	if v, ok := b["backends"]; ok && v != nil {
		list, ok := v.([]any)
		if !ok {
			return badRequest("field backends must be an array of names or null")
		}
		names = []string{}
		for i, e := range list {
			n, ok := e.(string)
			if !ok {
				return badRequest("backends[%d] must be a string", i)
			}
			names = append(names, n)
		}
	}
	return c.JSON(http.StatusOK, h.svc.WarmUp(c.Request().Context(), names))
}

func (h *sandboxRoutes) warmupStatus(c *echo.Context) error {
	return c.JSON(http.StatusOK, h.svc.WarmupStatus())
}

func (h *sandboxRoutes) ready(c *echo.Context) error {
	return c.JSON(http.StatusOK, h.svc.Ready())
}

// serverShutdown destroys the caller's sessions (cleanup_sessions, default
// true); under `flock sandbox` it then stops the service gracefully, and
// under `flock serve` it leaves the server running. It never exits the
// process abruptly.
func (h *sandboxRoutes) serverShutdown(c *echo.Context) error {
	b, err := decode(c)
	if err != nil {
		return err
	}
	cleanup, err := b.boolean("cleanup_sessions", true)
	if err != nil {
		return err
	}
	cleaned := 0
	if cleanup {
		cleaned = h.svc.DisconnectCaller(c.Request().Context(), h.s.callerID())
	}
	msg := "sessions cleaned; the server keeps running"
	if h.shutdown != nil {
		msg = "server shutting down"
	}
	err = c.JSON(http.StatusOK, map[string]any{"status": "success", "message": msg, "sessions_cleaned": cleaned})
	if h.shutdown != nil {
		go h.shutdown()
	}
	return err
}

// isSandboxPath reports whether the request is answered with envelopes.
func isSandboxPath(r *http.Request) bool {
	p := r.URL.Path
	return p == sandboxPrefix || strings.HasPrefix(p, sandboxPrefix+"/") || p == "/ready"
}

// sandboxError answers err beneath /api/v1 as an envelope (with AgentFlow's
// "status": "error" for clients reading the schema route's 404).
func (s *Server) sandboxError(c *echo.Context, err error, status int, msg string) {
	code := sandbox.CodeInvalidRequestFormat
	var ee *errEnvelope
	if errors.As(err, &ee) {
		status, code, msg = ee.status, ee.code, ee.msg
	} else if status == http.StatusUnauthorized || status == http.StatusForbidden {
		code = sandbox.CodeBusinessFailure
	} else if status >= 500 {
		code = sandbox.CodeUnexpectedError
	}
	_ = c.JSON(status, map[string]any{
		"code": code, "message": msg, "data": nil, "status": "error",
		"meta": sandbox.Meta{Tool: "", ResourceType: "", TraceID: requestID(c)},
	})
}
