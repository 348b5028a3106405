package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/editdist"
)

// command is one command of the command line (or a subcommand of runs or
// db) as its help shows it: "flock COMMAND -h" prints the synopsis, what
// it does, its flags and examples.
type command struct {
	// name is the command as typed after "flock": "run", "runs list";
	// "launch" is the Flock-style form (flock --workflow NAME ...).
	name string
	// summary is the one line of the command lists.
	summary string
	// synopsis is its usage lines, each as typed.
	synopsis []string
	// about says what it does, in paragraphs separated by blank lines.
	about string
	// examples are command lines, each one that works as shown from the
	// repository's root (TestCommandExamples).
	examples []string
}

// commands are flock's commands, in the order the overview lists them;
// runsCommands and dbCommands are the subcommands of runs and db.
var (
	commands = []*command{
		{name: "serve", summary: "serve the HTTP API and the viewer; resume every unfinished run",
			synopsis: []string{
				"flock serve [--addr ADDR] [--data DIR] [--mode live|simulated] [--plugins DIR] [--workflows DIR] [--config FILE] [--new-store] [--auth-token-file FILE] [--isolation auto|bwrap|none]",
				"flock serve --sandbox-config FILE [serve flags]",
				"flock serve --cluster --node NAME --nats-secret-file FILE [--nats-listen ADDR] [--cluster-listen ADDR --routes URLS] [serve flags]",
				"flock serve --nats URLS --nats-secret-file FILE [--nats-user NAME] [serve flags]",
			},
			about: `Serve the HTTP API, the viewer and the model gateway, and resume every unfinished
run of the data directory. While it runs, flock run, rollout and synthesize on the
same data directory hand their runs to it (DATA/server.json). A damaged flock.db is
refused (see flock db); so is a missing or empty one while DIR/runs holds run
directories, unless --new-store. The programs runs start (bash, python, external
agents, sandbox sessions) run under bubblewrap where it can run (--isolation;
README, "Isolation"); the token is best given in a file (--auth-token-file).

--sandbox-config also serves the sandbox service (AgentFlow's sandbox-server JSON)
under /api/v1. --cluster (an embedded NATS JetStream) or --nats (an external NATS
cluster) makes the process a node of a cluster (README, "Running a cluster").`,
			examples: []string{
				"flock serve",
				"flock serve --addr 127.0.0.1:8080 --data /tmp/flock-data --mode simulated --workflows configs/workflows",
				"flock serve --sandbox-config configs/sandbox/offline.json",
			}},
		{name: "run", summary: "run one workflow to its end with live progress",
			synopsis: []string{
				"flock run --workflow NAME [--settings FILE] [--task TEXT] [--data DIR] [--mode live|simulated] [--new] [--quiet]",
				"flock run --settings FILE [--task TEXT] [flags]",
				"flock run --resume RUN_ID [--data DIR]",
			},
			about: `Run one workflow to its end with live progress, print the result line and exit 0
when the run succeeded, 1 when it did not. The workflow is --workflow, or the
settings' workflow_type ("flock workflows" lists them).

It runs in this process, or, while a flock serve holds the data directory, in
that server (the same progress, result and exit code). The same command again
resumes its own unfinished run (--new starts another); no other unfinished run is
resumed. --resume follows an interrupted or paused run of the data directory to
its end.`,
			examples: []string{
				"flock run --workflow script --settings configs/examples/script.json",
				`flock run --settings configs/examples/modular.json --mode simulated --task "What is 6*7?"`,
				"flock run --resume RUN_ID --data flock-data",
			}},
		{name: "rollout", summary: "run a benchmark rollout with a progress bar and a summary table",
			synopsis: []string{
				"flock rollout --config FILE [--data DIR] [--mode live|simulated] [--output-dir DIR] [--max-tasks N] [--num-chains N] [--task-ids IDS] [--new] [--quiet]",
				"flock rollout --config FILE --question TEXT",
				"flock rollout --config FILE --regrade",
			},
			about: `Run a benchmark rollout (AgentFlow's rollout config, or flock's keys: docs/rollout.md)
with a progress bar and a summary table, in this process or in the flock server
holding the data directory. The same command again resumes it without re-running
finished samples. --question runs one question instead of the benchmark and prints
the answer; --regrade re-grades the saved answers and runs no agent. Exit 0 when
the rollout run succeeded.`,
			examples: []string{
				"flock rollout --config configs/examples/rollout.yaml --mode simulated",
				"flock rollout --config configs/examples/rollout.yaml --mode simulated --max-tasks 2 --num-chains 4 --output-dir /tmp/rollout-out",
			}},
		{name: "synthesize", summary: "synthesize multi-hop QA from seeds with a progress display",
			synopsis: []string{
				"flock synthesize --config FILE [--mode live|simulated] [--output-dir DIR] [--sandbox-config FILE] [--number-of-seed N] [--data DIR] [--new] [--quiet]",
			},
			about: `Synthesize multi-hop QA from seeds (AgentFlow's synthesis config, keys as they are)
with a progress display, on the sandbox of sandbox_config_path (hosted in this
process) or of sandbox_server_url. Run it again to resume it, or, with only the same
output directory, to skip the seeds done before. Exit 0 when the synthesis run
succeeded.`,
			examples: []string{
				"flock synthesize --config examples/synthesis/offline.yaml --mode simulated",
				"flock synthesize --config examples/synthesis/offline.yaml --mode simulated --number-of-seed 1 --output-dir /tmp/qa",
			}},
		{name: "sandbox", summary: "serve the sandbox service alone (AgentFlow's /api/v1 wire)",
			synopsis: []string{"flock sandbox --config FILE [--addr ADDR] [--data DIR] [--auth-token-file FILE] [--isolation auto|bwrap|none]"},
			about: `Serve the sandbox service alone, on AgentFlow's /api/v1 wire (docs/sandbox.md), until
interrupted or until a client posts /api/v1/server/shutdown. The config is
AgentFlow's sandbox-server JSON.`,
			examples: []string{
				"flock sandbox --config configs/sandbox/offline.json",
				"flock sandbox --config configs/sandbox/offline.json --addr 127.0.0.1:18891 --data /tmp/sandbox-data",
			}},
		{name: "runs", summary: "find, read and control runs (list, show, logs, export, cancel, fork, ...)",
			synopsis: []string{"flock runs COMMAND ARGS [--data DIR | --server URL [--token TOKEN]]"},
			about: `Find, read and control runs. A server is --server (env FLOCK_SERVER; --token or
--token-file, env FLOCK_AUTH_TOKEN or FLOCK_AUTH_TOKEN_FILE) or else the flock server that holds the data directory (--data,
env FLOCK_DATA, default ./` + configs.DefaultDataDir + `: its server file). Without one, list,
show, logs and export read the data directory itself (read-only), and the controls
go to http://` + configs.DefaultAddr + `.`,
			examples: []string{"flock runs list --top --limit 5", "flock runs show RUN_ID"}},
		{name: "workflows", summary: "list the registered workflows, their descriptions and settings keys",
			synopsis: []string{"flock workflows [--data DIR | --server URL] [--plugins DIR] [--workflows DIR]"},
			about: `Every registered workflow with its one-line description and settings keys: those
of the flock server holding the data directory (or --server), else those of this
build plus --plugins and --workflows.`,
			examples: []string{"flock workflows", "flock workflows --workflows configs/workflows"}},
		{name: "db", summary: "check or recover a data directory's database (check, recover)",
			synopsis: []string{"flock db check [--data DIR | --db FILE]", "flock db recover [--data DIR | --db FILE] --to FILE"},
			about:    `Check a flock.db read-only, or copy what is readable of a damaged one into a new file.`,
			examples: []string{"flock db check --data flock-data"}},
		{name: "version", summary: "print the version of this build",
			synopsis: []string{"flock version"},
			about:    "Print flock's version, the Go version, the platform and the phases API version (which Go plugins must match).",
			examples: []string{"flock version"}},
		{name: "help", summary: "show the help of a command",
			synopsis: []string{"flock help [COMMAND [SUBCOMMAND]]"},
			about:    `Show the commands, or the help of one (the same as "flock COMMAND -h").`,
			examples: []string{"flock help run", "flock help runs list"}},
	}

	launchCommand = &command{name: "launch", summary: "serve and start a workflow at once, as Flock did",
		synopsis: []string{"flock --workflow NAME --settings FILE [--task TEXT] [--exit] [serve flags]"},
		about: `The Flock-style launch, "flock --workflow NAME ...": serve (as flock serve does) and
start that workflow as soon as the server is up. --workflow listen, the default, starts nothing. --exit ends the
process when the run ends, with exit code 0 only if it succeeded.`,
		examples: []string{
			`flock --workflow script --settings configs/examples/script.json --exit`,
			`flock --workflow triframe --settings settings.example.json --task "Count the files here" --mode simulated`,
		}}

	runsCommands = []*command{
		{name: "runs list", summary: "runs newest first",
			synopsis: []string{"flock runs list [--status STATUS] [--workflow NAME] [--top] [--limit N] [--data DIR | --server URL]"},
			about: `Runs newest first: id, workflow, status, end reason, task (first line), age. --top
lists top-level runs only (no children).`,
			examples: []string{"flock runs list --top --limit 20", "flock runs list --status failed --workflow script"}},
		{name: "runs show", summary: "a run's head, result, usage and children",
			synopsis: []string{"flock runs show RUN_ID [--data DIR | --server URL]"},
			about:    "The run's head, result, usage against its limits and its children by status.",
			examples: []string{"flock runs show RUN_ID"}},
		{name: "runs logs", summary: "a run's transcript",
			synopsis: []string{"flock runs logs RUN_ID [--follow] [--data DIR | --server URL]"},
			about: `The run's transcript as flock run prints it; --follow follows a run a server drives
to its end.`,
			examples: []string{"flock runs logs RUN_ID --follow"}},
		{name: "runs export", summary: "a run as JSON lines",
			synopsis: []string{"flock runs export RUN_ID [--data DIR | --server URL]"},
			about: `The run as JSON lines: {"run": head}, then {"entry": ...} and {"op": ...} lines, in
the HTTP API's shapes.`,
			examples: []string{"flock runs export RUN_ID > run.jsonl"}},
		{name: "runs cancel", summary: "cancel a run and its children",
			synopsis: []string{"flock runs cancel RUN_ID [--server URL [--token TOKEN] | --data DIR]"},
			about:    "Cancel a run of a flock server, and its children; prints its final status as JSON.",
			examples: []string{"flock runs cancel RUN_ID"}},
		{name: "runs pause", summary: "pause a run",
			synopsis: []string{"flock runs pause RUN_ID [--server URL [--token TOKEN] | --data DIR]"},
			about:    `Pause a run of a flock server until "flock runs resume"; prints its status as JSON.`,
			examples: []string{"flock runs pause RUN_ID --server http://127.0.0.1:46397"}},
		{name: "runs resume", summary: "resume a paused run",
			synopsis: []string{"flock runs resume RUN_ID [--server URL [--token TOKEN] | --data DIR]"},
			about:    "Resume a paused run of a flock server; prints its status as JSON.",
			examples: []string{"flock runs resume RUN_ID"}},
		{name: "runs fork", summary: "start a new run from a run's state at a step",
			synopsis: []string{"flock runs fork RUN_ID --step N [--var NAME=JSON]... [--message TEXT] [--server URL | --data DIR]"},
			about:    "Start a new run from RUN_ID's state at step N; prints the new run's id.",
			examples: []string{`flock runs fork RUN_ID --step 3 --var intervention=true --message "Try the tests first."`}},
		{name: "runs questions", summary: "the questions a run waits on",
			synopsis: []string{"flock runs questions RUN_ID [--server URL | --data DIR]"},
			about:    "The questions RUN_ID waits on (human and intervention operations), one JSON line each.",
			examples: []string{"flock runs questions RUN_ID"}},
		{name: "runs answer", summary: "answer a run's question",
			synopsis: []string{"flock runs answer RUN_ID OP_ID ANSWER [--json] [--server URL | --data DIR]"},
			about: `Answer a question: ANSWER is sent as a number when it is one, else as text (--json
sends it as the JSON value it is).`,
			examples: []string{"flock runs answer RUN_ID OP_ID approve", `flock runs answer RUN_ID OP_ID '{"choice": 2}' --json`}},
		{name: "runs intervene", summary: "replace or approve the action a run waits to execute",
			synopsis: []string{"flock runs intervene RUN_ID (--action JSON | --approve) [--server URL | --data DIR]"},
			about: `Replace the action RUN_ID waits to execute in intervention mode ({"name": TOOL,
"arguments": {...}}), or let it run (--approve).`,
			examples: []string{`flock runs intervene RUN_ID --action '{"name":"bash","arguments":{"command":"ls -la"}}'`, "flock runs intervene RUN_ID --approve"}},
	}

	dbCommands = []*command{
		{name: "db check", summary: "check the database read-only",
			synopsis: []string{"flock db check [--data DIR | --db FILE]"},
			about: `Check the database read-only: bbolt's structure and flock's invariants. Exit 0 when
it is clean, 1 with the list of problems.`,
			examples: []string{"flock db check --data flock-data", "flock db check --db /backup/flock.db"}},
		{name: "db recover", summary: "copy what is readable of a damaged database into a new file",
			synopsis: []string{"flock db recover [--data DIR | --db FILE] --to FILE"},
			about: `Copy every readable run, entry, op and event of a damaged database into a new FILE
(which must not exist) and report what could not be read.`,
			examples: []string{"flock db recover --data flock-data --to flock-data/new.db"}},
	}
)

