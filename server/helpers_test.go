package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers"
	_ "github.com/flockrun/flock/handlers/files"
	_ "github.com/flockrun/flock/handlers/human"
	_ "github.com/flockrun/flock/handlers/spawn"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/internal/testkit/testrun"
	"github.com/flockrun/flock/internal/testkit/teststore"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/bolt"
	"github.com/flockrun/flock/workflows"
)

// Test workflows:
//
//   - test.log: "start" appends 3 entries and asks for 3 log ops, "finish"
//     appends one more and succeeds with {"answer":42}.
//   - test.fail: "start" ends the run as failed.
//   - test.wait: "start" asks for one bash op, which the test's bash handler
//     holds until the env's gate is opened or the op is cancelled; "finish"
//     then succeeds.
func testRegistry(tb testing.TB) *phases.Registry {
	tb.Helper()
	reg := phases.NewRegistry()
	msg := func(text string) phases.Entry {
		return phases.Entry{Type: "message", Data: json.RawMessage(strconv.Quote(text))}
	}
	logOp := func(content string) operations.Request {
		return operations.Request{Kind: operations.KindLog, Params: &operations.LogRequest{Content: content}}
	}
	reg.MustRegister(phases.Workflow{
		Name:        "test.log",
		Description: "logs three lines and succeeds",
		Start:       "start",
		Phases: []phases.PhaseSpec{
			{Name: "start", Next: []string{"finish"}, Run: func(in phases.Input) (phases.Output, error) {
				return phases.Output{
					Ops:    []operations.Request{logOp("one"), logOp("two"), logOp("three")},
					Append: []phases.Entry{msg("a"), msg("b"), msg("c")},
					Next:   "finish",
				}, nil
			}},
			{Name: "finish", Run: func(in phases.Input) (phases.Output, error) {
				return phases.Output{
					Append: []phases.Entry{msg("d")},
					End:    &phases.End{Reason: "done", Result: json.RawMessage(`{"answer":42}`)},
				}, nil
			}},
		},
	})
	reg.MustRegister(phases.Workflow{
		Name:  "test.fail",
		Start: "start",
		Phases: []phases.PhaseSpec{
			{Name: "start", Run: func(in phases.Input) (phases.Output, error) {
				return phases.Output{End: &phases.End{Failed: true, Reason: "told_to_fail"}}, nil
			}},
		},
	})
	reg.MustRegister(phases.Workflow{
		Name:  "test.wait",
		Start: "start",
		Phases: []phases.PhaseSpec{
			{Name: "start", Next: []string{"finish"}, Run: func(in phases.Input) (phases.Output, error) {
				return phases.Output{
					Ops:  []operations.Request{{Kind: operations.KindBash, Params: &operations.BashRequest{Command: "sleep 3600"}}},
					Next: "finish",
				}, nil
			}},
			{Name: "finish", Run: func(in phases.Input) (phases.Output, error) {
				return phases.Output{}, nil
			}},
		},
	})
	reg.MustRegister(phases.Workflow{
		Name:        "test.parent",
		Description: "spawns test.wait and ends with it",
		Start:       "start",
		Phases: []phases.PhaseSpec{
			{Name: "start", Next: []string{"finish"}, Run: func(in phases.Input) (phases.Output, error) {
				return phases.Output{
					Ops:  []operations.Request{operations.NewSpawn(operations.SpawnRequest{Workflow: "test.wait", Name: "child"})},
					Next: "finish",
				}, nil
			}},
			{Name: "finish", Run: func(in phases.Input) (phases.Output, error) {
				return phases.Output{}, nil
			}},
		},
	})
	return reg
}

// lookupHandler returns the registered handler package serving kind.
func lookupHandler(tb testing.TB, kind operations.Kind) handlers.Info {
	tb.Helper()
	info, ok := handlers.Lookup(kind)
	if !ok {
		tb.Fatalf("no handler registered for %s", kind)
	}
	return info
}

// env is a real server on 127.0.0.1:0 over a real executor and bbolt file.
type env struct {
	srv   *Server
	ex    *workflows.Executor
	store *bolt.Store
	base  string // http://127.0.0.1:port
	token string // sent as a bearer token when set
	// gate releases the bash ops of test.wait when closed.
	gate chan struct{}
	// step releases one bash op per value sent.
	step chan struct{}
}

// newEnv starts a store, an executor and a server; cleanup stops them in
// reverse order. opts adjust the server configuration before New.
func newEnv(tb testing.TB, opts ...func(*configs.Server)) *env {
	tb.Helper()
	return newEnvSetup(tb, envSetup{}, opts...)
}

