package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/client"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/internal/testkit/testrun"
	"github.com/flockrun/flock/internal/testkit/teststore"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/server"
	"github.com/flockrun/flock/workflows"
)

const token = "client-test-token-0123456789"

// world is a real store, executor and server on 127.0.0.1:0.
//
// Workflows: "hello" appends two entries and succeeds with "hello, <task>";
// "gate" asks for one bash op that the test's handler holds until gate is
// closed (or the op is cancelled), then succeeds.
type world struct {
	ex   *workflows.Executor
	srv  *server.Server
	addr string
	c    *client.Client
	gate chan struct{}
}

func newWorld(t *testing.T) *world {
	t.Helper()
	dir := t.TempDir()
	st := teststore.OpenAt(t, dir)
	reg := phases.NewRegistry()
	reg.MustRegister(phases.Workflow{Name: "hello", Start: "greet", Phases: []phases.PhaseSpec{{
		Name: "greet",
		Run: func(in phases.Input) (phases.Output, error) {
			return phases.Output{
				Append: []phases.Entry{{Type: "message", Data: json.RawMessage(`"one"`)}, {Type: "message", Data: json.RawMessage(`"two"`)}},
				End:    &phases.End{Result: json.RawMessage(`"hello, ` + in.Run.Task + `"`)},
			}, nil
		},
	}}})
	reg.MustRegister(phases.Workflow{Name: "gate", Start: "start", Phases: []phases.PhaseSpec{
		{Name: "start", Next: []string{"finish"}, Run: func(in phases.Input) (phases.Output, error) {
			return phases.Output{Ops: []operations.Request{operations.NewBash("wait", 10)}, Next: "finish"}, nil
		}},
		{Name: "finish", Run: func(in phases.Input) (phases.Output, error) { return phases.Output{}, nil }},
	}})
	w := &world{gate: make(chan struct{})}
	hs := map[operations.Kind]handlers.Handler{
		operations.KindBash: handlers.HandlerFunc(func(ctx context.Context, _ handlers.Env, req operations.Request) operations.Result {
			select {
			case <-w.gate:
				return operations.Result{Kind: req.Kind, Meta: req.Meta, Data: &operations.BashResult{}}
			case <-ctx.Done():
				return operations.Failed(req, "interrupted: %v", ctx.Err())
			}
		}),
	}
	w.ex = testrun.Executor(t, workflows.Config{Store: st, Registry: reg, Handlers: handlers.FromMap(hs), RunsDir: filepath.Join(dir, "runs")})
	w.serve(t, "127.0.0.1:0")
	c, err := client.New("http://"+w.addr, client.WithToken(token))
	if err != nil {
		t.Fatal(err)
	}
	w.c = c
	return w
}

// serve starts a server on addr over the world's executor.
func (w *world) serve(t *testing.T, addr string) {
	t.Helper()
	srv, err := server.New(configs.Server{Addr: addr, AuthToken: token}, w.ex, w.ex.Store(), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := srv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	w.srv, w.addr = srv, a.String()
}

func TestClientRunLifecycle(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	if h, err := w.c.Health(ctx); err != nil || h.Status != "ok" {
		t.Fatalf("Health = %+v, %v", h, err)
	}
	graphs, err := w.c.Workflows(ctx)
	if err != nil || len(graphs) != 2 || graphs[0].Name != "gate" || graphs[1].Name != "hello" {
		t.Fatalf("Workflows = %+v, %v", graphs, err)
	}
	started, err := w.c.Start(ctx, api.StartRequest{Workflow: "hello", Settings: json.RawMessage(`{}`), Task: "world"})
	if err != nil || started.RunID == "" || started.Status != "running" {
		t.Fatalf("Start = %+v, %v", started, err)
	}
	run, err := w.c.Wait(ctx, started.RunID)
	if err != nil || run.Status != "succeeded" || string(run.Result) != `"hello, world"` {
		t.Fatalf("Wait = %+v, %v", run, err)
	}
	if got, err := w.c.Run(ctx, started.RunID); err != nil || got.ID != started.RunID || got.Workflow != "hello" {
		t.Fatalf("Run = %+v, %v", got, err)
	}
	runs, err := w.c.Runs(ctx, client.RunsQuery{Workflow: "hello", Status: "succeeded", Limit: 10})
	if err != nil || len(runs.Runs) != 1 || runs.Runs[0].ID != started.RunID || runs.Next != "" {
		t.Fatalf("Runs = %+v, %v", runs, err)
	}
	if runs, err := w.c.Runs(ctx, client.RunsQuery{Workflow: "gate"}); err != nil || len(runs.Runs) != 0 {
		t.Fatalf("Runs of gate = %+v, %v", runs, err)
	}
	page, err := w.c.Entries(ctx, started.RunID, 0, 1)
	if err != nil || len(page.Entries) != 1 || string(page.Entries[0].Data) != `"one"` || page.Next != "1" {
		t.Fatalf("Entries page 1 = %+v, %v", page, err)
	}
	page, err = w.c.Entries(ctx, started.RunID, 1, 0)
	if err != nil || len(page.Entries) != 1 || string(page.Entries[0].Data) != `"two"` || page.Next != "" {
		t.Fatalf("Entries page 2 = %+v, %v", page, err)
	}
	if page, err := w.c.EntriesOfType(ctx, started.RunID, []string{"message", "other"}, 1, 10); err != nil || len(page.Entries) != 1 || page.Entries[0].Seq != 2 {
		t.Fatalf("EntriesOfType = %+v, %v", page, err)
	}
	if page, err := w.c.EntriesOfType(ctx, started.RunID, []string{"other"}, 0, 10); err != nil || len(page.Entries) != 0 || page.Next != "" {
		t.Fatalf("EntriesOfType of no entry = %+v, %v", page, err)
	}
	found, err := w.c.Runs(ctx, client.RunsQuery{Query: "WORLD", Top: true})
	if err != nil || len(found.Runs) != 1 || found.Runs[0].Task != "world" {
		t.Fatalf("Runs of a search = %+v, %v", found, err)
	}
	if found, err := w.c.Runs(ctx, client.RunsQuery{Query: "nobody"}); err != nil || len(found.Runs) != 0 {
		t.Fatalf("Runs of a search that finds nothing = %+v, %v", found, err)
	}
	if u, err := w.c.Usage(ctx, started.RunID, true); err != nil || u.Runs != 1 || len(u.Models) != 0 {
		t.Fatalf("Usage = %+v, %v", u, err)
	}
}

func TestClientControlAndOps(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	started, err := w.c.Start(ctx, api.StartRequest{Workflow: "gate"})
	if err != nil {
		t.Fatal(err)
	}
	id := started.RunID
	if st, err := w.c.Pause(ctx, id); err != nil || st.Status != "paused" {
		t.Fatalf("Pause = %+v, %v", st, err)
	}
	if _, err := w.c.Resume(ctx, id); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if _, err := w.c.Resume(ctx, id); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("Resume of a running run = %v, want ErrConflict", err)
	}
	close(w.gate)
	if run, err := w.c.Wait(ctx, id); err != nil || run.Status != "succeeded" {
		t.Fatalf("Wait = %+v, %v", run, err)
	}
	ops, err := w.c.Ops(ctx, id, "", 0)
	if err != nil || len(ops.Ops) == 0 || ops.Ops[0].Request.Type != "bash" || ops.Ops[len(ops.Ops)-1].Result == nil {
		t.Fatalf("Ops = %+v, %v", ops, err)
	}
	if rest, err := w.c.Ops(ctx, id, ops.Ops[0].ID, 0); err != nil || len(rest.Ops) != len(ops.Ops)-1 {
		t.Fatalf("Ops after %s = %+v, %v", ops.Ops[0].ID, rest, err)
	}
	if _, err := w.c.Cancel(ctx, id); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("Cancel of an ended run = %v, want ErrConflict", err)
	}
}

