package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flockrun/flock/isolation"
)

// Options configure a Service beyond its config file.
type Options struct {
	// DataDir is the service's data dir: backends' dirs under backends/,
	// session workspaces under workspaces/. Overrides server.data_dir; one
	// of the two is required.
	DataDir string
	// Logger receives lifecycle messages; nil discards them.
	Logger *slog.Logger
	// Isolation is the operator's policy for the programs of sessions
	// (bash, code); the zero value is isolation.PolicyAuto: bwrap wherever
	// it can run. A backend's own "isolation" key ("bwrap", or "none" to
	// opt out) overrides it (Env.Isolation).
	Isolation isolation.Policy
	// Hidden lists paths those programs must not see besides the service's
	// data directory (flock's data directory, when flock serve hosts the
	// service).
	Hidden []string
}

// Service is the sandbox service: the enabled backends, their tools and the
// sessions of every caller. It is safe for concurrent use; Close releases it.
type Service struct {
	cfg     *Config
	dataDir string
	log     *slog.Logger

	// Immutable after New.
	backends  map[string]*backendEntry
	names     []string // enabled backend names, sorted
	tools     map[string]*toolEntry
	toolNames []string            // sorted full names
	simple    map[string][]string // simple name → full names, sorted
	warnings  []string            // the config's keys no one reads

	mu       sync.Mutex
	sessions map[sessionKey]*entry      // guarded by mu
	counters map[sessionKey]int         // guarded by mu; per (caller, worker, type), never reset
	workers  map[[2]string]*workerSlots // guarded by mu; (caller, worker) with calls running or waiting
	closed   bool                       // guarded by mu

	calls   sync.WaitGroup // tool runs still going (a timed-out Run may outlive its call)
	bg      sync.WaitGroup // the sweeper and the start-up warm-up
	stop    chan struct{}  // closed by Close
	stopCtx context.Context
	cancel  context.CancelFunc
}

// backendEntry is an enabled backend.
type backendEntry struct {
	name string
	b    Backend
	cfg  map[string]any // its section
	api  bool           // configured under apis
	// provisioned: Provision succeeded (or there is none); only these
	// are shut down.
	provisioned bool

	warmMu sync.Mutex // serialises WarmUp of this backend
	stMu   sync.Mutex
	state  string // guarded by stMu: "pending", "warming", "ready" or "error"
	err    string // guarded by stMu: the last warm-up error
}

// New builds the service of cfg: it provisions each enabled backend (its
// errors name their JSON path), collects the tools, starts the sweeper at
// server.cleanup_interval and, when warmup.enabled, warms the listed
// backends in the background (progress in WarmupStatus). A start-up error
// shuts down what was provisioned.
func New(ctx context.Context, cfg *Config, opts Options) (_ *Service, err error) {
	dataDir := opts.DataDir
	if dataDir == "" {
		dataDir = cfg.Server.DataDir
	}
	if dataDir == "" {
		return nil, cfgErr("server.data_dir", "no data dir: set server.data_dir or pass one")
	}
	if dataDir, err = filepath.Abs(dataDir); err != nil {
		return nil, fmt.Errorf("sandbox: data dir: %w", err)
	}
	if cfg.Server.MaxBatchParallel <= 0 {
		cfg.Server.MaxBatchParallel = 8
	}
	if cfg.Server.MaxWorkerParallel <= 0 {
		cfg.Server.MaxWorkerParallel = 16
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := opts.Isolation.Check(); err != nil {
		return nil, err
	}
	s := &Service{
		cfg: cfg, dataDir: dataDir, log: log,
		backends: map[string]*backendEntry{}, tools: map[string]*toolEntry{}, simple: map[string][]string{},
		sessions: map[sessionKey]*entry{}, counters: map[sessionKey]int{}, workers: map[[2]string]*workerSlots{},
		stop: make(chan struct{}), warnings: slices.Clone(cfg.Warnings),
	}
	s.stopCtx, s.cancel = context.WithCancel(context.Background())
	if err := os.MkdirAll(filepath.Join(dataDir, "workspaces"), 0o700); err != nil {
		return nil, fmt.Errorf("sandbox: data dir: %w", err)
	}
	defer func() {
		if err != nil {
			s.shutdownBackends(context.WithoutCancel(ctx))
		}
	}()
	for _, name := range cfg.enabled() {
		info, ok := LookupBackend(name)
		if !ok {
			return nil, cfgErr(cfg.sectionPath(name), "unknown backend")
		}
		sec, api := cfg.Resources[name]
		api = !api
		if api {
			sec = cfg.APIs[name]
		}
		be := &backendEntry{name: name, b: info.New(), cfg: sec, api: api, state: "pending"}
		if _, ok := be.b.(WarmUpper); !ok {
			be.state = "ready"
		}
		s.backends[name] = be
		s.names = append(s.names, name)
		if p, ok := be.b.(Provisioner); ok {
			dir := filepath.Join(dataDir, "backends", name)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, fmt.Errorf("sandbox: backend %s: %w", name, err)
			}
			env := Env{Config: cloneMap(sec), DataDir: dir, Logger: log.With("backend", name),
				section: cfg.sectionPath(name), warn: func(w ...string) { s.warnings = append(s.warnings, w...) },
				Hidden: append([]string{dataDir}, opts.Hidden...), Policy: opts.Isolation}
			if err := p.Provision(ctx, env); err != nil {
				return nil, s.provisionError(name, err)
			}
		}
		be.provisioned = true
		for _, t := range be.b.Tools() {
			te, err := newToolEntry(be, t)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrConfig, err)
			}
			if _, dup := s.tools[t.Name]; dup {
				return nil, fmt.Errorf("%w: tool %s registered twice", ErrConfig, t.Name)
			}
			s.tools[t.Name] = te
			s.toolNames = append(s.toolNames, t.Name)
			s.simple[te.simple] = append(s.simple[te.simple], t.Name)
		}
	}
	slices.Sort(s.toolNames)
	for _, v := range s.simple {
		slices.Sort(v)
	}
	s.bg.Add(1)
	go s.sweep(cfg.Server.CleanupInterval)
	if cfg.Warmup.Enabled {
		names := cfg.Warmup.Resources
		if len(names) == 0 {
			names = s.names
		}
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			s.WarmUp(s.stopCtx, names)
		}()
	}
	return s, nil
}

