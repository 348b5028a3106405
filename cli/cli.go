package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"strings"

	"github.com/flockrun/flock/telemetry"
)

// runner is a command's function: args are those after its name.
type runner func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// runners are the commands, by name.
var runners map[string]runner

func init() {
	runners = map[string]runner{
		"serve": serve, "run": runCmd, "rollout": rolloutCmd, "synthesize": synthesizeCmd, "sandbox": sandboxCmd,
		"runs": runsCmd, "workflows": workflowsCmd, "db": dbCmd, "version": versionCmd, "help": helpCmd,
	}
}

// Main runs the command line and returns the process exit code: 0 when
// the command did what it was asked (or printed its help), 1 when it did
// not (a run that did not succeed, an operational error), 2 for a usage
// error (errUsage: the command line is wrong).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name, rest := launchCommand.name, args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, rest = args[0], args[1:]
	}
	var err error
	switch run := runners[name]; {
	case name == launchCommand.name && (len(args) == 0 || strings.HasPrefix(args[0], "-")):
		err = launch(ctx, rest, stdout, stderr)
	case run == nil:
		err = unknownCommand("", name)
		name = ""
	default:
		if len(rest) > 0 && slices.Contains(subcommandNames(name), rest[0]) {
			name += " " + rest[0]
		}
		err = run(ctx, rest, stdout, stderr)
	}
	label := cmdLabel(name)
	// The command may have stopped before it read its flags: the lines
	// below follow the --log-format the command line asks for.
	out := newNotices(stderr, logOpts{Format: askedLogFormat(rest)})
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		hint := fmt.Sprintf("Run \"%s -h\" for its usage, flags and examples.", label)
		if name == "" || name == launchCommand.name || name == "help" {
			hint = `Run "flock help" for the commands and their usage.`
		}
		out.fail(label+": "+terminalText(err)+"\n"+hint, "usage error", "command", label, "err", terminalText(err), "hint", hint)
		return 2
	case errors.Is(err, errRunFailed), errors.Is(err, errReported):
		return 1
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		out.fail(label+": interrupted", "interrupted", "command", label)
		return 1
	default:
		out.fail(label+": "+terminalText(err), stoppedOnError, "command", label, "err", terminalText(err))
		return 1
	}
}

// Warn prints a warning of flock's start, before Main, the way Main prints
// its lines: "flock: warning: msg", or a JSON record when args (the whole
// command line) ask for --log-format json.
func Warn(args []string, stderr io.Writer, msg string) {
	newNotices(stderr, logOpts{Format: askedLogFormat(args)}).warn("flock", []string{msg})
}

// askedLogFormat returns the value of the last --log-format (or
// -log-format, with a space or "=") among a command's arguments, before
// any "--"; "" when there is none. Main reads it itself: a usage error
// stops a command before its flags are parsed.
func askedLogFormat(args []string) string {
	format := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "log-format" {
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				break
			}
			i++
			value = args[i]
		}
		format = value
	}
	return format
}

// errUsage is wrapped by the errors that mean the command line is wrong
// (exit code 2); errRunFailed is returned by a command whose run ended
// without succeeding, after printing its result (exit code 1).
var (
	errUsage     = errors.New("usage")
	errRunFailed = errors.New("run did not succeed")
)

// versionCmd is "flock version".
func versionCmd(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("version")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	_, err := fmt.Fprintln(stdout, Version())
	return err
}

// noArgs is the usage error of a command that takes no arguments and got
// some after its flags.
func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() == 0 {
		return nil
	}
	takes := "no arguments"
	fs.VisitAll(func(*flag.Flag) { takes = "flags only" })
	msg := fmt.Sprintf("unexpected argument %q: %s takes %s", fs.Arg(0), cmdLabel(fs.Name()), takes)
	if fs.NArg() > 1 && strings.HasPrefix(fs.Arg(1), "-") {
		msg += fmt.Sprintf(" (the flags after it were not read: put %q first, or quote a value with spaces)", fs.Arg(1))
	}
	return fmt.Errorf("%w: %s", errUsage, msg)
}

// cmdLabel is command name as typed: "flock run", "flock runs list";
// "flock" for the Flock-style launch and an unknown command ("").
func cmdLabel(name string) string {
	if name == "" || name == launchCommand.name {
		return "flock"
	}
	return "flock " + name
}

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

// modeFlags registers --mode on fs, into mode (which holds the default).
func modeFlags(fs *flag.FlagSet, mode *string) {
	fs.Var((*modeFlag)(mode), "mode", "live, or simulated (every generate uses the built-in simulated model: works offline)")
}

// modeFlag is a --mode value: live or simulated.
type modeFlag string

func (m *modeFlag) String() string { return string(*m) }

func (m *modeFlag) Set(v string) error {
	if v != "live" && v != "simulated" {
		return errors.New("want live or simulated")
	}
	*m = modeFlag(v)
	return nil
}

// addrFlag is a listen address flag: host:port (port 0 picks a free one).
type addrFlag string

func (a *addrFlag) String() string { return string(*a) }

func (a *addrFlag) Set(v string) error {
	if _, _, err := net.SplitHostPort(v); err != nil {
		return fmt.Errorf("want HOST:PORT such as 127.0.0.1:8080 (%v)", strings.TrimPrefix(err.Error(), "address "+v+": "))
	}
	*a = addrFlag(v)
	return nil
}

// noNegative is the usage error of the first (by name) of the count
// flags given that is negative; 0 means the flag was not given.
func noNegative(counts map[string]int) error {
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		if v := counts[name]; v < 0 {
			return fmt.Errorf("%w: --%s %d: want a whole number, 1 or more", errUsage, name, v)
		}
	}
	return nil
}