// lookupCommand returns the command named name ("run", "runs list",
// "launch"), or nil.
func lookupCommand(name string) *command {
	if name == launchCommand.name {
		return launchCommand
	}
	for _, list := range [][]*command{commands, runsCommands, dbCommands} {
		for _, c := range list {
			if c.name == name {
				return c
			}
		}
	}
	return nil
}

// subcommandNames are the names of the subcommands of parent ("runs",
// "db"), without the parent: "list", "show".
func subcommandNames(parent string) []string {
	var names []string
	for _, list := range [][]*command{runsCommands, dbCommands} {
		for _, c := range list {
			if sub, ok := strings.CutPrefix(c.name, parent+" "); ok {
				names = append(names, sub)
			}
		}
	}
	return names
}

// commandNames are the top-level commands' names.
func commandNames() []string {
	names := make([]string, 0, len(commands))
	for _, c := range commands {
		names = append(names, c.name)
	}
	return names
}

// unknownCommand is the usage error for word, which is no command of
// parent ("" for the top level, "runs", "db"), with the closest one.
func unknownCommand(parent, word string) error {
	names, what := commandNames(), "command"
	if parent != "" {
		names, what = subcommandNames(parent), parent+" command"
	}
	msg := fmt.Sprintf("unknown %s %q", what, word)
	if c := editdist.Closest(word, names); c != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", c)
	} else {
		msg += " (" + strings.Join(names, ", ") + ")"
	}
	return fmt.Errorf("%w: %s", errUsage, msg)
}