// provisionError names the JSON path of a backend's Provision error.
func (s *Service) provisionError(name string, err error) error {
	section := s.cfg.sectionPath(name)
	var ce *ConfigError
	if errors.As(err, &ce) {
		path := ce.Path
		if path != section && !strings.HasPrefix(path, section+".") && !strings.HasPrefix(path, section+"[") {
			path = section + "." + strings.TrimPrefix(path, ".")
			if ce.Path == "" {
				path = section
			}
		}
		return fmt.Errorf("%w: %w", ErrConfig, &ConfigError{Path: path, Reason: ce.Reason})
	}
	if strings.HasPrefix(err.Error(), section) {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrConfig, section, err)
}

// Warnings name the keys of the config that flock does not read, the
// file's (Config.Warnings) then each backend's section's, in backend
// order, with the closest known key when one is near: `unknown key
// "resources.bash.config.timout" (did you mean
// "resources.bash.config.timeout"?)`. Nil when every key is read.
func (s *Service) Warnings() []string { return slices.Clone(s.warnings) }

// ServerSettings returns the config's server section.
func (s *Service) ServerSettings() ServerConfig { return s.cfg.Server }

// Backends returns the enabled backends' names, sorted.
func (s *Service) Backends() []string { return slices.Clone(s.names) }

// WarmUpResult is POST /api/v1/warmup's answer (not an envelope).
type WarmUpResult struct {
	Status  string            `json:"status"` // "success" or "partial_error"
	Results map[string]bool   `json:"results"`
	Summary WarmUpSummary     `json:"summary"`
	Errors  map[string]string `json:"errors,omitempty"`
}

// WarmUpSummary counts backends by warm-up state.
type WarmUpSummary struct {
	Total    int `json:"total"`
	WarmedUp int `json:"warmed_up"`
	Pending  int `json:"pending"`
}

// WarmUp warms the named backends (nil: every enabled one) one after the
// other and reports each; an unknown name is an error for that name.
// Backends without WarmUp are warm from the start.
func (s *Service) WarmUp(ctx context.Context, names []string) WarmUpResult {
	if names == nil {
		names = s.names
	}
	r := WarmUpResult{Status: "success", Results: map[string]bool{}}
	for _, n := range names {
		be, ok := s.backends[n]
		if !ok {
			r.Results[n] = false
			if r.Errors == nil {
				r.Errors = map[string]string{}
			}
			r.Errors[n] = "unknown or disabled backend"
			continue
		}
		if err := s.warm(ctx, be); err != nil {
			r.Results[n] = false
			if r.Errors == nil {
				r.Errors = map[string]string{}
			}
			r.Errors[n] = err.Error()
			continue
		}
		r.Results[n] = true
	}
	if r.Errors != nil {
		r.Status = "partial_error"
	}
	r.Summary = s.warmSummary()
	return r
}

// warm runs be's WarmUp unless it is warm already. It never holds a
// session lock.
func (s *Service) warm(ctx context.Context, be *backendEntry) error {
	w, ok := be.b.(WarmUpper)
	if !ok {
		return nil
	}
	be.warmMu.Lock()
	defer be.warmMu.Unlock()
	be.stMu.Lock()
	if be.state == "ready" {
		be.stMu.Unlock()
		return nil
	}
	be.state = "warming"
	be.stMu.Unlock()
	s.log.Info("sandbox: warming up", "backend", be.name)
	err := w.WarmUp(ctx)
	be.stMu.Lock()
	defer be.stMu.Unlock()
	if err != nil {
		be.state, be.err = "error", err.Error()
		s.log.Warn("sandbox: warm-up failed", "backend", be.name, "err", err)
		return err
	}
	be.state, be.err = "ready", ""
	return nil
}