// envSetup adjusts an env before its server starts.
type envSetup struct {
	// engine wraps the engine the server is given (a fake that changes
	// some of the executor's behaviour).
	engine func(Engine) Engine
	// server adjusts the server before Start.
	server func(*Server)
	// dir, when set, is the data directory (a restart opens the same).
	dir string
	// operator registers the operator tests' workflows too.
	operator bool
	// extra registers a test's own workflows and handlers.
	extra func(reg *phases.Registry, hs map[operations.Kind]handlers.Handler)
}

// stop shuts the env down (server, executor, store) before the test ends,
// so that another env can open its data directory.
func (e *env) stop(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		tb.Errorf("shutdown server: %v", err)
	}
	if err := e.ex.Stop(ctx); err != nil {
		tb.Errorf("stop executor: %v", err)
	}
	if err := e.store.Close(); err != nil {
		tb.Errorf("close store: %v", err)
	}
}

// newEnvSetup is newEnv with hooks that adjust the server before Start.
func newEnvSetup(tb testing.TB, setup envSetup, opts ...func(*configs.Server)) *env {
	tb.Helper()
	dir := setup.dir
	if dir == "" {
		dir = tb.TempDir()
	}
	st := teststore.OpenAt(tb, dir)
	e := &env{store: st, gate: make(chan struct{}), step: make(chan struct{})}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(testWriter{tb}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	hs := map[operations.Kind]handlers.Handler{
		operations.KindLog: handlers.HandlerFunc(func(ctx context.Context, _ handlers.Env, req operations.Request) operations.Result {
			return operations.Result{Kind: req.Kind, Meta: req.Meta, Data: &operations.RecordedResult{Recorded: true}}
		}),
		operations.KindBash: handlers.HandlerFunc(func(ctx context.Context, _ handlers.Env, req operations.Request) operations.Result {
			select {
			case <-e.gate:
				return operations.Result{Kind: req.Kind, Meta: req.Meta, Data: &operations.BashResult{}}
			case <-e.step:
				return operations.Result{Kind: req.Kind, Meta: req.Meta, Data: &operations.BashResult{}}
			case <-ctx.Done():
				return operations.Failed(req, "interrupted: %v", ctx.Err())
			}
		}),
	}
	reg := testRegistry(tb)
	if setup.operator {
		registerOperatorWorkflows(reg)
	}
	if setup.extra != nil {
		setup.extra(reg, hs)
	}
	ex := testrun.Executor(tb, workflows.Config{
		Store:    st,
		Registry: reg,
		Handlers: append(handlers.FromMap(hs), spawnInfo(), lookupHandler(tb, operations.KindHuman), lookupHandler(tb, operations.KindWriteFile)),
		RunsDir:  filepath.Join(dir, "runs"),
		Logger:   logger,
	})
	e.ex = ex

	cfg := configs.Server{Addr: "127.0.0.1:0"}
	for _, o := range opts {
		o(&cfg)
	}
	e.token = cfg.AuthToken
	var eng Engine = ex
	if setup.engine != nil {
		eng = setup.engine(eng)
	}
	srv, err := New(cfg, eng, st, logger)
	if err != nil {
		tb.Fatalf("new server: %v", err)
	}
	if setup.server != nil {
		setup.server(srv)
	}
	e.srv = srv
	e.base = testkit.Serve(tb, srv)
	return e
}

// testWriter sends log lines to the test log.
type testWriter struct{ tb testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// response is a finished HTTP exchange.
type response struct {
	status int
	header http.Header
	body   []byte
}

// errorMessage returns the "error" field of an error body.
func (r response) errorMessage(tb testing.TB) string {
	tb.Helper()
	var b struct {
		Error *string `json:"error"`
	}
	if err := json.Unmarshal(r.body, &b); err != nil || b.Error == nil {
		tb.Fatalf("status %d: body is not a JSON error: %q", r.status, r.body)
	}
	return *b.Error
}

// do sends a request with the env's token and reads the whole response.
func (e *env) do(tb testing.TB, method, path string, body io.Reader, header ...string) response {
	tb.Helper()
	req, err := http.NewRequest(method, e.base+path, body)
	if err != nil {
		tb.Fatalf("new request: %v", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		tb.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// getJSON GETs path, expects 200 and decodes the body into out.
func (e *env) getJSON(tb testing.TB, path string, out any) {
	tb.Helper()
	r := e.do(tb, http.MethodGet, path, nil)
	if r.status != http.StatusOK {
		tb.Fatalf("GET %s: status %d: %s", path, r.status, r.body)
	}
	if err := json.Unmarshal(r.body, out); err != nil {
		tb.Fatalf("GET %s: decode %q: %v", path, r.body, err)
	}
}

// start starts a run of workflow and returns its id.
func (e *env) start(tb testing.TB, workflow, task string) string {
	tb.Helper()
	body := fmt.Sprintf(`{"workflow":%q,"settings":{},"task":%q}`, workflow, task)
	r := e.do(tb, http.MethodPost, "/start_workflow", strings.NewReader(body))
	if r.status != http.StatusCreated {
		tb.Fatalf("start %s: status %d: %s", workflow, r.status, r.body)
	}
	var out api.RunStatus
	if err := json.Unmarshal(r.body, &out); err != nil || out.RunID == "" {
		tb.Fatalf("start %s: bad body %q (%v)", workflow, r.body, err)
	}
	return out.RunID
}

// head GETs a run's head.
func (e *env) head(tb testing.TB, id string) api.Run {
	tb.Helper()
	var v api.Run
	e.getJSON(tb, "/runs/"+id, &v)
	return v
}

// waitStatus polls a run until it has status want.
func (e *env) waitStatus(tb testing.TB, id string, want state.Status) api.Run {
	tb.Helper()
	var v api.Run
	testkit.CheckFor(tb, 10*time.Second, func() error {
		if v = e.head(tb, id); v.Status != want {
			return fmt.Errorf("run %s is %s, want %s", id, v.Status, want)
		}
		return nil
	})
	return v
}

// waitOps polls a run until it has journaled n ops.
func (e *env) waitOps(tb testing.TB, id string, n int) {
	tb.Helper()
	testkit.CheckFor(tb, 10*time.Second, func() error {
		var p struct {
			Ops []state.Op `json:"ops"`
		}
		e.getJSON(tb, "/runs/"+id+"/ops", &p)
		if len(p.Ops) != n {
			return fmt.Errorf("%d ops journaled, want %d", len(p.Ops), n)
		}
		return nil
	})
}

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct {
	id    uint64
	event string
	data  state.Event
}

// sseStream reads an event stream.
type sseStream struct {
	res    *http.Response
	sc     *bufio.Scanner
	cancel context.CancelFunc
	// comments counts comment lines (heartbeats) seen so far.
	comments int
}

// openEvents opens GET /runs/:id/events with optional extra headers and
// query; it expects 200 and an event stream.
func (e *env) openEvents(tb testing.TB, id, query string, header ...string) *sseStream {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base+"/runs/"+id+"/events"+query, nil)
	if err != nil {
		cancel()
		tb.Fatalf("new request: %v", err)
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		tb.Fatalf("open events: %v", err)
	}
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		cancel()
		tb.Fatalf("open events: status %d, type %q: %s", res.StatusCode, res.Header.Get("Content-Type"), b)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	s := &sseStream{res: res, sc: sc, cancel: cancel}
	tb.Cleanup(s.close)
	return s
}

func (s *sseStream) close() {
	s.cancel()
	s.res.Body.Close()
}

// next returns the next event, or ok=false at the end of the stream.
func (s *sseStream) next(tb testing.TB) (ev sseEvent, ok bool) {
	tb.Helper()
	var have bool
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "":
			if have {
				return ev, true
			}
		case strings.HasPrefix(line, ":"):
			s.comments++
		case strings.HasPrefix(line, "id: "):
			n, err := strconv.ParseUint(strings.TrimPrefix(line, "id: "), 10, 64)
			if err != nil {
				tb.Fatalf("bad id line %q", line)
			}
			ev.id, have = n, true
		case strings.HasPrefix(line, "event: "):
			ev.event, have = strings.TrimPrefix(line, "event: "), true
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.data); err != nil {
				tb.Fatalf("bad data line %q: %v", line, err)
			}
			have = true
		default:
			tb.Fatalf("unexpected SSE line %q", line)
		}
	}
	if err := s.sc.Err(); err != nil {
		tb.Fatalf("read events: %v", err)
	}
	return ev, false
}

// nextComment reads up to the next comment line (a heartbeat); it fails on
// any other line.
func (s *sseStream) nextComment(tb testing.TB) {
	tb.Helper()
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case strings.HasPrefix(line, ":"):
			s.comments++
			return
		case line != "":
			tb.Fatalf("unexpected line %q while waiting for a heartbeat", line)
		}
	}
	tb.Fatalf("stream ended while waiting for a heartbeat (%v)", s.sc.Err())
}