// newFlags returns the flag set of command name: it reports nothing
// itself (parseFlags words its errors and prints the help).
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args with fs (made by newFlags). -h or --help prints
// the command's help on stdout and returns flag.ErrHelp (exit 0); a flag
// that is unknown, lacks its value or has a bad one is a usage error
// naming it (exit 2).
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		if fs.Name() == launchCommand.name {
			printOverview(stdout, fs)
		} else {
			printHelp(stdout, lookupCommand(fs.Name()), fs)
		}
		return flag.ErrHelp
	}
	return fmt.Errorf("%w: %s", errUsage, flagError(fs, err))
}

var (
	flagUndefined = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	flagNoValue   = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
	flagBadValue  = regexp.MustCompile(`(?s)^invalid value (".*") for flag -+([^:\s]+): (.*)$`)
	flagBadBool   = regexp.MustCompile(`(?s)^invalid boolean (?:value (".*") for|flag) -*([^:\s]+): `)
)

// flagError words an error of the flag package as flock's other usage
// errors: the flag as it is typed (--name), what is wrong with it, and
// for an unknown flag the closest one the command has.
func flagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if m := flagUndefined.FindStringSubmatch(msg); m != nil {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		s := fmt.Sprintf("unknown flag --%s", m[1])
		if c := editdist.Closest(m[1], names); c != "" {
			s += fmt.Sprintf(" (did you mean --%s?)", c)
		}
		return s
	}
	if m := flagNoValue.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("--%s needs a value", m[1])
	}
	if m := flagBadBool.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("--%s is a switch: give --%s alone (or --%s=false), not a value", m[2], m[2], m[2])
	}
	if m := flagBadValue.FindStringSubmatch(msg); m != nil {
		name, value, why := m[2], m[1], m[3]
		if why == "parse error" || why == "value out of range" {
			why = "want " + valueKind(fs.Lookup(name))
		}
		return fmt.Sprintf("--%s %s: %s", name, value, why)
	}
	return msg
}

