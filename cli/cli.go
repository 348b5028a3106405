package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/flockrun/flock/telemetry"
)

// Main runs the command line and returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd, rest := "launch", args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, rest = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "launch":
		err = launch(ctx, rest, stdout, stderr)
	case "serve":
		err = serve(ctx, rest, stdout, stderr)
	case "run":
		err = runCmd(ctx, rest, stdout, stderr)
	case "rollout":
		err = rolloutCmd(ctx, rest, stdout, stderr)
	case "synthesize":
		err = synthesizeCmd(ctx, rest, stdout, stderr)
	case "db":
		err = dbCmd(ctx, rest, stdout, stderr)
	case "runs":
		err = runsCmd(ctx, rest, stdout, stderr)
	case "workflows":
		err = workflowsCmd(ctx, rest, stdout, stderr)
	case "sandbox":
		err = sandboxCmd(ctx, rest, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, Version())
	case "help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "flock: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "flock %s: %v\n", cmd, err)
		return 2
	case errors.Is(err, errRunFailed), errors.Is(err, errReported):
		return 1
	default:
		fmt.Fprintf(stderr, "flock %s: %v\n", cmd, err)
		return 1
	}
}

var (
	errUsage     = errors.New("usage")
	errRunFailed = errors.New("run did not succeed")
)

const usage = `flock runs LLM agents and agent-data pipelines as durable phase graphs.

Usage:
  flock serve [--addr ADDR] [--data DIR] [--mode live|simulated] [--plugins DIR] [--workflows DIR] [--new-store]
        Serve the HTTP API; resumes unfinished runs on start. A damaged flock.db
        is refused (see flock db); so is a missing or empty one while DIR/runs
        holds run directories, unless --new-store.
  flock run --workflow NAME --settings FILE [--task TEXT] [--data DIR] [--mode ...] [--new]
        Run one workflow to the end with live progress; exit 0 on success. It
        runs in-process, or, while a flock serve holds the data directory, in
        that server. The same command again resumes its unfinished run (--new
        starts another); no other unfinished run is resumed.
  flock run --resume RUN_ID [--data DIR]
        Follow an interrupted (or paused) run of the data directory to its end.
  flock rollout --config FILE [--data DIR] [--output-dir DIR] [--max-tasks N] [--num-chains N] ...
        Run a benchmark rollout with a progress bar and a summary table (in
        the server holding the data directory, if one does; the same command
        again resumes it).
  flock synthesize --config FILE [--mode simulated] [--output-dir DIR] [--data DIR] ...
        Synthesize multi-hop QA from seeds (AgentFlow's synthesis config) with a
        progress display; run it again to resume or to skip finished seeds.
  flock --workflow NAME --settings FILE [--task TEXT] [--exit] [serve flags]
        Serve and immediately start that workflow (Flock style). --workflow listen
        (the default) starts nothing; --exit ends the process with the run.
  flock db check [--data DIR | --db FILE]
        Check the database read-only (bbolt structure and flock's invariants);
        exit 0 when clean, 1 with the list of problems.
  flock db recover [--data DIR | --db FILE] --to FILE
        Copy every readable run, entry, op and event of a damaged database into
        a new FILE and report what could not be read.
  flock serve --cluster --node NAME --nats-secret-file FILE [--nats-listen ADDR] [--cluster-listen ADDR --routes URLS]
              [--nats-tls-cert FILE --nats-tls-key FILE --nats-tls-ca FILE] [--jetstream-dir DIR] [serve flags]
        Run as a node of a cluster on an embedded NATS JetStream (README, "Running a
        cluster"); every NATS connection needs the secret, and TLS off loopback.
        --nats URL [--nats-user NAME] joins an external NATS cluster instead.
  flock serve --sandbox-config FILE [serve flags]
        Also serve the sandbox service (AgentFlow's sandbox-server JSON) under /api/v1.
  flock sandbox --config FILE [--addr 127.0.0.1:18890] [--data DIR]
        Run the sandbox service alone (AgentFlow's /api/v1 wire).
  flock runs list|show|logs|export ... [--data DIR | --server URL]
        Find and read runs: of the server holding the data directory (or
        --server), else of the data directory itself ("flock runs help").
  flock runs cancel|pause|resume|fork|questions|answer|intervene RUN_ID ... [--server URL] [--token TOKEN]
        Control a run of a flock server over HTTP: cancel, pause, resume, fork
        it from a step, list and answer its questions, intervene on its next
        action ("flock runs help" for each).
  flock workflows [--data DIR | --server URL] [--plugins DIR] [--workflows DIR]
        Every registered workflow with its one-line description and settings keys.
  flock version

Run "flock COMMAND -h" for the flags of a command.
`

// logOpts are the --log-level and --log-format flags.
type logOpts struct {
	Level, Format string
}

// logFlags registers --log-level (default level) and --log-format on fs.
func logFlags(fs *flag.FlagSet, lo *logOpts, level string) {
	fs.StringVar(&lo.Level, "log-level", level, "debug, info, warn or error")
	fs.StringVar(&lo.Format, "log-format", "text", "text, or json (one object per line; lines about a run carry run and trace_id)")
}

func newLogger(w io.Writer, lo logOpts) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(lo.Level)); err != nil {
		return nil, fmt.Errorf("%w: --log-level %q: %v", errUsage, lo.Level, err)
	}
	log, err := telemetry.NewLogger(w, lo.Format, l)
	if err != nil {
		return nil, fmt.Errorf("%w: --log-format: %v", errUsage, err)
	}
	return log, nil
}

// stringList is a repeatable, comma-splitting flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

func (s *stringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*s = append(*s, p)
		}
	}
	return nil
}

func getenv(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