// readAll reads events until the server ends the stream.
func (s *sseStream) readAll(tb testing.TB) []sseEvent {
	tb.Helper()
	var evs []sseEvent
	for {
		ev, ok := s.next(tb)
		if !ok {
			return evs
		}
		evs = append(evs, ev)
	}
}

// checkSeqs checks that evs are numbered from+1, from+2, ... with matching
// id lines and event types, and that the last is the terminal run event.
func checkSeqs(tb testing.TB, evs []sseEvent, from uint64, final state.Status) {
	tb.Helper()
	if len(evs) == 0 {
		tb.Fatalf("no events after %d", from)
	}
	for i, ev := range evs {
		want := from + uint64(i) + 1
		if ev.id != want || ev.data.Seq != want {
			tb.Fatalf("event %d: id %d, data seq %d; want %d (gap or duplicate)", i, ev.id, ev.data.Seq, want)
		}
		if ev.event != string(ev.data.Type) {
			tb.Fatalf("event %d: event line %q, data type %q", i, ev.event, ev.data.Type)
		}
	}
	last := evs[len(evs)-1].data
	if last.Type != "run" || last.Status != state.EventStatus(final) {
		tb.Fatalf("last event is %s/%s, want run/%s", last.Type, last.Status, final)
	}
}

// spawnInfo is the registered spawn handler package.
func spawnInfo() handlers.Info {
	info, _ := handlers.Lookup(operations.KindSpawn)
	return info
}

