package sandboxapi

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/sandbox"
	"github.com/flockrun/flock/server"
)

// Prefix is where the sandbox routes live; every answer beneath it,
// errors included, is JSON, and errors are AgentFlow envelopes.
const Prefix = "/api/v1"

// API serves a sandbox.Service with AgentFlow's wire: a server.Group.
// Create it with New and mount it with server.Server.MountGroup (flock
// serve --sandbox-config), or serve it alone with NewServer (flock
// sandbox).
type API struct {
	svc  *sandbox.Service
	opts Options
	// caller names the server's token (server.Mount.Caller); set by
	// Register, before the server serves.
	caller string
}

// Options configure an API.
type Options struct {
	// Shutdown, if not nil, is called after POST /api/v1/server/shutdown
	// has answered: flock sandbox stops gracefully. Without it the route
	// destroys the caller's sessions and the server keeps running (flock
	// serve).
	Shutdown func()
	// Health also serves AgentFlow's GET /health
	// ({"status":"healthy","timestamp"}), for a server of the sandbox
	// alone; flock serve answers its own.
	Health bool
}

// New returns the API of svc.
func New(svc *sandbox.Service, o Options) *API {
	return &API{svc: svc, opts: o}
}

// NewServer returns a server of the sandbox service alone (`flock
// sandbox`): GET /health, GET /ready and the /api/v1 routes, behind the same
// guard and bearer token as flock's API. shutdown, if not nil, is called
// after POST /api/v1/server/shutdown has answered.
func NewServer(cfg configs.Server, svc *sandbox.Service, shutdown func(), logger *slog.Logger) (*server.Server, error) {
	if svc == nil {
		return nil, errors.New("server: sandbox service is nil")
	}
	// The sandbox config's server section may set the listener's bounds.
	sc := svc.ServerSettings()
	if sc.MaxBodyBytes > 0 {
		cfg.MaxBodyBytes = sc.MaxBodyBytes
	}
	if sc.HeaderTimeout > 0 {
		cfg.HeaderTimeoutS = sc.HeaderTimeout.Seconds()
	}
	if sc.BodyTimeout > 0 {
		cfg.BodyTimeoutS = sc.BodyTimeout.Seconds()
	}
	s, err := server.NewBare(cfg, logger)
	if err != nil {
		return nil, err
	}
	s.MountGroup(New(svc, Options{Shutdown: shutdown, Health: true}))
	return s, nil
}

// Register adds the routes: GET /ready and those beneath Prefix, and GET
// /health with Options.Health. Anything else beneath the prefix is an
// enveloped 404 or 405 (WriteError).
func (h *API) Register(m server.Mount) {
	h.caller = m.Caller
	r := m.Routes
	if h.opts.Health {
		r.GET("/health", h.health)
	}
	r.GET("/ready", h.ready)
	g := r.Group(Prefix)
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
}

// withCaller adapts a route that needs the decoded body and the caller it
// names: the prologue every worker-scoped route shares.
func (h *API) withCaller(fn func(c *echo.Context, b body, cl sandbox.Caller) error) echo.HandlerFunc {
	return func(c *echo.Context) error {
		b, err := decode(c)
		if err != nil {
			return err
		}
		cl, err := h.callerOf(b)
		if err != nil {
			return err
		}
		return fn(c, b, cl)
	}
}

// callerOf builds the request's identity: the token's digest when a token
// is required (one token is one caller), the body's worker_id and
// trace_id.
func (h *API) callerOf(b body) (sandbox.Caller, error) {
	worker, err := b.str("worker_id", true)
	if err != nil {
		return sandbox.Caller{}, err
	}
	trace, err := b.str("trace_id", false)
	if err != nil {
		return sandbox.Caller{}, err
	}
	return sandbox.Caller{Caller: h.caller, Worker: worker, TraceID: trace}, nil
}

// health answers GET /health of the sandbox alone as AgentFlow does.
func (h *API) health(c *echo.Context) error {
	return c.JSON(http.StatusOK, healthAnswer{Status: "healthy", Timestamp: time.Now().UTC().Format("2006-01-02T15:04:05.000000")})
}

// owns reports whether the request is answered with envelopes.
func owns(r *http.Request) bool {
	p := r.URL.Path
	return p == Prefix || strings.HasPrefix(p, Prefix+"/") || p == "/ready"
}

// WriteError answers a failed request beneath Prefix (and GET /ready) as
// an envelope and nothing more (server.ErrorWriter): the code, the
// message, data null, and the request id as meta.trace_id.
func (h *API) WriteError(c *echo.Context, status int, msg string, err error) bool {
	if !owns(c.Request()) {
		return false
	}
	code := sandbox.CodeInvalidRequestFormat
	var ee *errEnvelope
	if errors.As(err, &ee) {
		status, code, msg = ee.status, ee.code, ee.msg
	} else if status == http.StatusUnauthorized || status == http.StatusForbidden {
		code = sandbox.CodeBusinessFailure
	} else if status >= 500 {
		code = sandbox.CodeUnexpectedError
	}
	_ = c.JSON(status, sandbox.Envelope{Code: code, Message: msg, Meta: sandbox.Meta{TraceID: server.RequestID(c)}})
	return true
}

// Interface guards.
var (
	_ server.Group       = (*API)(nil)
	_ server.ErrorWriter = (*API)(nil)
	_ server.Documented  = (*API)(nil)
)
