package telemetry_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/cli"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/telemetry"
	"github.com/flockrun/flock/workflows"
)

// collector is an OTLP/HTTP trace receiver: it decodes the protobuf export
// requests the real exporter sends and keeps the spans.
type collector struct {
	srv *httptest.Server

	mu       sync.Mutex
	spans    []*tracepb.Span
	requests int
	service  string
}

func newCollector(t testing.TB) *collector {
	c := &collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want POST /v1/traces with application/x-protobuf", http.StatusBadRequest)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.requests++
		for _, rs := range req.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					c.service = a.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
		c.mu.Unlock()
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *collector) snapshot() []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*tracepb.Span(nil), c.spans...)
}

func attr(s *tracepb.Span, key string) (string, bool) {
	for _, a := range s.Attributes {
		if a.Key == key {
			switch v := a.Value.Value.(type) {
			case *commonpb.AnyValue_StringValue:
				return v.StringValue, true
			case *commonpb.AnyValue_IntValue:
				return fmt.Sprint(v.IntValue), true
			case *commonpb.AnyValue_DoubleValue:
				return fmt.Sprint(v.DoubleValue), true
			case *commonpb.AnyValue_ArrayValue:
				return fmt.Sprint(len(v.ArrayValue.Values)), true
			default:
				return fmt.Sprint(a.Value), true
			}
		}
	}
	return "", false
}

func openApp(t *testing.T, dir string) *app.App {
	t.Helper()
	a, err := app.Open(context.Background(), configs.Server{DataDir: dir, Mode: "simulated", NewStore: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func triframeSettings(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../settings.example.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const task = "Create a file hello.txt containing the word flock, then submit the number of bytes in it."

func waitRun(t *testing.T, a *app.App, id string, done func(state.Run) bool) state.Run {
	t.Helper()
	var h state.Run
	testkit.CheckFor(t, 30*time.Second, func() error {
		var err error
		if h, err = a.Store.Run(context.Background(), id); err != nil {
			return fmt.Errorf("run %s: %w", id, err)
		}
		if !done(h) {
			return fmt.Errorf("run %s: last head %+v", id, h)
		}
		return nil
	})
	return h
}

func ended(h state.Run) bool { return h.Status.Terminal() }

// checkTree asserts that spans form run → phase → op trees in one trace per
// run tree, that every step of the run has exactly one phase span, and
// that generate ops carry the GenAI attributes.
func checkTree(t *testing.T, spans []*tracepb.Span, head state.Run) {
	t.Helper()
	byID := map[string]*tracepb.Span{}
	for _, s := range spans {
		id := hex.EncodeToString(s.SpanId)
		if prev, dup := byID[id]; dup {
			t.Errorf("span %s (%s) exported twice (first as %s)", id, s.Name, prev.Name)
		}
		byID[id] = s
	}
	wantTrace := telemetry.TraceID(head.ID).String()
	runSpan := telemetry.RunSpanID(head.ID).String()
	steps := map[int64]bool{}
	var generates int
	for _, s := range spans {
		if got := hex.EncodeToString(s.TraceId); got != wantTrace {
			t.Errorf("span %q in trace %s, want %s", s.Name, got, wantTrace)
		}
		if s.EndTimeUnixNano < s.StartTimeUnixNano || s.StartTimeUnixNano == 0 {
			t.Errorf("span %q: start %d end %d", s.Name, s.StartTimeUnixNano, s.EndTimeUnixNano)
		}
		parent := hex.EncodeToString(s.ParentSpanId)
		switch kind, _ := attr(s, "flock.op.kind"); {
		case hex.EncodeToString(s.SpanId) == runSpan:
			if len(s.ParentSpanId) != 0 {
				t.Errorf("run span has parent %s", parent)
			}
			if st, _ := attr(s, "flock.run.status"); st != string(head.Status) {
				t.Errorf("run span status %q, want %q", st, head.Status)
			}
		case kind != "":
			p := byID[parent]
			if p == nil {
				t.Errorf("op span %q: parent %s not exported", s.Name, parent)
				continue
			}
			if _, ok := attr(p, "flock.phase"); !ok {
				t.Errorf("op span %q: parent %q is not a phase span", s.Name, p.Name)
			}
			if kind == "generate" {
				generates++
				for _, k := range []string{"gen_ai.operation.name", "gen_ai.request.model", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"} {
					if _, ok := attr(s, k); !ok {
						t.Errorf("generate span %q lacks %s", s.Name, k)
					}
				}
				if s.Kind != tracepb.Span_SPAN_KIND_CLIENT {
					t.Errorf("generate span kind %v, want client", s.Kind)
				}
			}
		default:
			if parent != runSpan {
				t.Errorf("phase span %q: parent %s, want the run span %s", s.Name, parent, runSpan)
			}
			var step int64
			for _, a := range s.Attributes {
				if a.Key == "flock.step" {
					step = a.Value.GetIntValue()
				}
			}
			if steps[step] {
				t.Errorf("step %d has two phase spans", step)
			}
			steps[step] = true
		}
	}
	if _, ok := byID[runSpan]; !ok {
		t.Errorf("no run span among %d spans", len(spans))
	}
	for s := int64(1); s <= int64(head.Step); s++ {
		if !steps[s] {
			t.Errorf("step %d of %d has no phase span", s, head.Step)
		}
	}
	if generates == 0 {
		t.Errorf("no generate op spans among %d spans", len(spans))
	}
}

// TestTriframeSpanTree runs the triframe agent on the simulated model with
// OTEL_EXPORTER_OTLP_ENDPOINT pointing at a receiver in the test, and
// checks the span tree that arrives over OTLP/HTTP.
func TestTriframeSpanTree(t *testing.T) {
	c := newCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "flock-test")
	a := openApp(t, t.TempDir())
	if a.Tracer == nil {
		t.Fatal("tracing is on in the environment but the app has no tracer")
	}
	run, err := a.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: "triframe", Settings: triframeSettings(t), Task: task})
	if err != nil {
		t.Fatal(err)
	}
	id := run.ID
	head := waitRun(t, a, id, ended)
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if head.Status != state.StatusSucceeded {
		t.Fatalf("run %s: %s (%s)", id, head.Status, head.Error)
	}
	spans := c.snapshot()
	checkTree(t, spans, head)
	if c.service != "flock-test" {
		t.Errorf("service.name = %q, want OTEL_SERVICE_NAME", c.service)
	}
	if s := a.Tracer.Stats(); s.Failed != 0 || s.Dropped != 0 || s.Exported != uint64(len(spans)) {
		t.Errorf("stats %+v, collector got %d spans", s, len(spans))
	}
}

// TestResumedRunKeepsItsTrace stops the server while a run is in flight,
// opens it again on the same data directory (the run resumes), and checks
// that the spans of both lives form one trace with one span per step.
func TestResumedRunKeepsItsTrace(t *testing.T) {
	c := newCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.srv.URL)
	dir := t.TempDir()
	a := openApp(t, dir)
	run, err := a.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: "triframe", Settings: triframeSettings(t), Task: task})
	if err != nil {
		t.Fatal(err)
	}
	id := run.ID
	mid := waitRun(t, a, id, func(h state.Run) bool { return h.Step >= 4 || h.Status.Terminal() })
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if mid.Status.Terminal() {
		t.Fatalf("run ended before the stop at step %d; the test needs it in flight", mid.Step)
	}
	before := len(c.snapshot())
	a = openApp(t, dir)
	head := waitRun(t, a, id, ended)
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := c.snapshot()
	if before == 0 || len(spans) == before {
		t.Fatalf("spans: %d before the restart, %d after; want both lives to export", before, len(spans))
	}
	checkTree(t, spans, head)
}