// valueKind says what a flag's value must be, for its parse errors.
func valueKind(f *flag.Flag) string {
	if f == nil {
		return "another value"
	}
	switch kind, _ := flag.UnquoteUsage(f); kind {
	case "int":
		return "a whole number"
	case "uint":
		return "a whole number, 0 or more"
	case "float":
		return "a number"
	case "duration":
		return "a duration such as 30s or 2m"
	}
	return "another value"
}

// placeholders name the values of common flags in the help.
var placeholders = map[string]string{
	"addr": "ADDR", "data": "DIR", "settings": "FILE", "config": "FILE", "workflow": "NAME", "task": "TEXT",
	"plugins": "DIR", "workflows": "DIR", "output-dir": "DIR", "resume": "RUN_ID", "mode": "MODE",
	"log-level": "LEVEL", "log-format": "FORMAT", "server": "URL", "token": "TOKEN", "auth-token": "TOKEN",
	"token-file": "FILE", "auth-token-file": "FILE", "isolation": "POLICY",
	"sandbox-config": "FILE", "db": "FILE", "to": "FILE", "status": "STATUS", "question": "TEXT",
	"metric": "METRIC", "task-ids": "IDS", "var": "NAME=JSON", "message": "TEXT", "action": "JSON",
	"node": "NAME", "nats": "URLS", "routes": "URLS", "nats-listen": "ADDR", "cluster-listen": "ADDR",
	"jetstream-dir": "DIR", "nats-secret-file": "FILE", "nats-user": "NAME", "nats-tls-cert": "FILE",
	"nats-tls-key": "FILE", "nats-tls-ca": "FILE",
}

