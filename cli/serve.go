package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/cluster"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/configs/configfile"
	"github.com/flockrun/flock/sandbox"
	"github.com/flockrun/flock/server"
	"github.com/flockrun/flock/server/sandboxapi"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/viewer"
	"github.com/flockrun/flock/workflows"
)

// serverFlags registers the flags shared by serve and launch. Call
// applyConfigFile after parsing.
func serverFlags(fs *flag.FlagSet, cfg *configs.Server, lo *logOpts, tf *tokenFlags) {
	fs.String("config", "", "server settings file (JSON or YAML: addr, data, mode, plugin_dirs, workflow_dirs, auth_token_env, auth_token_file, concurrency, max_body_bytes, allowed_origins, public_names, read_roots, models, snapshots, new_store, isolation, pass_env, sandbox_token_envs, sandbox_url_allow_hosts, sandbox_url_allow_private); flags win")
	cfg.Addr, cfg.Mode = configs.DefaultAddr, "live"
	fs.Var((*addrFlag)(&cfg.Addr), "addr", "listen address, HOST:PORT")
	fs.StringVar(&cfg.DataDir, "data", getenv("FLOCK_DATA", configs.DefaultDataDir), "data directory (flock.db and run work directories)")
	modeFlags(fs, &cfg.Mode)
	fs.Var((*stringList)(&cfg.PluginDirs), "plugins", "directory of Go phase plugins (*.so); repeatable")
	fs.Var((*stringList)(&cfg.WorkflowDirs), "workflows", "directory of YAML/JSON workflow files; repeatable")
	tf.register(fs)
	isolationFlag(fs, &cfg.Isolation)
	logFlags(fs, lo, "info")
	fs.BoolVar(&cfg.NewStore, "new-store", false, "start even though flock.db is missing or empty while the data directory holds run directories")
}

// applyConfigFile fills cfg from the --config file: every key the file
// sets, but for the settings whose flag was given explicitly (the flags
// win). Starting from the whole file, a key added to configs.Server
// reaches the server without a line here. It resolves the auth token
// (flags, then the file, then the environment), and hides the settings
// file and the token files from the programs flock starts (hideFiles).
func applyConfigFile(fs *flag.FlagSet, cfg *configs.Server, tf *tokenFlags, warn notices) error {
	path := fs.Lookup("config").Value.String()
	if path == "" {
		tok, err := tf.resolve("", warn)
		cfg.AuthToken = tok
		hideFiles(cfg, tf.files()...)
		return err
	}
	if err := checkFlagFile("config", path); err != nil {
		return err
	}
	file, err := configfile.Server(path)
	if err != nil {
		return err
	}
	if cfg.AuthToken, err = tf.resolve(file.AuthToken, warn); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	flags := *cfg
	*cfg = file
	keep := func(flagName string, dst *string, v string) {
		if set[flagName] || *dst == "" {
			*dst = v
		}
	}
	keep("addr", &cfg.Addr, flags.Addr)
	keep("data", &cfg.DataDir, flags.DataDir)
	keep("mode", &cfg.Mode, flags.Mode)
	keep("isolation", &cfg.Isolation, flags.Isolation)
	cfg.AuthToken = flags.AuthToken
	if set["plugins"] {
		cfg.PluginDirs = flags.PluginDirs
	}
	if set["workflows"] {
		cfg.WorkflowDirs = flags.WorkflowDirs
	}
	if set["new-store"] {
		cfg.NewStore = flags.NewStore
	}
	// Set by the command, never by a file.
	cfg.WriteRoots = flags.WriteRoots
	hideFiles(cfg, append(tf.files(), path, file.AuthTokenFile)...)
	return nil
}

