package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/httpserver"
	"github.com/flockrun/flock/internal/selfaddr"
	"github.com/flockrun/flock/state"
)

// DefaultHeartbeat is the interval of the comment lines an event stream
// sends while the run is quiet, so proxies and clients keep the connection.
const DefaultHeartbeat = 15 * time.Second

// Server serves the HTTP API of one engine and its store (New), or the
// routes that other packages mount on it alone (NewBare, MountGroup: the
// sandbox service of `flock sandbox`, package server/sandboxapi). Create
// it, mount what it serves, then call Start and, at the end, Shutdown.
// Handler serves the same routes without a listener (for tests).
type Server struct {
	cfg       configs.Server
	guard     *guard
	log       *slog.Logger
	e         *echo.Echo
	heartbeat time.Duration
	// public are the route paths served without the bearer token: /health
	// and the viewer's (MountUI). Written before Start only.
	public map[string]bool
	// groups are the groups mounted by MountGroup, in order: they may
	// answer their own errors (ErrorWriter).
	groups []Group

	// The API of New: the engine in its roles, the store runs are read
	// from, and what was mounted beside it (documented in /openapi.json).
	// A bare server (NewBare) has none of them and serves none of its
	// routes.
	eng   Engine
	roles roles
	store state.Reader
	// mounted are the paths given to Mount.
	mounted []string
	// ui are the viewer's route paths (MountUI).
	ui []string
	// gateway is true once MountGateway has mounted the model gateway.
	gateway bool
	// counts caches GET /stats/runs.
	counts countCache
	// op is set by MountOperator (before Start): the operator routes.
	op *operator

	// quit is closed by Shutdown; event streams watch it and return, so
	// that a graceful shutdown does not wait for them.
	quit     chan struct{}
	quitOnce sync.Once
	// streams counts event streams being served.
	streams atomic.Int64

	mu     sync.Mutex
	srv    *http.Server // guarded by mu; nil before Start
	served chan error   // guarded by mu; receives Serve's result once
}

// New returns a server of flock's API for eng (a *workflows.Executor) and
// the store it reads runs from, configured by cfg. Zero fields of cfg get
// their defaults (configs.Server.ApplyDefaults). It fails when cfg is
// invalid, notably when cfg.Addr is not a loopback address and no
// cfg.AuthToken is set. New does not listen; Start does.
func New(cfg configs.Server, eng Engine, store state.Reader, logger *slog.Logger) (*Server, error) {
	if eng == nil {
		return nil, errors.New("server: engine is nil")
	}
	if store == nil {
		return nil, errors.New("server: store is nil")
	}
	s, err := NewBare(cfg, logger)
	if err != nil {
		return nil, err
	}
	s.eng, s.roles, s.store = eng, rolesOf(eng), store
	s.routes()
	return s, nil
}

// NewBare returns a server without routes, configured as New's: the same
// guard, bearer token, body limit, logging and error answers, for routes
// that other packages mount (MountGroup). It serves GET /openapi.json,
// the document of every route mounted on it; GET /health, when a group
// serves it, needs no token here either.
func NewBare(cfg configs.Server, logger *slog.Logger) (*Server, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if cfg.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("server: %w", &configs.FieldError{Field: "max_body_bytes", Reason: "must not be negative"})
	}
	g, err := newGuard(cfg)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s := &Server{
		guard:     g,
		cfg:       cfg,
		log:       logger,
		heartbeat: DefaultHeartbeat,
		quit:      make(chan struct{}),
		public:    map[string]bool{"/health": true},
	}
	s.e = s.newEcho()
	s.e.GET("/openapi.json", s.openAPIHandler)
	return s, nil
}

// Mount serves h at GET path, behind the same middleware (and bearer
// token) as the API. Call it before Start; the command line mounts the
// Prometheus metrics at /metrics.
func (s *Server) Mount(path string, h http.Handler) {
	s.e.GET(path, echo.WrapHandler(h))
	s.mounted = append(s.mounted, path)
}

// mountedRoutes documents the paths given to Mount.
func (s *Server) mountedRoutes() []Route {
	var out []Route
	for _, p := range s.mounted {
		out = append(out, Route{Method: http.MethodGet, Path: p, ID: operationID("mounted", p), Status: http.StatusOK,
			Summary: "A handler mounted beside the API (flock serve: the Prometheus metrics at /metrics, in the Prometheus text format).",
			Content: []Content{{"text/plain", ""}}})
	}
	return out
}

// Handler returns the server's routes with all middleware, for use with
// httptest or an outer mux.
func (s *Server) Handler() http.Handler { return httpserver.Handler(s.e, s.cfg.BodyTimeout()) }

// Start listens on cfg.Addr and serves in the background. It returns the
// bound address (useful with port 0). Start may be called once.
func (s *Server) Start() (net.Addr, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return nil, errors.New("server: already started")
	}
	select {
	case <-s.quit:
		return nil, errors.New("server: already shut down")
	default:
	}
	// The address is flock's own while it listens: the sandbox's network
	// guard refuses it whatever a tool's allow list says.
	ln, err := selfaddr.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("server: listen on %s: %w", s.cfg.Addr, err)
	}
	s.srv = httpserver.New(s.e, httpserver.Options{
		HeaderTimeout: s.cfg.HeaderTimeout(),
		BodyTimeout:   s.cfg.BodyTimeout(),
		ErrorLog:      slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	})
	s.served = make(chan error, 1)
	srv, served := s.srv, s.served
	go func() {
		err := srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		served <- err
	}()
	s.log.Info("http server listening", "addr", ln.Addr().String(), "auth", s.cfg.AuthToken != "")
	return ln.Addr(), nil
}

