package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// Queue and batch bounds of a Tracer.
const (
	// noteQueue is how many journal notes may wait for the exporter before
	// new ones are dropped (and counted).
	noteQueue = 8192
	// maxBatch is the most spans sent in one export request.
	maxBatch = 512
	// maxOpen is the most runs whose current step the tracer remembers;
	// past it the memory is cleared and later steps are read back from the
	// journal instead.
	maxOpen = 100_000
	// flushEvery is the longest a span waits for its batch to fill.
	flushEvery = 500 * time.Millisecond
	// exportTimeout bounds one export request.
	exportTimeout = 10 * time.Second
)

// Span attribute keys. gen_ai.* follow the OpenTelemetry GenAI semantic
// conventions; flock.* are flock's own.
const (
	attrGenAIOperation    = "gen_ai.operation.name"
	attrGenAIProvider     = "gen_ai.provider.name"
	attrGenAIRequestModel = "gen_ai.request.model"
	attrGenAIRespModel    = "gen_ai.response.model"
	attrGenAIInputTokens  = "gen_ai.usage.input_tokens"
	attrGenAIOutputTokens = "gen_ai.usage.output_tokens"
	attrGenAIFinish       = "gen_ai.response.finish_reasons"
	attrGenAIChoices      = "gen_ai.request.choice.count"
)

// TracingEnabled reports whether the environment asks for traces: an OTLP
// endpoint for traces is set (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT) and OTEL_TRACES_EXPORTER is not "none".
func TracingEnabled() bool {
	if os.Getenv("OTEL_TRACES_EXPORTER") == "none" || os.Getenv("OTEL_SDK_DISABLED") == "true" {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// NewOTLPExporter returns an OTLP/HTTP (protobuf) span exporter configured
// from the standard OTEL_EXPORTER_OTLP_* environment variables (endpoint,
// headers, timeout, compression).
func NewOTLPExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP trace exporter: %w", err)
	}
	return exp, nil
}

// TracerStats counts a Tracer's work.
type TracerStats struct {
	// Exported spans were accepted by the exporter.
	Exported uint64
	// Failed spans were refused by the exporter (collector down).
	Failed uint64
	// Dropped notes found the queue full; their steps have no spans.
	Dropped uint64
}

// Tracer turns the journal into OpenTelemetry spans: a span per run, per
// step (a phase call and the ops it asked for, named after the phase) and
// per op, with the times the journal recorded. It implements
// workflows.StepObserver: the executor tells it which run and step a
// commit wrote, and its goroutine reads the step's ops back from the store
// and exports them in batches. It never blocks a run: when the queue is
// full notes are dropped, and when the collector is down spans are dropped;
// both are counted (Stats).
//
// Ids are derived from the journal (see TraceID), so a resumed run's spans
// join its trace. A step in flight during a crash is exported when it
// completes after the resume; a crash between a commit and its export loses
// that step's spans (the queue is memory), and none is sent twice.
type Tracer struct {
	store state.Reader
	exp   sdktrace.SpanExporter
	res   *resource.Resource
	log   *slog.Logger
	scope instrumentation.Scope

	mu     sync.Mutex // guards closed and sends on notes
	closed bool
	notes  chan note
	done   chan struct{}
	// ctx bounds exports; Close cancels it when its own context ends first.
	ctx    context.Context
	cancel context.CancelFunc

	exported, failed, dropped atomic.Uint64
	warned                    atomic.Bool

	// owned by the loop goroutine
	open map[string]openStep
	buf  []sdktrace.ReadOnlySpan
}

type note struct {
	run   string
	step  uint64
	phase string
	at    time.Time
	end   bool
}

// openStep is a run's current step, not yet exported.
type openStep struct {
	step  uint64
	phase string
	start time.Time
}

// NewTracer starts a Tracer reading st and sending to exp. Close stops it.
// log may be nil.
func NewTracer(ctx context.Context, st state.Reader, exp sdktrace.SpanExporter, log *slog.Logger) (*Tracer, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", serviceName())))
	if err != nil && res == nil {
		return nil, fmt.Errorf("telemetry: trace resource: %w", err)
	}
	t := &Tracer{
		store: st, exp: exp, res: res, log: log,
		scope: instrumentation.Scope{Name: "github.com/flockrun/flock/telemetry"},
		notes: make(chan note, noteQueue),
		done:  make(chan struct{}),
		open:  make(map[string]openStep),
	}
	t.ctx, t.cancel = context.WithCancel(context.WithoutCancel(ctx))
	go t.loop() // owned by t: Close waits for it
	return t, nil
}

func serviceName() string {
	if s := os.Getenv("OTEL_SERVICE_NAME"); s != "" {
		return s
	}
	return "flock"
}

// StepCommitted implements workflows.StepObserver.
func (t *Tracer) StepCommitted(id string, step uint64, phase string, at time.Time) {
	t.send(note{run: id, step: step, phase: phase, at: at})
}

