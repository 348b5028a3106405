package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/client"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/state"
)

const runsUsage = `Usage: flock runs COMMAND ARGS [--data DIR | --server URL [--token TOKEN]]

Find, read and control runs. A server is --server (env FLOCK_SERVER; --token,
env FLOCK_AUTH_TOKEN) or else the flock server that holds the data directory
(--data, env FLOCK_DATA, default ./flock-data: its server file). Without one,
list, show, logs and export read the data directory itself (read-only), and
the controls go to http://` + configs.DefaultAddr + `.

  flock runs list [--status S] [--workflow W] [--top] [--limit N]
        Runs newest first: id, workflow, status, end reason, task (first
        line), age. --top lists top-level runs only (no children).
  flock runs show RUN_ID
        The run's head, result, usage against its limits, children by status.
  flock runs logs RUN_ID [--follow]
        The run's transcript as flock run prints it; --follow follows a run
        a server drives to its end.
  flock runs export RUN_ID
        The run as JSON lines: {"run": head}, then {"entry": ...} and
        {"op": ...} lines, in the HTTP API's shapes.
  flock runs cancel RUN_ID
  flock runs pause RUN_ID
  flock runs resume RUN_ID
  flock runs fork RUN_ID --step N [--var NAME=JSON]... [--message TEXT]
        Start a new run from RUN_ID's state at step N; prints the new run's id.
  flock runs questions RUN_ID
        The questions RUN_ID waits on (human and intervention operations), one JSON line each.
  flock runs answer RUN_ID OP_ID ANSWER
        Answer a question: ANSWER is sent as a number when it is one, else as
        text (--json sends it as the JSON value it is).
  flock runs intervene RUN_ID (--action JSON | --approve)
        Replace the action RUN_ID waits to execute in intervention mode
        ({"name": TOOL, "arguments": {...}}), or let it run.
`