func TestClientErrors(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	_, err := w.c.Run(ctx, "nope")
	var ce *client.Error
	if !errors.As(err, &ce) || !errors.Is(err, client.ErrNotFound) || ce.Status != 404 ||
		ce.Message != `run "nope" not found` || ce.RequestID == "" {
		t.Fatalf("Run(nope) = %#v", err)
	}
	if _, err := w.c.Start(ctx, api.StartRequest{Workflow: "nope"}); !errors.Is(err, client.ErrBadRequest) ||
		!strings.Contains(err.Error(), `"nope" is not registered`) {
		t.Fatalf("Start(nope) = %v", err)
	}
	if _, err := w.c.Events(ctx, "nope", client.EventsOptions{}); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("Events(nope) = %v", err)
	}
	anon, err := client.New("http://" + w.addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anon.Runs(ctx, client.RunsQuery{}); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("Runs without a token = %v", err)
	}
	wrong, _ := client.New("http://"+w.addr, client.WithToken("wrong-token-wrong-token"))
	if _, err := wrong.Runs(ctx, client.RunsQuery{}); !errors.Is(err, client.ErrUnauthorized) || strings.Contains(err.Error(), "wrong-token") {
		t.Fatalf("Runs with a wrong token = %v", err)
	}
	if _, err := anon.Health(ctx); err != nil {
		t.Fatalf("Health needs no token: %v", err)
	}
	for _, base := range []string{"", "127.0.0.1:8080", "ftp://x", "http://"} {
		if _, err := client.New(base); err == nil {
			t.Errorf("New(%q) succeeded", base)
		}
	}
}

// TestClientEventsResume follows a run's events across a server restart:
// the stream reconnects with Last-Event-ID and delivers every stored event
// once, in order, up to the terminal one, then io.EOF.
func TestClientEventsResume(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	started, err := w.c.Start(ctx, api.StartRequest{Workflow: "gate"})
	if err != nil {
		t.Fatal(err)
	}
	id := started.RunID
	s, err := w.c.Events(ctx, id, client.EventsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var evs []api.Event
	for len(evs) < 2 { // created, then the commit of "start"
		ev, err := s.Next()
		if err != nil {
			t.Fatalf("event %d: %v", len(evs)+1, err)
		}
		evs = append(evs, ev)
	}
	// Restart the server on the same address while the run waits; the
	// stream's connection ends with it.
	addr := w.addr
	if err := w.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	w.serve(t, addr)
	close(w.gate)
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("after %d events: %v", len(evs), err)
		}
		evs = append(evs, ev)
	}
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d (gap or duplicate): %+v", i+1, ev.Seq, evs)
		}
	}
	if last := evs[len(evs)-1]; !last.Final() || last.Status != "succeeded" {
		t.Fatalf("last event = %+v", last)
	}
	if s.LastID() != uint64(len(evs)) {
		t.Errorf("LastID = %d, want %d", s.LastID(), len(evs))
	}

	// Starting after some event replays the rest; after the last, the
	// stream of an ended run is empty.
	s2, err := w.c.Events(ctx, id, client.EventsOptions{After: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if ev, err := s2.Next(); err != nil || ev.Seq != 3 {
		t.Fatalf("first event after 2 = %+v, %v", ev, err)
	}
	s3, err := w.c.Events(ctx, id, client.EventsOptions{After: uint64(len(evs))})
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	if ev, err := s3.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("Next after the last event = %+v, %v; want io.EOF", ev, err)
	}
}
