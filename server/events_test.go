package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/state"
)

// TestEventsLive follows a run from before its op finishes to its end, then
// resumes the stream from every point with Last-Event-ID and ?after=.
func TestEventsLive(t *testing.T) {
	e := newEnvSetup(t, envSetup{server: func(s *Server) { s.heartbeat = 20 * time.Millisecond }})
	id := e.start(t, "test.wait", "")

	s := e.openEvents(t, id, "")
	// Stored events first: created, then the phase commit of "start".
	var evs []sseEvent
	for len(evs) < 2 {
		ev, ok := s.next(t)
		if !ok {
			t.Fatalf("stream ended early after %d events", len(evs))
		}
		evs = append(evs, ev)
	}
	if evs[0].data.Type != "run" || evs[0].data.Status != state.EventStatus(state.StatusRunning) {
		t.Fatalf("first event = %+v", evs[0].data)
	}
	// The run waits on the gate: the stream must stay open with heartbeats.
	s.nextComment(t)
	close(e.gate)
	evs = append(evs, s.readAll(t)...)
	checkSeqs(t, evs, 0, state.StatusSucceeded)
	total := uint64(len(evs))

	tests := []struct {
		name   string
		query  string
		header []string
		from   uint64
	}{
		{"Last-Event-ID 1", "", []string{"Last-Event-ID", "1"}, 1},
		{"Last-Event-ID middle", "", []string{"Last-Event-ID", strconv.FormatUint(total/2, 10)}, total / 2},
		{"Last-Event-ID before last", "", []string{"Last-Event-ID", strconv.FormatUint(total-1, 10)}, total - 1},
		{"after param", "?after=2", nil, 2},
		{"header wins over param", "?after=1", []string{"Last-Event-ID", "3"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := e.openEvents(t, id, tt.query, tt.header...).readAll(t)
			checkSeqs(t, got, tt.from, state.StatusSucceeded)
			if uint64(len(got)) != total-tt.from {
				t.Fatalf("%d events, want %d", len(got), total-tt.from)
			}
		})
	}
	t.Run("nothing left", func(t *testing.T) {
		got := e.openEvents(t, id, "", "Last-Event-ID", strconv.FormatUint(total, 10)).readAll(t)
		if len(got) != 0 {
			t.Fatalf("got %d events after the final one", len(got))
		}
	})
}

// TestEventsReplayEnded reads the whole stream of runs that already ended.
func TestEventsReplayEnded(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name     string
		workflow string
		final    state.Status
	}{
		{"succeeded", "test.log", state.StatusSucceeded},
		{"failed", "test.fail", state.StatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := e.start(t, tt.workflow, "")
			e.waitStatus(t, id, tt.final)
			evs := e.openEvents(t, id, "").readAll(t)
			checkSeqs(t, evs, 0, tt.final)
		})
	}
}

// TestEventsCancelled follows a run that is cancelled while streaming.
func TestEventsCancelled(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "test.wait", "")
	s := e.openEvents(t, id, "")
	if _, ok := s.next(t); !ok {
		t.Fatal("no first event")
	}
	if r := e.do(t, http.MethodPost, "/runs/"+id+"/cancel", nil); r.status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	rest := s.readAll(t)
	if len(rest) == 0 {
		t.Fatal("no events after cancel")
	}
	checkSeqs(t, rest, 1, state.StatusCancelled)
}

// TestEventsManyClients starts several streams racing the run, from
// different points; each must see every event exactly once.
func TestEventsManyClients(t *testing.T) {
	e := newEnv(t)
	for round := 0; round < 5; round++ {
		id := e.start(t, "test.log", "")
		streams := make([]*sseStream, 4)
		for i := range streams {
			streams[i] = e.openEvents(t, id, "?after=0")
		}
		for i, s := range streams {
			evs := s.readAll(t)
			if len(evs) == 0 {
				t.Fatalf("round %d stream %d: no events", round, i)
			}
			checkSeqs(t, evs, 0, state.StatusSucceeded)
		}
	}
}

// TestEventsShutdown checks that Shutdown ends open streams instead of
// waiting for them.
func TestEventsShutdown(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "test.wait", "")
	s := e.openEvents(t, id, "")
	if _, ok := s.next(t); !ok {
		t.Fatal("no first event")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("shutdown took %v", d)
	}
	s.readAll(t) // the stream ends
	if _, err := http.Get(e.base + "/health"); err == nil {
		t.Fatal("server still answers after Shutdown")
	}
}

// TestEventsClientGone checks that a stream's handler returns when its
// client disconnects.
func TestEventsClientGone(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "test.wait", "")
	s := e.openEvents(t, id, "")
	if _, ok := s.next(t); !ok {
		t.Fatal("no first event")
	}
	if n := e.srv.streams.Load(); n != 1 {
		t.Fatalf("%d open streams, want 1", n)
	}
	s.close()
	testkit.CheckFor(t, 5*time.Second, func() error {
		if n := e.srv.streams.Load(); n != 0 {
			return fmt.Errorf("%d streams still open", n)
		}
		return nil
	})
}