// Operator test workflows (registered by testRegistry):
//
//   - test.count: "step" writes n<N>.txt (N = var n + 1) with write_file,
//     sets var n = N and loops until N reaches var until (default 5);
//     "done" ends with {"n", "note"}: note is the content of the newest
//     operator_message entry.
//   - test.ask: "ask" asks a human op (choices yes/no); "finish" ends
//     with {"answer": the answer}.
func registerOperatorWorkflows(reg *phases.Registry) {
	intVar := func(st phases.State, name string, def int) int {
		v := def
		if b := st.Var(name); b != nil {
			_ = json.Unmarshal(b, &v)
		}
		return v
	}
	reg.MustRegister(phases.Workflow{
		Name:  "test.count",
		Start: "step",
		Phases: []phases.PhaseSpec{
			{Name: "step", Next: []string{"step", "done"}, Run: func(in phases.Input) (phases.Output, error) {
				n := intVar(in.State, "n", 0) + 1
				next := "step"
				if n >= intVar(in.State, "until", 5) {
					next = "done"
				}
				return phases.Output{
					Ops: []operations.Request{{Kind: operations.KindWriteFile,
						Params: &operations.WriteFileRequest{Path: fmt.Sprintf("n%d.txt", n), Content: fmt.Sprintf("n=%d", n)}}},
					Append: []phases.Entry{{Type: "message", Data: json.RawMessage(strconv.Quote(fmt.Sprintf("step %d", n)))}},
					Set:    map[string]json.RawMessage{"n": json.RawMessage(strconv.Itoa(n))},
					Next:   next,
				}, nil
			}},
			{Name: "done", Run: func(in phases.Input) (phases.Output, error) {
				note := ""
				if i := phases.Last(in.State, "operator_message"); i >= 0 {
					var m struct {
						Content string `json:"content"`
					}
					_ = in.State.Entry(i).Decode(&m)
					note = m.Content
				}
				res, _ := json.Marshal(map[string]any{"n": intVar(in.State, "n", 0), "note": note})
				return phases.Output{End: &phases.End{Reason: "counted", Result: res}}, nil
			}},
		},
	})
	reg.MustRegister(phases.Workflow{
		Name:  "test.ask",
		Start: "ask",
		Phases: []phases.PhaseSpec{
			{Name: "ask", Next: []string{"finish"}, Run: func(in phases.Input) (phases.Output, error) {
				return phases.Output{
					Ops:  []operations.Request{operations.NewHuman(operations.HumanRequest{Question: "Ship it?", Choices: []string{"yes", "no"}})},
					Next: "finish",
				}, nil
			}},
			{Name: "finish", Run: func(in phases.Input) (phases.Output, error) {
				h := operations.Human.Result(in.Results[0])
				if h == nil {
					return phases.Output{}, fmt.Errorf("no answer: %s", in.Results[0].Error)
				}
				res, _ := json.Marshal(map[string]string{"answer": h.Text()})
				return phases.Output{End: &phases.End{Reason: "answered", Result: res}}, nil
			}},
		},
	})
}
