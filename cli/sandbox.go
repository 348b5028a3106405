package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/isolation"
	"github.com/flockrun/flock/sandbox"
	"github.com/flockrun/flock/server/sandboxapi"
)

// DefaultSandboxAddr is AgentFlow's default sandbox address.
const DefaultSandboxAddr = "127.0.0.1:18890"

// openSandbox loads the sandbox config at path and builds the service with
// its data in dataDir (unless the config's server.data_dir names one,
// relative to the config file), the isolation policy of srv and srv's data
// directory hidden from the programs of its sessions. The config's keys
// that flock does not read are logged as warnings, with the closest known
// key.
func openSandbox(ctx context.Context, path, dataDir string, log *slog.Logger, srv configs.Server) (*sandbox.Service, error) {
	cfg, err := sandbox.LoadConfig(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if d := cfg.Server.DataDir; d != "" {
		if !filepath.IsAbs(d) {
			d = filepath.Join(filepath.Dir(path), d)
		}
		dataDir = d
	}
	policy, err := isolation.ParsePolicy(srv.Isolation)
	if err != nil {
		return nil, err
	}
	var hidden []string
	for _, d := range append([]string{srv.DataDir}, srv.Hidden...) {
		if d == "" {
			continue
		}
		d, err := filepath.Abs(d)
		if err != nil {
			return nil, err
		}
		hidden = append(hidden, d)
	}
	svc, err := sandbox.New(ctx, cfg, sandbox.Options{DataDir: dataDir, Logger: log, Isolation: policy, Hidden: hidden})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, w := range svc.Warnings() {
		log.Warn("sandbox config: "+w, "config", path)
	}
	return svc, nil
}

// sandboxCmd runs the sandbox service alone until ctx ends or a client
// posts /api/v1/server/shutdown.
func sandboxCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sandbox")
	cfg := configs.Server{Addr: DefaultSandboxAddr}
	var level logOpts
	path := fs.String("config", "", "AgentFlow sandbox-server JSON config (required)")
	fs.Var((*addrFlag)(&cfg.Addr), "addr", "listen address, HOST:PORT")
	fs.StringVar(&cfg.DataDir, "data", getenv("FLOCK_DATA", configs.DefaultDataDir), "data directory; the sandbox keeps its files in DIR/sandbox")
	var tf tokenFlags
	tf.register(fs)
	isolationFlag(fs, &cfg.Isolation)
	logFlags(fs, &level, "info")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if *path == "" {
		return fmt.Errorf("%w: --config FILE is required (AgentFlow's sandbox-server JSON)", errUsage)
	}
	if err := checkFlagFile("config", *path); err != nil {
		return err
	}
	var err error
	if cfg.AuthToken, err = tf.resolve("", newNotices(stderr, level)); err != nil {
		return err
	}
	hideFiles(&cfg, append(tf.files(), *path)...)
	log, err := newLogger(stderr, level)
	if err != nil {
		return err
	}
	policy, err := isolation.ParsePolicy(cfg.Isolation)
	if err != nil {
		return fmt.Errorf("%w: --isolation: %v", errUsage, err)
	}
	if w := policy.Warning(); w != "" {
		log.Warn(w)
	}
	return reported(log, level, serveSandbox(ctx, log, cfg, *path, newNotices(stdout, level)))
}

// serveSandbox is sandboxCmd once its flags are read.
func serveSandbox(ctx context.Context, log *slog.Logger, cfg configs.Server, path string, say notices) error {
	svc, err := openSandbox(ctx, path, filepath.Join(cfg.DataDir, "sandbox"), log, cfg)
	if err != nil {
		return err
	}
	stop := make(chan struct{})
	var once sync.Once
	srv, err := sandboxapi.NewServer(cfg, svc, func() { once.Do(func() { close(stop) }) }, log)
	if err != nil {
		return errors.Join(err, svc.Close(context.Background()))
	}
	addr, err := srv.Start()
	if err != nil {
		return errors.Join(err, svc.Close(context.Background()))
	}
	url, where := listenURL(addr)
	tools := len(svc.Tools(true))
	say.say(fmt.Sprintf("flock sandbox listening on %s (backends %v, %d tools)", where, svc.Backends(), tools),
		"flock sandbox listening", "url", url, "backends", svc.Backends(), "tools", tools)
	select {
	case <-ctx.Done():
	case <-stop:
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return errors.Join(srv.Shutdown(sctx), svc.Close(sctx))
}