// printHelp prints c's help: usage, what it does, flags and examples.
func printHelp(w io.Writer, c *command, fs *flag.FlagSet) {
	if c == nil {
		return
	}
	fmt.Fprintln(w, "Usage:")
	for _, s := range c.synopsis {
		fmt.Fprintf(w, "  %s\n", s)
	}
	fmt.Fprintf(w, "\n%s\n", c.about)
	if fs != nil {
		printFlags(w, fs)
	}
	printExamples(w, c)
}

// printExamples prints c's examples.
func printExamples(w io.Writer, c *command) {
	fmt.Fprintln(w, "\nExamples:")
	for _, e := range c.examples {
		fmt.Fprintf(w, "  %s\n", e)
	}
}

// printFlags lists fs's flags as they are typed, with their value's
// placeholder, what they do and their default.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	var fl []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { fl = append(fl, f) })
	if len(fl) == 0 {
		return
	}
	sort.Slice(fl, func(i, j int) bool { return fl[i].Name < fl[j].Name })
	fmt.Fprintln(w, "\nFlags:")
	for _, f := range fl {
		kind, text := flag.UnquoteUsage(f)
		head := "  --" + f.Name
		if kind != "" {
			p := placeholders[f.Name]
			if p == "" {
				p = map[string]string{"int": "N", "uint": "N", "float": "X", "duration": "DURATION"}[kind]
			}
			if p == "" {
				p = "VALUE"
			}
			head += " " + p
		}
		switch f.DefValue {
		case "", "0", "false", "[]", "0s":
		default:
			text += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintln(w, head)
		for _, line := range wrap(text, 72) {
			fmt.Fprintf(w, "        %s\n", line)
		}
	}
}