// TestCollectorDownLeavesRunsAlone points the exporter at a closed port:
// the run finishes as usual and the failed spans are counted.
func TestCollectorDownLeavesRunsAlone(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "200")
	a := openApp(t, t.TempDir())
	run, err := a.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: "triframe", Settings: triframeSettings(t), Task: task})
	if err != nil {
		t.Fatal(err)
	}
	id := run.ID
	head := waitRun(t, a, id, ended)
	if err := a.Close(context.Background()); err != nil {
		t.Fatalf("close with the collector down: %v", err)
	}
	if head.Status != state.StatusSucceeded {
		t.Fatalf("run %s: %s (%s)", id, head.Status, head.Error)
	}
	if s := a.Tracer.Stats(); s.Failed == 0 || s.Exported != 0 {
		t.Errorf("stats %+v, want failed spans and none exported", s)
	}
}

// TestRolloutIsOneTrace runs a rollout (a parent run spawning lanes that
// spawn a chain run per task and chain) through the command line: every run's spans are in
// the root run's trace, and each chain's run span hangs under the spawn op
// that started it.
func TestRolloutIsOneTrace(t *testing.T) {
	c := newCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.srv.URL)
	var out, errb bytes.Buffer
	code := cli.Main(context.Background(), []string{"rollout", "--config", "../configs/examples/rollout.yaml",
		"--mode", "simulated", "--data", t.TempDir(), "--output-dir", t.TempDir()}, &out, &errb)
	if code != 0 {
		t.Fatalf("rollout exited %d: %s", code, errb.String())
	}
	spans := c.snapshot()
	byID := map[string]*tracepb.Span{}
	traces := map[string]bool{}
	for _, s := range spans {
		byID[hex.EncodeToString(s.SpanId)] = s
		traces[hex.EncodeToString(s.TraceId)] = true
	}
	if len(traces) != 1 {
		t.Fatalf("%d spans in %d traces, want one trace", len(spans), len(traces))
	}
	var runs, chains int
	for _, s := range spans {
		run, ok := attr(s, "flock.run.id")
		if _, isRun := attr(s, "flock.workflow"); !ok || !isRun {
			continue
		}
		runs++
		if telemetry.RootRun(run) == run {
			continue
		}
		if wf, _ := attr(s, "flock.workflow"); wf == "react" {
			chains++
		}
		p := byID[hex.EncodeToString(s.ParentSpanId)]
		if p == nil {
			t.Errorf("child run %s: parent span not exported", run)
			continue
		}
		if k, _ := attr(p, "flock.op.kind"); k != "spawn" {
			t.Errorf("child run %s: parent span %q is a %q op, want spawn", run, p.Name, k)
		}
		if got, _ := attr(p, "flock.child.run"); got != run {
			t.Errorf("spawn op %q names child %q, want %q", p.Name, got, run)
		}
	}
	// The rollout runs its chains in lanes (max_concurrency of them), each
	// lane a child run spawning its chains in turn.
	if chains != 12 || runs < 13 {
		t.Errorf("%d run spans, %d of them react chains; want 12 chains (4 tasks × 3) under the rollout", runs, chains)
	}
}