// hideFiles adds the files named (empty names skipped) to the paths the
// programs flock starts must not see (cfg.Hidden): the operator's
// settings and secrets, which no run needs, stay out of reach of bwrap'd
// programs as the data directory does, wherever they are.
func hideFiles(cfg *configs.Server, files ...string) {
	for _, f := range files {
		if f == "" {
			continue
		}
		if abs, err := filepath.Abs(f); err == nil {
			f = abs
		}
		cfg.Hidden = append(cfg.Hidden, f)
	}
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve")
	var cfg configs.Server
	var level logOpts
	var tf tokenFlags
	serverFlags(fs, &cfg, &level, &tf)
	sandboxConfig := fs.String("sandbox-config", "", "AgentFlow sandbox-server JSON config: serve the sandbox service under /api/v1 plus GET /ready")
	var cl clusterFlags
	cl.register(fs)
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if err := applyConfigFile(fs, &cfg, &tf, newNotices(stderr, level)); err != nil {
		return err
	}
	return serveUntilDone(ctx, cfg, level, stdout, stderr, nil, *sandboxConfig, &cl)
}

func launch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags(launchCommand.name)
	var cfg configs.Server
	var level logOpts
	var tf tokenFlags
	var wf, settingsPath, taskText string
	serverFlags(fs, &cfg, &level, &tf)
	fs.StringVar(&wf, "workflow", "listen", "workflow to start once the server is up; listen starts nothing")
	fs.StringVar(&settingsPath, "settings", "", "settings file (JSON or YAML); the system_prompt_file, script and data_path it names are relative to it, and the runs may read them")
	fs.StringVar(&taskText, "task", "", "task text for the run")
	exit := fs.Bool("exit", false, "exit when the started run ends (status 0 only if it succeeded), as Flock did after submit")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if err := applyConfigFile(fs, &cfg, &tf, newNotices(stderr, level)); err != nil {
		return err
	}
	if wf == "listen" {
		return serveUntilDone(ctx, cfg, level, stdout, stderr, nil, "", nil)
	}
	req, keys, err := startRequest("launch", wf, settingsPath, taskText)
	if err != nil {
		return err
	}
	grantSettings(&cfg, req.Settings, false)
	say, warn := newNotices(stdout, level), newNotices(stderr, level)
	return serveUntilDone(ctx, cfg, level, stdout, stderr, func(ctx context.Context, a *app.App) (<-chan error, error) {
		for n, k := range keys {
			a.Keys.Set(n, k)
		}
		h, warnings, err := a.Executor.StartRunWithWarnings(ctx, req)
		if errors.Is(err, workflows.ErrUnknownWorkflow) {
			return nil, unknownWorkflow(requestedWorkflow(req), graphNames(a.Executor.Workflows()))
		}
		if err != nil {
			return nil, err
		}
		warn.warn("flock", warnings)
		say.say(fmt.Sprintf("started run %s (workflow %s)", h.ID, h.Workflow), "started run", "run", h.ID, "workflow", h.Workflow)
		if !*exit {
			return nil, nil
		}
		done := make(chan error, 1)
		go func() { // owned: serveUntilDone waits for done or for ctx, which ends Wait
			end, err := a.Executor.Wait(ctx, h.ID)
			if err == nil {
				say.result(end)
				if end.Status != state.StatusSucceeded {
					err = errRunFailed
				}
			}
			done <- err
		}()
		return done, nil
	}, "", nil)
}

// startRequest builds the start request of command cmd from its flags.
// The files the settings file names (system_prompt_file, script,
// data_path; relative to the settings file) are made absolute and granted
// to the run for reading (req.Grants): the person at the terminal handed
// them over. API keys the file holds literally are taken out and returned
// by the names the settings use instead (see takeLiteralKeys). req.Key
// identifies the command (commandKey).
func startRequest(cmd, wf, settingsPath, taskText string) (workflows.StartRequest, map[string]string, error) {
	req := workflows.StartRequest{Workflow: wf, Task: taskText, Settings: json.RawMessage("{}")}
	if settingsPath == "" {
		req.Key = commandKey(cmd, wf, taskText, req.Settings)
		return req, nil, nil
	}
	s, err := decodeConfig("settings", settingsPath)
	if err != nil {
		return req, nil, err
	}
	found := takeLiteralKeys(s)
	roots, err := localSettings(s, settingsPath)
	if err != nil {
		return req, nil, err
	}
	doc, err := json.Marshal(s)
	if err != nil {
		return req, nil, err
	}
	req.Key = commandKey(cmd, wf, taskText, doc)
	doc, keys := nameKeys(doc, req.Key, found)
	if _, err := configs.ParseRunSettings(doc); err != nil {
		return req, nil, fmt.Errorf("settings %s: %w", settingsPath, err)
	}
	req.Settings = doc
	req.Grants = &state.Grants{ReadRoots: roots}
	return req, keys, nil
}

