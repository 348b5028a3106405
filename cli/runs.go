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
)

const runsUsage = `Usage: flock runs COMMAND [--server URL] [--token TOKEN] ARGS

Control the runs of a flock server over HTTP (--server, env FLOCK_SERVER,
default http://` + configs.DefaultAddr + `; --token, env FLOCK_AUTH_TOKEN).

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

// runsCmd is "flock runs ...": the operator's controls over HTTP.
func runsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, runsUsage)
		if len(args) == 0 {
			return fmt.Errorf("%w: a command is required (cancel, pause, resume, fork, questions, answer, intervene)", errUsage)
		}
		return nil
	}
	sub, rest := args[0], args[1:]
	fs := flag.NewFlagSet("runs "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", getenv("FLOCK_SERVER", "http://"+configs.DefaultAddr), "the flock server's base URL (env FLOCK_SERVER)")
	token := fs.String("token", getenv("FLOCK_AUTH_TOKEN", ""), "bearer token (env FLOCK_AUTH_TOKEN)")
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
	case "cancel", "pause", "resume", "questions":
	default:
		return fmt.Errorf("%w: unknown runs command %q (cancel, pause, resume, fork, questions, answer, intervene)", errUsage, sub)
	}
	pos, err := parseInterleaved(fs, rest)
	if err != nil {
		return err
	}
	want := map[string]int{"answer": 3}[sub]
	if want == 0 {
		want = 1
	}
	if len(pos) != want {
		return fmt.Errorf("%w: runs %s takes %d argument(s), got %q", errUsage, sub, want, pos)
	}
	c, err := client.New(*server, client.WithToken(*token))
	if err != nil {
		return fmt.Errorf("%w: --server: %v", errUsage, err)
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