// runsCmd is "flock runs ...": finding and reading runs, and the
// operator's controls over HTTP.
func runsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, runsUsage)
		if len(args) == 0 {
			return fmt.Errorf("%w: a command is required (list, show, logs, export, cancel, pause, resume, fork, questions, answer, intervene)", errUsage)
		}
		return nil
	}
	sub, rest := args[0], args[1:]
	fs := flag.NewFlagSet("runs "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", getenv("FLOCK_SERVER", "http://"+configs.DefaultAddr), "the flock server's base URL (env FLOCK_SERVER)")
	token := fs.String("token", getenv("FLOCK_AUTH_TOKEN", ""), "bearer token (env FLOCK_AUTH_TOKEN)")
	data := fs.String("data", getenv("FLOCK_DATA", configs.DefaultDataDir), "data directory: the server that holds it, or (list, show, logs, export) its runs read directly")
	var f state.RunFilter
	var follow bool
	var step uint64
	var vars stringList
	var message, action string
	var approve, rawJSON bool
	switch sub {
	case "fork":
		fs.Uint64Var(&step, "step", 0, "the step to fork from (required)")
		fs.Var(&vars, "var", "NAME=JSON: a var of the fork; repeatable")
		fs.StringVar(&message, "message", "", "a message injected into the fork's log (the agent sees it)")
	case "answer":
		fs.BoolVar(&rawJSON, "json", false, "send ANSWER as the JSON value it is")
	case "intervene":
		fs.StringVar(&action, "action", "", `the action to execute instead: {"name": TOOL, "arguments": {...}}`)
		fs.BoolVar(&approve, "approve", false, "let the proposed action run")
	case "list":
		fs.Var((*statusFlag)(&f.Status), "status", "only runs with this status (running, paused, succeeded, failed, cancelled)")
		fs.StringVar(&f.Workflow, "workflow", "", "only runs of this workflow")
		fs.BoolVar(&f.TopLevel, "top", false, "only top-level runs (no children)")
		fs.IntVar(&f.Limit, "limit", 20, "at most this many runs")
	case "logs":
		fs.BoolVar(&follow, "follow", false, "follow a run a server drives to its end")
	case "cancel", "pause", "resume", "questions", "show", "export":
	default:
		return fmt.Errorf("%w: unknown runs command %q (list, show, logs, export, cancel, pause, resume, fork, questions, answer, intervene)", errUsage, sub)
	}
	pos, err := parseInterleaved(fs, rest)
	if err != nil {
		return err
	}
	want := map[string]int{"answer": 3, "list": 0}[sub]
	if _, ok := map[string]bool{"answer": true, "list": true}[sub]; !ok {
		want = 1
	}
	if len(pos) != want {
		return fmt.Errorf("%w: runs %s takes %d argument(s), got %q", errUsage, sub, want, pos)
	}
	switch sub {
	case "list", "show", "logs", "export":
		if sub == "list" && f.Limit < 1 {
			return fmt.Errorf("%w: --limit must be at least 1", errUsage)
		}
		src, closeSrc, err := openSource(ctx, fs, *server, *token, *data)
		if err != nil {
			return err
		}
		defer closeSrc()
		switch sub {
		case "list":
			return runsList(ctx, src, f, stdout)
		case "show":
			return runsShow(ctx, src, pos[0], stdout)
		case "logs":
			return runsLogs(ctx, src, pos[0], follow, stdout, stderr)
		}
		return runsExport(ctx, src, pos[0], stdout)
	}
	c, err := serverTarget(ctx, fs, *server, *token, *data)
	if err != nil {
		return err
	}
	if c == nil {
		if c, err = client.New(*server, client.WithToken(*token)); err != nil {
			return fmt.Errorf("%w: --server: %v", errUsage, err)
		}
	}
	id := pos[0]
	out := json.NewEncoder(stdout)
	switch sub {
	case "cancel", "pause", "resume":
		act := map[string]func(context.Context, string) (api.RunStatus, error){"cancel": c.Cancel, "pause": c.Pause, "resume": c.Resume}[sub]
		st, err := act(ctx, id)
		if err != nil {
			return err
		}
		return out.Encode(st)
	case "fork":
		if !flagSet(fs, "step") {
			return fmt.Errorf("%w: --step is required", errUsage)
		}
		req := api.ForkRequest{Step: step, Message: message}
		for _, v := range vars {
			name, val, ok := strings.Cut(v, "=")
			if !ok || name == "" {
				return fmt.Errorf("%w: --var %q: want NAME=JSON", errUsage, v)
			}
			if !json.Valid([]byte(val)) {
				return fmt.Errorf("%w: --var %s: %q is not JSON (quote strings: --var %s='\"text\"')", errUsage, name, val, name)
			}
			if req.Vars == nil {
				req.Vars = map[string]json.RawMessage{}
			}
			req.Vars[name] = json.RawMessage(val)
		}
		f, err := c.Fork(ctx, id, req)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, f.RunID)
		return err
	case "questions":
		qs, err := c.Questions(ctx, id)
		if err != nil {
			return err
		}
		for _, q := range qs {
			if err := out.Encode(q); err != nil {
				return err
			}
		}
		return nil
	case "answer":
		ans := answerValue(pos[2], rawJSON)
		if rawJSON && !json.Valid(ans) {
			return fmt.Errorf("%w: --json: %q is not JSON", errUsage, pos[2])
		}
		if err := c.Answer(ctx, id, pos[1], ans); err != nil {
			return err
		}
		return out.Encode(api.OK{OK: true})
	case "intervene":
		var req api.InterveneRequest
		switch {
		case approve == (action != ""):
			return fmt.Errorf("%w: give --action JSON or --approve", errUsage)
		case approve:
			req.Approve = true
		default:
			if !json.Valid([]byte(action)) {
				return fmt.Errorf("%w: --action: not JSON", errUsage)
			}
			req.Action = json.RawMessage(action)
		}
		if err := c.Intervene(ctx, id, req); err != nil {
			return err
		}
		return out.Encode(api.OK{OK: true})
	}
	return nil
}

// statusFlag is a --status flag: a run status, checked.
type statusFlag state.Status

func (s *statusFlag) String() string { return string(*s) }

func (s *statusFlag) Set(v string) error {
	if !state.Status(v).Valid() {
		return fmt.Errorf("must be one of running, paused, succeeded, failed, cancelled")
	}
	*s = statusFlag(v)
	return nil
}

// answerValue is the JSON of an answer given on the command line: a
// number when it is one, else a string; raw keeps it as given.
func answerValue(s string, raw bool) json.RawMessage {
	if raw {
		return json.RawMessage(s)
	}
	var f float64
	if json.Unmarshal([]byte(s), &f) == nil {
		return json.RawMessage(strings.TrimSpace(s))
	}
	b, _ := json.Marshal(s)
	return b
}

// parseInterleaved parses flags placed before, between or after the
// positional arguments and returns those.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