// serveUntilDone serves until ctx ends. after, if set, runs once the
// server is up; when it returns a non-nil done channel, serving also ends
// when that channel yields, with its error. With cluster flags enabled,
// the process is a cluster node (package cluster).
func serveUntilDone(ctx context.Context, cfg configs.Server, level logOpts, stdout, stderr io.Writer, after func(context.Context, *app.App) (<-chan error, error), sandboxConfig string, cl *clusterFlags) error {
	log, err := newLogger(stderr, level)
	if err != nil {
		return err
	}
	return reported(log, level, serveWith(ctx, log, cfg, level, stdout, stderr, after, sandboxConfig, cl))
}

// serveWith is serveUntilDone with its logger.
func serveWith(ctx context.Context, log *slog.Logger, cfg configs.Server, level logOpts, stdout, stderr io.Writer, after func(context.Context, *app.App) (<-chan error, error), sandboxConfig string, cl *clusterFlags) error {
	began := time.Now()
	var err error
	say := newNotices(stdout, level)
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	hideFiles(&cfg, sandboxConfig)
	if cl != nil {
		hideFiles(&cfg, cl.secretFiles()...)
	}
	// The sandbox service opens first: the sandbox operation's handler
	// runs on it in-process (app.WithSandbox).
	var sb *sandbox.Service
	var opts []app.Option
	if sandboxConfig != "" {
		if sb, err = openSandbox(ctx, sandboxConfig, filepath.Join(cfg.DataDir, "sandbox"), log, cfg); err != nil {
			return err
		}
		opts = append(opts, app.WithSandbox(sb))
	}
	closeSandbox := func(ctx context.Context) error {
		if sb == nil {
			return nil
		}
		return sb.Close(ctx)
	}
	a, node, err := openNode(ctx, cfg, log, cl, opts...)
	if err != nil {
		return errors.Join(err, closeSandbox(context.Background()))
	}
	closeApp := func(ctx context.Context) error {
		err := a.Close(ctx)
		if node != nil {
			node.member.Close()
		}
		return err
	}
	var eng server.Engine = a.Executor
	reads := a.Executor.Store()
	if node != nil {
		eng, reads = node.engine, node.member.Reads
	}
	srv, err := server.New(a.Config, eng, reads, log)
	if err != nil {
		return errors.Join(err, closeApp(context.Background()), closeSandbox(context.Background()))
	}
	srv.Mount("/metrics", a.Metrics.Handler())
	srv.MountGateway(a.Gateway)
	srv.MountUI(viewer.Handler())
	if sb != nil {
		srv.MountGroup(sandboxapi.New(sb, sandboxapi.Options{}))
	}
	// A server on the data directory's bbolt file takes the runs of flock
	// run, rollout and synthesize on that directory: it tells them where
	// it is, with the operator token, in the server file.
	var token string
	if node == nil {
		token = newOperatorToken()
		if err := srv.MountOperator(server.Operator{Token: token, Keys: a.Keys, DataDir: a.Config.DataDir, Sandbox: sb != nil}); err != nil {
			return errors.Join(err, closeApp(context.Background()), closeSandbox(context.Background()))
		}
	}
	addr, err := srv.Start()
	if err != nil {
		return errors.Join(err, closeSandbox(context.Background()), closeApp(context.Background()))
	}
	a.Gateway.SetBaseURL("http://" + agentAddr(addr))
	url, where := listenURL(addr)
	removeServerFile := func() {}
	if token != "" {
		if removeServerFile, err = writeServerFile(a.Config.DataDir, serverFile{URL: "http://" + agentAddr(addr), Token: token, PID: os.Getpid()}); err != nil {
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return errors.Join(err, srv.Shutdown(sctx), closeApp(sctx), closeSandbox(sctx))
		}
	}
	defer removeServerFile()
	if node != nil {
		say.say(fmt.Sprintf("flock listening on %s (data %s, mode %s, cluster node %s, NATS %s, %d replicas)",
			where, a.Config.DataDir, a.Config.Mode, node.name, node.url, node.member.Replicas),
			"flock listening", "url", url, "data", a.Config.DataDir, "mode", a.Config.Mode,
			"node", node.name, "nats", node.url, "replicas", node.member.Replicas)
		// On stderr too, for whoever starts nodes and waits for them.
		newNotices(stderr, level).say(fmt.Sprintf("flock: cluster node %s ready after %.2f s (%s)",
			node.name, time.Since(began).Seconds(), node.member.Provisioned),
			"cluster node ready", "node", node.name, "after_s", time.Since(began).Seconds(), "how", node.member.Provisioned.String())
	} else {
		resumed := len(a.Executor.Active())
		say.say(fmt.Sprintf("flock listening on %s (data %s, mode %s, %s resumed)", where, a.Config.DataDir, a.Config.Mode, count(resumed, "run")),
			"flock listening", "url", url, "data", a.Config.DataDir, "mode", a.Config.Mode, "runs_resumed", resumed)
	}
	var done <-chan error
	var runErr error
	if after != nil {
		// A run that cannot start ends the launch: it was what was asked.
		done, runErr = after(ctx, a)
	}
	if runErr == nil {
		select {
		case <-ctx.Done():
			if node != nil {
				say.say("flock: shutting down; this node's runs go to the other nodes", "flock shutting down")
			} else {
				say.say("flock: shutting down; unfinished runs resume on the next start", "flock shutting down")
			}
			if done != nil {
				<-done // the waiter returns as soon as ctx is done
			}
		case runErr = <-done:
		}
	}
	// No command hands a run to a server on its way out.
	removeServerFile()
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return errors.Join(runErr, srv.Shutdown(sctx), closeApp(sctx), closeSandbox(sctx))
}