// wrap breaks s into lines of at most width bytes, at spaces.
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// printOverview prints the commands with their summaries, the exit codes
// and the Flock-style launch with its flags (fs, nil to leave them out).
func printOverview(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `flock runs LLM agents and agent-data pipelines as durable phase graphs.

Usage:
  flock COMMAND [ARGS] [flags]
  flock --workflow NAME --settings FILE [--task TEXT] [--exit] [serve flags]

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Run "flock COMMAND -h" (or "flock help COMMAND") for a command's flags and examples.

Exit codes: 0 when the command did what it was asked (a run it ran succeeded);
1 when it did not: a run that failed or was cancelled, an operation or a file
that failed, a server that refused or did not answer; 2 when the command line is
wrong: a command or flag flock does not have, a missing flag or argument, a flag
value that is not allowed (a mode, a status, a number, a workflow that is not
registered).

`)
	fmt.Fprintln(w, launchCommand.about)
	printFlags(w, fs)
	printExamples(w, launchCommand)
}

// helpCmd is "flock help [COMMAND [SUBCOMMAND]]": the command's -h.
func helpCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return launch(ctx, []string{"-h"}, stdout, stderr)
	}
	switch name := args[0]; {
	case isHelp(name):
		printHelp(stdout, lookupCommand("help"), nil)
		return flag.ErrHelp
	case name == launchCommand.name:
		return launch(ctx, []string{"-h"}, stdout, stderr)
	case runners[name] == nil || strings.HasPrefix(name, "-"):
		return unknownCommand("", name)
	default:
		return runners[name](ctx, append(args[1:len(args):len(args)], "-h"), stdout, stderr)
	}
}

// parentHelp prints the help of a command with subcommands (runs, db) and
// lists them.
func parentHelp(w io.Writer, parent string) {
	c := lookupCommand(parent)
	fmt.Fprintln(w, "Usage:")
	for _, s := range c.synopsis {
		fmt.Fprintf(w, "  %s\n", s)
	}
	fmt.Fprintf(w, "\n%s\n", c.about)
	defer printExamples(w, c)
	fmt.Fprintf(w, "\nCommands (\"flock %s COMMAND -h\" for each):\n", parent)
	for _, sub := range subcommandNames(parent) {
		c := lookupCommand(parent + " " + sub)
		fmt.Fprintf(w, "  %-10s %s\n", sub, c.summary)
		for _, syn := range c.synopsis {
			fmt.Fprintf(w, "             %s\n", syn)
		}
	}
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "help"
}