// BackendStatus is one backend in GET /api/v1/warmup/status.
type BackendStatus struct {
	Loaded   bool   `json:"loaded"`
	WarmedUp bool   `json:"warmed_up"`
	State    string `json:"state"` // pending, warming, ready or error
	Error    string `json:"error,omitempty"`
}

// WarmupStatus is GET /api/v1/warmup/status's answer.
type WarmupStatus struct {
	Backends map[string]BackendStatus `json:"backends"`
	Summary  WarmUpSummary            `json:"summary"`
}

// WarmupStatus reports each enabled backend's warm-up progress.
func (s *Service) WarmupStatus() WarmupStatus {
	st := WarmupStatus{Backends: map[string]BackendStatus{}}
	for _, n := range s.names {
		be := s.backends[n]
		be.stMu.Lock()
		st.Backends[n] = BackendStatus{Loaded: true, WarmedUp: be.state == "ready", State: be.state, Error: be.err}
		be.stMu.Unlock()
	}
	st.Summary = s.warmSummary()
	return st
}

func (s *Service) warmSummary() WarmUpSummary {
	sum := WarmUpSummary{Total: len(s.names)}
	for _, n := range s.names {
		be := s.backends[n]
		be.stMu.Lock()
		if be.state == "ready" {
			sum.WarmedUp++
		} else {
			sum.Pending++
		}
		be.stMu.Unlock()
	}
	return sum
}

// Readiness is GET /ready's answer.
type Readiness struct {
	Status        string `json:"status"`
	ToolsCount    int    `json:"tools_count"`
	ActiveWorkers int    `json:"active_workers"`
	TotalSessions int    `json:"total_sessions"`
}

// Ready counts tools, workers with a session and sessions.
func (s *Service) Ready() Readiness {
	s.mu.Lock()
	defer s.mu.Unlock()
	workers := map[[2]string]bool{}
	for k := range s.sessions {
		workers[[2]string{k.caller, k.worker}] = true
	}
	return Readiness{Status: "ready", ToolsCount: len(s.tools), ActiveWorkers: len(workers), TotalSessions: len(s.sessions)}
}

// Close stops the sweeper and the warm-up, cancels the calls still running,
// destroys every session (running each backend's Cleanup) once its call is
// over, waits for tool runs still going, and shuts the backends down. It is
// idempotent. ctx bounds the wait: when it ends first, Close shuts the
// backends down anyway and returns an error saying what was left running
// (a tool that ignores its context cannot be stopped from here).
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	all := make([]*entry, 0, len(s.sessions))
	for k, e := range s.sessions {
		all = append(all, e)
		delete(s.sessions, k)
	}
	s.mu.Unlock()
	close(s.stop)
	s.cancel()
	s.bg.Wait()
	var left sync.WaitGroup
	for _, e := range all {
		left.Go(func() { s.destroyEntry(ctx, e) })
	}
	left.Go(s.calls.Wait)
	finished := make(chan struct{})
	go func() { // owned: Close waits for it below or gives up with ctx
		left.Wait()
		close(finished)
	}()
	var err error
	select {
	case <-finished:
	case <-ctx.Done():
		err = fmt.Errorf("sandbox: close: tool calls still running after %w", ctx.Err())
		s.log.Warn("sandbox: closing with tool calls still running", "err", ctx.Err())
	}
	s.shutdownBackends(ctx)
	return err
}

func (s *Service) shutdownBackends(ctx context.Context) {
	for _, n := range s.names {
		if !s.backends[n].provisioned {
			continue
		}
		if sd, ok := s.backends[n].b.(Shutdowner); ok {
			if err := sd.Shutdown(ctx); err != nil {
				s.log.Warn("sandbox: backend shutdown", "backend", n, "err", err)
			}
		}
	}
}

// sweep destroys expired sessions every interval until Close.
func (s *Service) sweep(interval time.Duration) {
	defer s.bg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.sweepOnce(now)
		}
	}
}

// sweepOnce destroys the sessions expired at now and returns how many.
func (s *Service) sweepOnce(now time.Time) int {
	s.mu.Lock()
	var expired []*entry
	for k, e := range s.sessions {
		if e.status == statusActive && e.busy == 0 && now.After(e.expiresAt) {
			expired = append(expired, e)
			delete(s.sessions, k)
		}
	}
	s.mu.Unlock()
	for _, e := range expired {
		s.log.Info("sandbox: session expired", "session", e.s.ID)
		s.destroyEntry(s.stopCtx, e)
	}
	return len(expired)
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
