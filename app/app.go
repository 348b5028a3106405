package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/handlers/bash"
	"github.com/flockrun/flock/handlers/files"
	"github.com/flockrun/flock/handlers/generate"
	"github.com/flockrun/flock/handlers/python"
	"github.com/flockrun/flock/handlers/spawn"
	"github.com/flockrun/flock/handlers/task"
	"github.com/flockrun/flock/isolation"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
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
}

// Open builds an App from cfg and resumes the unfinished runs in its data
// directory. The caller must Close it.
func Open(ctx context.Context, cfg configs.Server, log *slog.Logger) (*App, error) {
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	reg := phases.Default.Clone()
	if err := LoadExtensions(reg, cfg); err != nil {
		return nil, err
	}
	// Every file a run reads or writes server-side goes through access.
	access, err := files.NewAccess(files.AccessOptions{DataDir: cfg.DataDir, RunsDir: cfg.RunsDir(),
		ReadRoots: cfg.ReadRoots, WriteRoots: cfg.WriteRoots})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", configs.ErrInvalid, err)
	}
	st, err := openStore(cfg)
	if err != nil {
		return nil, err
	}
	gen := generate.New(generate.Options{Mode: cfg.Mode, Logger: log, Journal: st, ModelLimits: cfg.Models, Open: access.Open})
	// A bwrap sandbox hides the data directory (the journal, other runs).
	hidden := []string{cfg.DataDir}
	if abs, err := filepath.Abs(cfg.DataDir); err == nil {
		hidden = []string{abs}
	}
	hs := map[operations.Kind]handlers.Handler{
		operations.KindBash:     bash.New(bash.Options{Hidden: hidden}),
		operations.KindPython:   python.New(python.Options{Hidden: hidden}),
		operations.KindGenerate: gen,
	}
	fh := files.New(access)
	hs[operations.KindReadFile], hs[operations.KindWriteFile] = fh, fh
	th := task.New()
	for _, k := range task.Kinds() {
		hs[k] = th
	}
	var ex *workflows.Executor
	mx := telemetry.New(st, func() int {
		if ex == nil {
			return 0
		}
		return len(ex.Active())
	})
	ex, err = workflows.New(workflows.Config{
		Observer:    mx,
		Store:       st,
		Registry:    reg,
		Handlers:    hs,
		RunsDir:     cfg.RunsDir(),
		Concurrency: cfg.Concurrency,
		Logger:      log,
		CheckRun: func(wf *phases.Workflow, rs *configs.RunSettings, raw json.RawMessage) error {
			if rs.Isolation.Kind == isolation.KindBwrap {
				if err := isolation.Available(); err != nil {
					return fmt.Errorf("isolation.kind: %w", err)
				}
			}
			return gen.CheckSettings(rs, ModelsOf(raw))
		},
	})
	if err != nil {
		return nil, errors.Join(err, st.Close())
	}
	hs[operations.KindSpawn] = spawn.New(ex)
	if err := ex.Start(ctx); err != nil {
		return nil, errors.Join(err, st.Close())
	}
	return &App{Config: cfg, Store: st, Executor: ex, Registry: reg, Log: log, Metrics: mx}, nil
}

// openStore opens the data directory's database. It refuses a database
// that is missing or empty while run directories exist (unless
// cfg.NewStore), and words a damaged file's error with what to do.
func openStore(cfg configs.Server) (*state.BoltStore, error) {
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
	st, err := state.OpenBolt(path, state.BoltOptions{})
	if errors.Is(err, state.ErrCorrupt) {
		return nil, fmt.Errorf("%w; run `flock db check --data %s` to list the damage and `flock db recover --data %s --to FILE` to copy what is readable, then move FILE to %s and start again",
			err, cfg.DataDir, cfg.DataDir, path)
	}
	return st, err
}

// Close stops the executor (unfinished runs stay resumable) and closes the store.
func (a *App) Close(ctx context.Context) error {
	err := a.Executor.Stop(ctx)
	return errors.Join(err, a.Store.Close())
}

// ModelsOf lists the model names a settings document refers to: every
// "model" string value anywhere in it (Flock's advisors/actors/raters
// entries, generator, judge ...), sorted and deduplicated.
func ModelsOf(raw json.RawMessage) []string {
	var doc any
	if json.Unmarshal(raw, &doc) != nil {
		return nil
	}
	seen := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				if s, ok := x.(string); ok && k == "model" && s != "" {
					seen[s] = true
					continue
				}
				walk(x)
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		}
	}
	walk(doc)
	out := make([]string, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}
