package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/telemetry"
)

// errReported is wrapped by the error of a command that has already told
// the user about it (a JSON log record, the interrupted line of a run):
// Main exits 1 and prints nothing.
var errReported = errors.New("error reported")

// notices prints the status lines of the server commands (serve, the
// Flock-style launch, sandbox): as text lines, or, with --log-format json,
// as JSON log records on the same writer, so that every line is JSON.
// They are printed whatever --log-level says.
type notices struct {
	w    io.Writer
	json *slog.Logger // nil for text
}

func newNotices(w io.Writer, lo logOpts) notices {
	if lo.Format != "json" {
		return notices{w: w}
	}
	l, _ := telemetry.NewLogger(w, "json", slog.LevelInfo) // the format is known good
	return notices{w: w, json: l}
}

// say prints text, or the record msg with attrs.
func (n notices) say(text, msg string, attrs ...any) {
	if n.json != nil {
		n.json.Info(msg, attrs...)
		return
	}
	fmt.Fprintln(n.w, text)
}

// warn prints a warning of command cmd.
func (n notices) warn(cmd string, warnings []string) {
	if n.json == nil {
		printWarnings(n.w, cmd, warnings)
		return
	}
	for _, m := range warnings {
		n.json.Warn(m)
	}
}

// fail prints text (a line or more), or the ERROR record msg with attrs.
func (n notices) fail(text, msg string, attrs ...any) {
	if n.json != nil {
		n.json.Error(msg, attrs...)
		return
	}
	fmt.Fprintln(n.w, text)
}

// result prints a finished run's result line.
func (n notices) result(h state.Run) {
	if n.json == nil {
		printResult(n.w, h)
		return
	}
	attrs := []any{"run", h.ID, "workflow", h.Workflow, "status", h.Status, "reason", h.EndReason,
		"seconds", h.Usage.Seconds, "tokens", h.Usage.Tokens, "actions", h.Usage.Actions, "cost", h.Usage.Cost}
	if h.Error != "" {
		attrs = append(attrs, "error", h.Error)
	}
	if len(h.Result) > 0 && json.Valid(h.Result) {
		attrs = append(attrs, "result", json.RawMessage(h.Result))
	}
	n.json.Info("run result", attrs...)
}

// reported logs err on log when the log is JSON, and returns what the
// command returns: errReported then, else err as it is (Main prints it).
// A failed run (already reported) and a usage error (exit code 2) pass.
func reported(log *slog.Logger, lo logOpts, err error) error {
	if err == nil || lo.Format != "json" || errors.Is(err, errRunFailed) || errors.Is(err, errUsage) {
		return err
	}
	log.Error(stoppedOnError, "err", terminalText(err))
	return errReported
}

// stoppedOnError is the message of the record of an error that stops a
// command.
const stoppedOnError = "flock stopped on an error"
