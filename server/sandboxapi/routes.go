package sandboxapi

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/flockrun/flock/sandbox"
)

// reply writes env with the status its code calls for, or status when not 0.
func reply(c *echo.Context, env sandbox.Envelope, status int) error {
	if status == 0 {
		status = sandbox.HTTPStatus(env.Code)
	}
	return c.JSON(status, env)
}

func (h *API) execute(c *echo.Context, b body, cl sandbox.Caller) error {
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

func (h *API) batch(c *echo.Context, b body, cl sandbox.Caller) error {
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

func (h *API) create(c *echo.Context, b body, cl sandbox.Caller) error {
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
func (h *API) fork(c *echo.Context, b body, cl sandbox.Caller) error {
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

func (h *API) destroy(c *echo.Context, b body, cl sandbox.Caller) error {
	rt, err := b.str("resource_type", true)
	if err != nil {
		return err
	}
	env := h.svc.DestroySession(c.Request().Context(), cl, rt)
	return reply(c, env, notFoundStatus(env))
}

func (h *API) list(c *echo.Context, b body, cl sandbox.Caller) error {
	return reply(c, h.svc.ListSessions(cl), 0)
}

func (h *API) refresh(c *echo.Context, b body, cl sandbox.Caller) error {
	rt, err := b.str("resource_type", false)
	if err != nil {
		return err
	}
	env := h.svc.RefreshSession(cl, rt)
	return reply(c, env, notFoundStatus(env))
}

func (h *API) heartbeat(c *echo.Context, b body, cl sandbox.Caller) error {
	return reply(c, h.svc.Heartbeat(cl), 0)
}

func (h *API) status(c *echo.Context, b body, cl sandbox.Caller) error {
	return reply(c, h.svc.Status(cl), 0)
}

func (h *API) disconnect(c *echo.Context, b body, cl sandbox.Caller) error {
	return reply(c, h.svc.Disconnect(c.Request().Context(), cl), 0)
}

func (h *API) initResource(c *echo.Context, b body, cl sandbox.Caller) error {
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

func (h *API) initBatch(c *echo.Context, b body, cl sandbox.Caller) error {
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

func (h *API) tools(c *echo.Context) error {
	include := false
	switch strings.ToLower(c.QueryParam("include_hidden")) {
	case "", "false", "0", "no":
	case "true", "1", "yes":
		include = true
	default:
		return badRequest("include_hidden must be true or false")
	}
	tools := h.svc.Tools(include)
	return c.JSON(http.StatusOK, toolList{Tools: tools, Count: len(tools)})
}

func (h *API) schema(c *echo.Context) error {
	name := c.Param("name")
	t, ok := h.svc.Tool(name)
	if !ok {
		return &errEnvelope{status: http.StatusNotFound, code: sandbox.CodeInvalidRequestFormat, msg: "Tool not found: " + name}
	}
	return c.JSON(http.StatusOK, t)
}

func (h *API) warmup(c *echo.Context) error {
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

func (h *API) warmupStatus(c *echo.Context) error {
	return c.JSON(http.StatusOK, h.svc.WarmupStatus())
}

func (h *API) ready(c *echo.Context) error {
	return c.JSON(http.StatusOK, h.svc.Ready())
}

// serverShutdown destroys the caller's sessions (cleanup_sessions, default
// true); under `flock sandbox` it then stops the service gracefully, and
// under `flock serve` it leaves the server running. It never exits the
// process abruptly.
func (h *API) serverShutdown(c *echo.Context) error {
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
		cleaned = h.svc.DisconnectCaller(c.Request().Context(), h.caller)
	}
	msg := "sessions cleaned; the server keeps running"
	if h.opts.Shutdown != nil {
		msg = "server shutting down"
	}
	err = c.JSON(http.StatusOK, shutdownAnswer{Status: "success", Message: msg, SessionsCleaned: cleaned})
	if h.opts.Shutdown != nil {
		go h.opts.Shutdown()
	}
	return err
}
