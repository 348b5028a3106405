package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/gateway"
	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/handlers/files"
	"github.com/flockrun/flock/handlers/generate"
	"github.com/flockrun/flock/internal/httpserver"
	"github.com/flockrun/flock/internal/keyring"
	"github.com/flockrun/flock/isolation"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/sandbox"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/bolt"
	"github.com/flockrun/flock/telemetry"
	"github.com/flockrun/flock/workflows"
)

// App is a wired flock instance.
type App struct {
	Config configs.Server
	// Store is the run store: the bbolt file of the data directory today,
	// any state.Store (a distributed one) tomorrow. Code that needs the
	// bbolt file itself (db check, recover) opens it by path.
	Store    state.Store
	Executor *workflows.Executor
	Registry *phases.Registry
	Log      *slog.Logger
	// Metrics are the Prometheus metrics (served at GET /metrics).
	Metrics *telemetry.Metrics
	// Tracer exports the journal as OpenTelemetry spans; nil unless the
	// environment names an OTLP endpoint (telemetry.TracingEnabled).
	Tracer *telemetry.Tracer
	// Gateway is the model gateway of external agents; the server serves
	// its routes (server.MountGateway) and announces its URL.
	Gateway *gateway.Gateway
	// Keys are the API keys given literally on command lines, for the runs
	// whose settings name them (package keyring): the command's own, or
	// the ones handed over to this server with a run.
	Keys *keyring.Ring
}

// options are what Options change in Open.
type options struct {
	deps     handlers.Deps
	noResume bool
}

// Option changes how Open wires an App.
type Option func(*options)

// WithSandbox hands the sandbox service the server hosts to the handlers:
// the sandbox operation runs on it in-process. The caller owns svc and
// closes it after the App.
func WithSandbox(svc *sandbox.Service) Option {
	return func(o *options) { o.deps.Sandbox = Hosted(svc) }
}

// WithoutResume opens the App without resuming the data directory's
// unfinished runs: the caller drives the one it wants
// (Executor.Launch, ResumeTree). Commands that run one workflow in their
// own process use it.
func WithoutResume() Option {
	return func(o *options) { o.noResume = true }
}

// WithKeys puts keys given literally on the command line (by their
// keyring names) into the App's ring before any run starts or resumes.
func WithKeys(keys map[string]string) Option {
	return func(o *options) {
		for n, k := range keys {
			o.deps.Keys.Set(n, k)
		}
	}
}

// Open builds an App from cfg and resumes the unfinished runs in its data
// directory. The caller must Close it.
func Open(ctx context.Context, cfg configs.Server, log *slog.Logger, opts ...Option) (*App, error) {
	return openApp(ctx, cfg, log, nil, opts...)
}

// Cluster is what a cluster node runs on instead of the data directory's
// bbolt file (package cluster): the shared store and the dispatcher that
// hands runs to the executor.
type Cluster struct {
	// Store is the store every node shares (the JetStream store). The App
	// closes it.
	Store state.Store
	// Dispatcher hands runs to this node's executor; the caller starts it
	// on App.Executor after OpenCluster and closes it after App.Close.
	Dispatcher workflows.Dispatcher
	// LeaseTTL is the executor's lease TTL (the claims' AckWait).
	LeaseTTL time.Duration
	// HandoffDelay is the executor's HandoffDelay (0: its default).
	HandoffDelay time.Duration
	// Node names this node in the heads of the runs it drives
	// (workflows.Config.Node).
	Node string
}

// OpenCluster builds an App that runs as a node of a cluster: runs live
// in cl.Store, and the executor drives only the runs cl.Dispatcher hands
// it (it resumes nothing by itself). The data directory holds the runs'
// work directories. The caller must Close it.
func OpenCluster(ctx context.Context, cfg configs.Server, log *slog.Logger, cl Cluster, opts ...Option) (*App, error) {
	if cl.Store == nil || cl.Dispatcher == nil {
		return nil, errors.New("app: cluster needs a store and a dispatcher")
	}
	return openApp(ctx, cfg, log, &cl, opts...)
}