// RunClosed implements workflows.StepObserver.
func (t *Tracer) RunClosed(id string, at time.Time) {
	t.send(note{run: id, at: at, end: true})
}

func (t *Tracer) send(n note) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	select {
	case t.notes <- n:
	default:
		t.dropped.Add(1)
	}
}

// Stats returns the tracer's counters.
func (t *Tracer) Stats() TracerStats {
	return TracerStats{Exported: t.exported.Load(), Failed: t.failed.Load(), Dropped: t.dropped.Load()}
}

// Close exports what is queued, until ctx ends (then what is left is
// dropped), and shuts the exporter down. Spans that could not be delivered
// are logged as a count, not returned as an error: tracing never fails the
// work it watches. Notes sent after Close are ignored.
func (t *Tracer) Close(ctx context.Context) error {
	t.mu.Lock()
	if !t.closed {
		t.closed = true
		close(t.notes)
	}
	t.mu.Unlock()
	select {
	case <-t.done:
	case <-ctx.Done():
		t.cancel()
		<-t.done
	}
	t.cancel()
	if s := t.Stats(); s.Failed+s.Dropped > 0 {
		t.log.Warn("trace spans not delivered", "failed", s.Failed, "dropped", s.Dropped, "exported", s.Exported)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	return t.exp.Shutdown(sctx)
}

func (t *Tracer) loop() {
	defer close(t.done)
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	for {
		select {
		case n, ok := <-t.notes:
			if !ok {
				t.flush()
				return
			}
			t.handle(n)
			if len(t.buf) >= maxBatch {
				t.flush()
			}
		case <-tick.C:
			// Spans leave at least this often when the executor is quiet,
			// and in full batches when it is busy.
			t.flush()
		}
	}
}

func (t *Tracer) handle(n note) {
	ctx := context.Background()
	o, ok := t.open[n.run]
	if !ok && (n.end || n.step > 1) {
		// Not seen since this process started (a resumed run): the step in
		// flight is the one before this note's (or the run's last).
		prev := n.step - 1
		if n.end {
			head, err := t.store.Run(ctx, n.run)
			if err != nil {
				t.log.Debug("trace: read run", "run", n.run, "err", err)
				return
			}
			prev = head.Step
		}
		if prev > 0 {
			o, ok = openStep{step: prev}, true
		}
	}
	if ok && (n.end || o.step < n.step) {
		t.stepSpans(ctx, n.run, o, n.at)
	}
	if n.end {
		delete(t.open, n.run)
		t.runSpan(ctx, n.run, n.at)
		return
	}
	if len(t.open) >= maxOpen {
		clear(t.open)
	}
	t.open[n.run] = openStep{step: n.step, phase: n.phase, start: n.at}
}

// stepSpans adds the span of step o (ended at end) and of its ops.
func (t *Tracer) stepSpans(ctx context.Context, run string, o openStep, end time.Time) {
	ops, err := t.store.StepOps(ctx, run, o.step)
	if err != nil {
		t.log.Debug("trace: read step ops", "run", run, "step", o.step, "err", err)
	}
	if o.start.IsZero() || o.phase == "" {
		// Learnt from the journal: the ops were created by the phase call.
		o.start = end
		for _, op := range ops {
			if o.phase == "" {
				o.phase = op.Phase
			}
			if op.CreatedAt.Before(o.start) {
				o.start = op.CreatedAt
			}
		}
	}
	tid := TraceID(run)
	stepSC := spanContext(tid, PhaseSpanID(run, o.step))
	t.buf = append(t.buf, tracetest.SpanStub{
		Name:        "phase " + o.phase,
		SpanContext: stepSC,
		Parent:      spanContext(tid, RunSpanID(run)),
		SpanKind:    trace.SpanKindInternal,
		StartTime:   o.start,
		EndTime:     end,
		Attributes: []attribute.KeyValue{
			attribute.String("flock.run.id", run),
			attribute.String("flock.phase", o.phase),
			attribute.Int64("flock.step", int64(o.step)),
			attribute.Int("flock.ops", len(ops)),
		},
		Resource:             t.res,
		InstrumentationScope: t.scope,
	}.Snapshot())
	for _, op := range ops {
		t.buf = append(t.buf, t.opSpan(tid, stepSC, op, end))
	}
}

func (t *Tracer) opSpan(tid trace.TraceID, parent trace.SpanContext, op state.Op, stepEnd time.Time) sdktrace.ReadOnlySpan {
	start, end := op.CreatedAt, stepEnd
	if op.StartedAt != nil {
		start = *op.StartedAt
	}
	if op.FinishedAt != nil {
		end = *op.FinishedAt
	}
	kind := op.Request.Kind
	attrs := []attribute.KeyValue{
		attribute.String("flock.op.id", op.ID),
		attribute.String("flock.op.kind", string(kind)),
		attribute.String("flock.op.status", string(op.Status)),
		attribute.Int("flock.op.attempts", op.Attempts),
	}
	name := string(kind)
	sk := trace.SpanKindInternal
	if g := operations.Generate.Params(op.Request); g != nil {
		sk = trace.SpanKindClient
		name = "chat " + g.Model
		attrs = append(attrs,
			attribute.String(attrGenAIOperation, "chat"),
			attribute.String(attrGenAIProvider, "flock"),
			attribute.String(attrGenAIRequestModel, g.Model))
		if g.N > 1 {
			attrs = append(attrs, attribute.Int(attrGenAIChoices, g.N))
		}
	}
	var status sdktrace.Status
	if r := op.Result; r != nil {
		if r.Error != "" {
			status = sdktrace.Status{Code: codes.Error, Description: r.Error}
		}
		if g := operations.Generate.Result(*r); g != nil {
			reasons := make([]string, 0, len(g.Outputs))
			for _, o := range g.Outputs {
				if o.FinishReason != "" {
					reasons = append(reasons, o.FinishReason)
				}
			}
			attrs = append(attrs,
				attribute.Int(attrGenAIInputTokens, g.Usage.PromptTokens),
				attribute.Int(attrGenAIOutputTokens, g.Usage.CompletionTokens),
				attribute.Float64("flock.cost", g.Usage.Cost))
			if g.Model != "" {
				attrs = append(attrs, attribute.String(attrGenAIRespModel, g.Model))
			}
			if len(reasons) > 0 {
				attrs = append(attrs, attribute.StringSlice(attrGenAIFinish, reasons))
			}
		}
	}
	if kind == operations.KindSpawn {
		attrs = append(attrs, attribute.String("flock.child.run", workflows.ChildID(op.ID)))
	}
	return tracetest.SpanStub{
		Name:                 name,
		SpanContext:          spanContext(tid, OpSpanID(op.ID)),
		Parent:               parent,
		SpanKind:             sk,
		StartTime:            start,
		EndTime:              end,
		Attributes:           attrs,
		Status:               status,
		Resource:             t.res,
		InstrumentationScope: t.scope,
	}.Snapshot()
}

// runSpan adds the span of a run that ended at end.
func (t *Tracer) runSpan(ctx context.Context, run string, end time.Time) {
	head, err := t.store.Run(ctx, run)
	if err != nil {
		t.log.Debug("trace: read run", "run", run, "err", err)
		return
	}
	if head.EndedAt != nil {
		end = *head.EndedAt
	}
	tid := TraceID(run)
	var parent trace.SpanContext
	if op := spawnOp(run); op != "" {
		parent = spanContext(tid, OpSpanID(op))
	}
	attrs := []attribute.KeyValue{
		attribute.String("flock.run.id", run),
		attribute.String("flock.workflow", head.Workflow),
		attribute.String("flock.run.status", string(head.Status)),
		attribute.Int64("flock.steps", int64(head.Step)),
		attribute.Int("flock.usage.tokens", head.Usage.Tokens),
		attribute.Int("flock.usage.actions", head.Usage.Actions),
		attribute.Float64("flock.usage.cost", head.Usage.Cost),
	}
	if head.EndReason != "" {
		attrs = append(attrs, attribute.String("flock.run.end_reason", head.EndReason))
	}
	if head.ParentID != "" {
		attrs = append(attrs, attribute.String("flock.run.parent", head.ParentID))
	}
	var status sdktrace.Status
	if head.Status != state.StatusSucceeded {
		status = sdktrace.Status{Code: codes.Error, Description: head.Error}
	}
	t.buf = append(t.buf, tracetest.SpanStub{
		Name:                 "run " + head.Workflow,
		SpanContext:          spanContext(tid, RunSpanID(run)),
		Parent:               parent,
		SpanKind:             trace.SpanKindInternal,
		StartTime:            head.CreatedAt,
		EndTime:              end,
		Attributes:           attrs,
		Status:               status,
		Resource:             t.res,
		InstrumentationScope: t.scope,
	}.Snapshot())
}

func (t *Tracer) flush() {
	if len(t.buf) == 0 {
		return
	}
	batch := t.buf
	t.buf = nil
	ctx, cancel := context.WithTimeout(t.ctx, exportTimeout)
	defer cancel()
	if err := t.exp.ExportSpans(ctx, batch); err != nil {
		t.failed.Add(uint64(len(batch)))
		// One warning per outage: the collector being down must not fill
		// the log, and must not touch the runs.
		if !t.warned.Swap(true) {
			t.log.Warn("trace export failed; spans are dropped until the collector answers", "spans", len(batch), "err", err)
		}
		return
	}
	if t.warned.Swap(false) {
		t.log.Info("trace export recovered")
	}
	t.exported.Add(uint64(len(batch)))
}

func spanContext(tid trace.TraceID, sid trace.SpanID) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
}

var _ workflows.StepObserver = (*Tracer)(nil)
