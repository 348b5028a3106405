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

// runsCmd is "flock runs ...": finding and reading runs, and the
// operator's controls over HTTP.
func runsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && isHelp(args[0]) {
		parentHelp(stdout, "runs")
		return flag.ErrHelp
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("%w: a runs command is required: %s", errUsage, strings.Join(subcommandNames("runs"), ", "))
	}
	sub, rest := args[0], args[1:]
	fs := newFlags("runs " + sub)
	server := fs.String("server", getenv("FLOCK_SERVER", "http://"+configs.DefaultAddr), "the flock server's base URL (env FLOCK_SERVER)")
	var tf tokenFlags
	tf.registerClient(fs)
	token := new(string)
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
		return unknownCommand("runs", sub)
	}
	pos, err := parseInterleaved(fs, rest, stdout)
	if err != nil {
		return err
	}
	want := map[string][]string{"list": nil, "answer": {"RUN_ID", "OP_ID", "ANSWER"}}[sub]
	if sub != "list" && sub != "answer" {
		want = []string{"RUN_ID"}
	}
	if missing := want[min(len(pos), len(want)):]; len(missing) > 0 {
		verb := map[bool]string{true: "is", false: "are"}[len(missing) == 1]
		return fmt.Errorf("%w: %s %s required (flock runs %s %s)", errUsage, strings.Join(missing, " and "), verb, sub, strings.Join(want, " "))
	}
	if len(pos) > len(want) {
		return fmt.Errorf("%w: unexpected argument %q (flock runs %s takes %s)", errUsage, pos[len(want)], sub, argsPhrase(want))
	}
	if *token, err = tf.resolve("", notices{w: io.Discard}); err != nil {
		return err
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
		for _, w := range f.Warnings {
			fmt.Fprintln(stderr, "warning:", w)
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

// argsPhrase says which arguments a command takes.
func argsPhrase(want []string) string {
	if len(want) == 0 {
		return "flags only"
	}
	return strings.Join(want, " ")
}

// parseInterleaved parses flags placed before, between or after the
// positional arguments and returns those.
func parseInterleaved(fs *flag.FlagSet, args []string, stdout io.Writer) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args, stdout); err != nil {
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