// droppingEngine is an Engine whose subscriptions each deliver at most
// keep events and are then closed, as the executor does with a subscriber
// that falls behind.
type droppingEngine struct {
	Engine
	keep int
}

func (d droppingEngine) Subscribe(id string) (<-chan state.Event, func()) {
	return droppingSubscribe(d.Engine.Subscribe, d.keep)(id)
}

// droppingSubscribe wraps a subscribe function so that every subscription
// delivers at most keep events and is then closed.
func droppingSubscribe(real func(string) (<-chan state.Event, func()), keep int) func(string) (<-chan state.Event, func()) {
	return func(id string) (<-chan state.Event, func()) {
		in, unsubscribe := real(id)
		out := make(chan state.Event)
		stop := make(chan struct{})
		var once sync.Once
		go func() {
			defer close(out)
			for n := 0; n < keep; n++ {
				select {
				case ev, ok := <-in:
					if !ok {
						return
					}
					select {
					case out <- ev:
					case <-stop:
						return
					}
				case <-stop:
					return
				}
			}
		}()
		return out, func() {
			once.Do(func() { close(stop) })
			unsubscribe()
		}
	}
}

// TestEventsDroppedSubscription makes every live subscription close after
// one event: the stream must re-read the store and resubscribe without
// losing or repeating events. With an outage, the store's reads also fail
// with state.ErrUnavailable every other time (a cluster electing new
// leaders): the stream waits them out and still follows the run to its
// end (issue 28.5).
func TestEventsDroppedSubscription(t *testing.T) {
	for _, keep := range []int{0, 1, 2} {
		for _, outage := range []bool{false, true} {
			t.Run(fmt.Sprintf("keep %d outage %v", keep, outage), func(t *testing.T) {
				setup := envSetup{engine: func(eng Engine) Engine { return droppingEngine{eng, keep} }}
				if outage {
					setup.server = func(s *Server) { s.store = &outageReader{Reader: s.store} }
				}
				e := newEnvSetup(t, setup)
				id := e.start(t, "test.wait", "")
				s := e.openEvents(t, id, "")
				first, ok := s.next(t)
				if !ok {
					t.Fatal("no first event")
				}
				close(e.gate)
				evs := append([]sseEvent{first}, s.readAll(t)...)
				checkSeqs(t, evs, 0, state.StatusSucceeded)
			})
		}
	}
}

// TestEventsDescendants streams a parent with ?descendants=true: its own
// stored events keep their ids, and its child's events arrive live, without
// an id line, tagged with the child's run id; the stream ends with the
// parent.
func TestEventsDescendants(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "test.parent", "")
	s := e.openEvents(t, id, "?descendants=true")
	plain := e.openEvents(t, id, "")
	close(e.gate)
	var own, child []sseEvent
	for _, ev := range s.readAll(t) {
		if ev.data.Seq == 0 {
			if ev.id != 0 || ev.data.RunID == "" || ev.data.RunID == id {
				if ev.data.RunID != id || ev.data.Status != "started" {
					t.Fatalf("bad live event %+v", ev)
				}
				continue
			}
			child = append(child, ev)
			continue
		}
		own = append(own, ev)
	}
	checkSeqs(t, own, 0, state.StatusSucceeded)
	if len(child) < 2 {
		t.Fatalf("saw %d events of the child: %+v", len(child), child)
	}
	var childEnd bool
	for _, ev := range child {
		if ev.data.Type == "run" && ev.data.Status == "succeeded" {
			childEnd = true
		}
	}
	if !childEnd {
		t.Fatalf("the child's end did not reach the parent's stream: %+v", child)
	}
	for _, ev := range plain.readAll(t) {
		if ev.data.Seq == 0 {
			t.Fatalf("a plain stream carried a live event: %+v", ev)
		}
	}
	if r := e.do(t, http.MethodGet, "/runs/"+id+"/events?descendants=maybe", nil); r.status != http.StatusBadRequest {
		t.Fatalf("bad descendants value: %d %s", r.status, r.body)
	}
}

// outageReader is a store whose run and event reads fail with
// state.ErrUnavailable every other time after the first, as a cluster
// store's do while its streams elect new leaders.
type outageReader struct {
	state.Reader
	mu    sync.Mutex
	calls int // guarded by mu
}

func (o *outageReader) down() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	if o.calls > 1 && o.calls%2 == 0 {
		return fmt.Errorf("%w: electing a leader", state.ErrUnavailable)
	}
	return nil
}

func (o *outageReader) Run(ctx context.Context, id string) (state.Run, error) {
	if err := o.down(); err != nil {
		return state.Run{}, err
	}
	return o.Reader.Run(ctx, id)
}

func (o *outageReader) Events(ctx context.Context, id string, after uint64, limit int) ([]state.Event, error) {
	if err := o.down(); err != nil {
		return nil, err
	}
	return o.Reader.Events(ctx, id, after, limit)
}