func openApp(ctx context.Context, cfg configs.Server, log *slog.Logger, cl *Cluster, opts ...Option) (*App, error) {
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	// The isolation of the programs runs start: refuse a policy this host
	// cannot honour, and say once when the default falls back to none.
	policy, err := isolation.ParsePolicy(cfg.Isolation)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", configs.ErrInvalid, err)
	}
	if err := policy.Check(); err != nil {
		return nil, fmt.Errorf("%w: %w (install bubblewrap, or choose --isolation auto or none)", configs.ErrInvalid, err)
	}
	if w := policy.Warning(); w != "" {
		log.Warn(w)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	reg := phases.Default.Clone()
	if err := LoadExtensions(reg, cfg); err != nil {
		return nil, err
	}
	// Every file a run reads or writes server-side goes through access;
	// building it here also refuses bad read or write roots at start. The
	// executor (made below, before any run) knows the runs' grants.
	var ex *workflows.Executor
	access, err := files.ServerAccess(cfg, func(id string) *state.Grants {
		if ex == nil {
			return nil
		}
		return ex.Grants(id)
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", configs.ErrInvalid, err)
	}
	var st state.Store
	if cl != nil {
		st = cl.Store
	} else if st, err = openStore(cfg); err != nil {
		return nil, err
	}
	mx := telemetry.New(st, func() int {
		if ex == nil {
			return 0
		}
		return len(ex.Active())
	})
	var tr *telemetry.Tracer
	var steps workflows.StepObserver
	if telemetry.TracingEnabled() {
		exp, err := telemetry.NewOTLPExporter(ctx)
		if err == nil {
			tr, err = telemetry.NewTracer(ctx, st, exp, log)
		}
		if err != nil {
			return nil, errors.Join(err, st.Close())
		}
		steps = tr
	}
	gw := gateway.New(log)
	gw.SetListenOptions(httpserver.Options{HeaderTimeout: cfg.HeaderTimeout(), BodyTimeout: cfg.BodyTimeout()})
	o := options{deps: handlers.Deps{Server: cfg, Log: log, Open: access.Open, Services: []any{gw}, Keys: &keyring.Ring{}}}
	for _, opt := range opts {
		opt(&o)
	}
	deps := o.deps
	// The operation handlers are the registered handler packages (see
	// handlers.go); the executor provisions them at Start.
	wcfg := workflows.Config{
		Observer:    mx,
		Steps:       steps,
		Store:       st,
		Registry:    reg,
		Handlers:    handlers.Registered(),
		HandlerDeps: deps,
		RunsDir:     cfg.RunsDir(),
		Concurrency: cfg.Concurrency,
		Logger:      log,
		NoResume:    o.noResume,

		NoSnapshots:          cfg.Snapshots.Off,
		SnapshotMaxFileBytes: cfg.Snapshots.MaxFileBytes,
		SnapshotMaxRunBytes:  cfg.Snapshots.MaxRunBytes,
	}
	if cl != nil {
		wcfg.Dispatcher, wcfg.LeaseTTL, wcfg.HandoffDelay, wcfg.Node = cl.Dispatcher, cl.LeaseTTL, cl.HandoffDelay, cl.Node
	}
	ex, err = workflows.New(wcfg)
	if err != nil {
		return nil, errors.Join(err, closeTracer(ctx, tr), st.Close())
	}
	if err := ex.Start(ctx); err != nil {
		return nil, errors.Join(err, closeTracer(ctx, tr), gw.Close(), st.Close())
	}
	return &App{Config: cfg, Store: st, Executor: ex, Registry: reg, Log: log, Metrics: mx, Tracer: tr, Gateway: gw, Keys: deps.Keys}, nil
}

// openStore opens the data directory's database. It refuses a database
// that is missing or empty while run directories exist (unless
// cfg.NewStore), and words a damaged file's error with what to do.
func openStore(cfg configs.Server) (*bolt.Store, error) {
	path := cfg.DBPath()
	fi, err := os.Stat(path)
	if (errors.Is(err, os.ErrNotExist) || (err == nil && fi.Size() == 0)) && !cfg.NewStore {
		runs, _ := os.ReadDir(cfg.RunsDir())
		n := 0
		for _, d := range runs {
			if d.IsDir() {
				n++
			}
		}
		if n > 0 {
			what := "missing"
			if err == nil {
				what = "empty (0 bytes)"
			}
			return nil, fmt.Errorf("%w: %s is %s but %s holds %d run directories of an earlier store; restore the database file, or start with --new-store (new_store in --config) to begin an empty store beside them",
				ErrNoStore, path, what, cfg.RunsDir(), n)
		}
	}
	st, err := bolt.Open(path, bolt.Options{})
	if errors.Is(err, state.ErrCorrupt) {
		return nil, fmt.Errorf("%w; run `flock db check --data %s` to list the damage and `flock db recover --data %s --to FILE` to copy what is readable, then move FILE to %s and start again",
			err, cfg.DataDir, cfg.DataDir, path)
	}
	return st, err
}

// Close stops the executor (unfinished runs stay resumable), sends the
// spans still queued, and closes the store.
func (a *App) Close(ctx context.Context) error {
	err := a.Executor.Stop(ctx)
	return errors.Join(err, closeTracer(ctx, a.Tracer), a.Gateway.Close(), a.Store.Close())
}

// closeTracer sends tr's queued spans, waiting at most a few seconds for
// a collector that does not answer.
func closeTracer(ctx context.Context, tr *telemetry.Tracer) error {
	if tr == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := tr.Close(ctx); err != nil {
		return fmt.Errorf("telemetry: close tracer: %w", err)
	}
	return nil
}

// ModelsOf lists the model names a settings document refers to (see
// generate.ModelsOf).
func ModelsOf(raw json.RawMessage) []string { return generate.ModelsOf(raw) }
