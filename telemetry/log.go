package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
)

// NewLogger returns a logger writing to w at level in format "text" (the
// default) or "json". Every record about a run, one with a "run" or
// "run_id" attribute, also carries "trace_id": the run's trace (TraceID),
// so log lines and spans of one run tree can be joined.
func NewLogger(w io.Writer, format string, level slog.Level) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch format {
	case "", "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("log format %q: want text or json", format)
	}
	return slog.New(traceHandler{h: h}), nil
}

// traceHandler adds trace_id next to a run id.
type traceHandler struct {
	h slog.Handler
	// bound is set when WithAttrs already added a trace id.
	bound bool
}

func (t traceHandler) Enabled(ctx context.Context, l slog.Level) bool { return t.h.Enabled(ctx, l) }

func (t traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if !t.bound {
		var run string
		r.Attrs(func(a slog.Attr) bool {
			if isRunKey(a) {
				run = a.Value.String()
				return false
			}
			return true
		})
		if run != "" {
			r = r.Clone()
			r.AddAttrs(slog.String("trace_id", TraceID(run).String()))
		}
	}
	return t.h.Handle(ctx, r)
}

func (t traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	if !t.bound {
		for _, a := range as {
			if isRunKey(a) {
				as = append(as[:len(as):len(as)], slog.String("trace_id", TraceID(a.Value.String()).String()))
				return traceHandler{h: t.h.WithAttrs(as), bound: true}
			}
		}
	}
	return traceHandler{h: t.h.WithAttrs(as), bound: t.bound}
}

func (t traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h: t.h.WithGroup(name), bound: t.bound}
}

func isRunKey(a slog.Attr) bool {
	return (a.Key == "run" || a.Key == "run_id") && a.Value.Kind() == slog.KindString && a.Value.String() != ""
}
