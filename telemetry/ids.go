package telemetry

import (
	"crypto/sha256"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// Trace and span ids are derived from the journal's own names, so a run
// that resumes after a crash, on this process or another, keeps its trace,
// and a span sent twice is sent with the same ids.
//
// A child run's id is its spawning op's id with "/" turned into "." (see
// workflows.ChildID), so the root run of any run is the part of its id
// before the first ".", and the op that spawned a child is named by the
// child's id: both are read off the id with no store lookup.

// TraceID is the trace of run id: that of its root run.
func TraceID(run string) trace.TraceID {
	var t trace.TraceID
	sum := sha256.Sum256([]byte("flock/trace/" + RootRun(run)))
	copy(t[:], sum[:])
	return t
}

// RootRun is the top-level run of run id's tree (id itself when it has no parent).
func RootRun(run string) string {
	if i := strings.IndexByte(run, '.'); i >= 0 {
		return run[:i]
	}
	return run
}

// spawnOp names the op that spawned run id ("" for a top-level run).
func spawnOp(run string) string {
	i := strings.LastIndexByte(run, '.')
	if i < 0 {
		return ""
	}
	j := strings.LastIndexByte(run[:i], '.')
	if j < 0 {
		return ""
	}
	return run[:j] + "/" + run[j+1:i] + "/" + run[i+1:]
}

func spanID(parts ...string) trace.SpanID {
	var s trace.SpanID
	sum := sha256.Sum256([]byte("flock/span/" + strings.Join(parts, "\x00")))
	copy(s[:], sum[:])
	return s
}

// RunSpanID, PhaseSpanID and OpSpanID name a run's span, the span of one
// of its steps (a phase call and the ops it asked for), and an op's span.
func RunSpanID(run string) trace.SpanID { return spanID("run", run) }

// PhaseSpanID is the span of step of run.
func PhaseSpanID(run string, step uint64) trace.SpanID {
	return spanID("step", run, strconv.FormatUint(step, 10))
}

// OpSpanID is the span of the op with the given id ("<run>/<step>/<index>").
func OpSpanID(op string) trace.SpanID { return spanID("op", op) }