// clusterNode is what serve runs on as a cluster node.
type clusterNode struct {
	name, url string
	member    *cluster.Member
	engine    *cluster.Engine
}

// openNode opens the App: on the data directory's bbolt file, or, with
// cluster flags, as a node of a cluster (nil node otherwise).
func openNode(ctx context.Context, cfg configs.Server, log *slog.Logger, cl *clusterFlags, opts ...app.Option) (*app.App, *clusterNode, error) {
	if !cl.enabled() {
		a, err := app.Open(ctx, cfg, log, opts...)
		return a, nil, err
	}
	ccfg, err := cl.config(cfg.DataDir, log)
	if err != nil {
		return nil, nil, err
	}
	// JetStream's files hold every run's records, as flock.db does.
	cfg.Hidden = append(cfg.Hidden, ccfg.Node.StoreDir)
	m, err := cluster.Join(ctx, ccfg, openClusterStore)
	if err != nil {
		return nil, nil, err
	}
	a, err := app.OpenCluster(ctx, cfg, log, app.Cluster{Store: m.Store, Dispatcher: m.Dispatcher, LeaseTTL: m.AckWait, Node: ccfg.Name}, opts...)
	if err != nil {
		m.Close()
		return nil, nil, errors.Join(err, m.Store.Close())
	}
	if err := m.Dispatcher.Start(a.Executor); err != nil {
		err = errors.Join(err, a.Close(context.Background()))
		m.Close()
		return nil, nil, err
	}
	url := ccfg.NATSURL
	if m.Node != nil {
		url = m.Node.ClientURL()
	}
	return a, &clusterNode{name: ccfg.Name, url: url, member: m, engine: cluster.NewEngine(a.Executor, m.Dispatcher)}, nil
}

// agentAddr is the address agents on this machine reach the server at:
// the listen address, with a wildcard host (0.0.0.0, ::) made loopback.
// listenURL is the URL to reach a listener on addr from this machine,
// and how to say where it listens: on an unspecified address (0.0.0.0,
// ::) the loopback URL "on every address", not "http://[::]:PORT".
func listenURL(addr net.Addr) (url, where string) {
	url = "http://" + agentAddr(addr)
	if t, ok := addr.(*net.TCPAddr); ok && t.IP.IsUnspecified() {
		return url, url + " and every address of this machine"
	}
	return url, url
}

// count is "1 run", "2 runs".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func agentAddr(addr net.Addr) string {
	if t, ok := addr.(*net.TCPAddr); ok && t.IP.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(t.Port))
	}
	return addr.String()
}