// Shutdown stops the server gracefully: it ends open event streams, stops
// accepting connections and waits for in-flight requests until ctx ends,
// then closes what is left. It returns the serve loop's error, if any.
// Calling it before Start or twice is harmless.
func (s *Server) Shutdown(ctx context.Context) error {
	s.quitOnce.Do(func() { close(s.quit) })
	s.mu.Lock()
	srv, served := s.srv, s.served
	s.served = nil
	s.mu.Unlock()
	if srv == nil || served == nil {
		return nil
	}
	var errs []error
	if err := srv.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("server: shutdown: %w", err))
		if cerr := srv.Close(); cerr != nil {
			errs = append(errs, fmt.Errorf("server: close: %w", cerr))
		}
	}
	if err := <-served; err != nil {
		errs = append(errs, fmt.Errorf("server: serve: %w", err))
	}
	return errors.Join(errs...)
}

// newEcho builds the router with its middleware and routes. echo logs
// through the server's logger (its own default writes JSON to stdout).
func (s *Server) newEcho() *echo.Echo {
	e := echo.NewWithConfig(echo.Config{
		Logger:           s.log,
		HTTPErrorHandler: s.handleError,
	})

	// Every request, routed or not, gets an id, a log line and panic
	// recovery; then the guard refuses cross-site and rebound requests
	// before authentication and routing, so that neither a 401 nor a 404
	// tells a foreign page anything.
	e.Pre(middleware.RemoveTrailingSlash())
	e.Pre(middleware.RequestID())
	e.Pre(middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogMethod:     true,
		LogURI:        true,
		LogStatus:     true,
		LogLatency:    true,
		LogRequestID:  true,
		LogRemoteIP:   true,
		HandleError:   true,
		LogValuesFunc: s.logRequest,
	}))
	// Recover turns a panic into a *middleware.PanicStackError, which
	// handleError logs with its stack and answers with a bare 500.
	e.Pre(middleware.Recover())
	e.Pre(s.guard.middleware)
	if s.cfg.AuthToken != "" {
		e.Use(middleware.KeyAuthWithConfig(middleware.KeyAuthConfig{
			Skipper:   func(c *echo.Context) bool { return s.public[c.Path()] || isGatewayPath(c) },
			KeyLookup: "header:" + echo.HeaderAuthorization + ":Bearer ",
			// Up to 20 Authorization headers are tried, as before echo v5
			// (whose default is one).
			AllowedCheckLimit: 20,
			Validator:         s.validToken,
			ErrorHandler:      func(*echo.Context, error) error { return errUnauthorized },
		}))
	}
	e.Use(middleware.BodyLimit(s.cfg.MaxBodyBytes))

	return e
}

// routes registers the API's routes (New).
func (s *Server) routes() {
	e := s.e
	e.GET("/health", s.health)
	e.POST("/start_workflow", s.startWorkflow)
	e.GET("/runs", s.listRuns)
	e.GET("/stats/runs", s.runCounts)
	e.GET("/runs/:id", s.getRun)
	e.GET("/runs/:id/entries", s.listEntries)
	e.GET("/runs/:id/ops", s.listOps)
	e.GET("/runs/:id/usage", s.runUsage)
	e.GET("/runs/:id/events", s.streamEvents)
	e.POST("/runs/:id/cancel", s.cancelRun)
	e.POST("/runs/:id/pause", s.pauseRun)
	e.POST("/runs/:id/resume", s.resumeRun)
	e.POST("/runs/:id/fork", s.forkRun)
	e.GET("/runs/:id/human", s.listQuestions)
	e.POST("/runs/:id/human/:op_id/answer", s.answerQuestion)
	e.POST("/runs/:id/intervene", s.intervene)
	e.GET("/workflows", s.listWorkflows)
}

// errUnauthorized answers requests without the right bearer token.
var errUnauthorized = echo.NewHTTPError(http.StatusUnauthorized,
	"missing or invalid bearer token: send the header \"Authorization: Bearer <token>\"")

// validToken compares key with the configured token in constant time. Both
// are hashed first so that the comparison does not leak the length.
// The operator token (MountOperator) passes too.
func (s *Server) validToken(_ *echo.Context, key string, _ middleware.ExtractorSource) (bool, error) {
	if s.op != nil && sameToken(key, s.op.token) {
		return true, nil
	}
	return sameToken(key, s.cfg.AuthToken), nil
}

// logRequest logs one request at debug level.
func (s *Server) logRequest(c *echo.Context, v middleware.RequestLoggerValues) error {
	attrs := []slog.Attr{
		slog.String("method", v.Method),
		slog.String("uri", v.URI),
		slog.Int("status", v.Status),
		slog.Duration("latency", v.Latency),
		slog.String("request_id", v.RequestID),
		slog.String("remote_ip", v.RemoteIP),
	}
	if v.Error != nil {
		attrs = append(attrs, slog.String("err", errorText(v.Error)))
	}
	s.log.LogAttrs(c.Request().Context(), slog.LevelDebug, "http request", attrs...)
	return nil
}

// logPanic logs a recovered handler panic with its stack; the client only
// gets a 500 with the request id.
func (s *Server) logPanic(c *echo.Context, pe *middleware.PanicStackError) {
	s.log.Error("http handler panic", "method", c.Request().Method, "uri", c.Request().RequestURI,
		"request_id", requestID(c), "err", pe.Err, "stack", string(pe.Stack))
}

// health answers GET /health: {"status":"ok"}, or, while some run cannot
// commit (a full disk), {"status":"degraded","reason":...,"stalled_runs":N}
// still with 200: the server answers and runs go on once space is back.
func (s *Server) health(c *echo.Context) error {
	h := s.roles.monitor.Health()
	return c.JSON(healthCode(h), viewHealth(h))
}
