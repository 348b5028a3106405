package workflows_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// electingStore fails the next reads of a run's head given to outage with
// state.ErrUnavailable, as a cluster store does while its streams elect
// new leaders.
type electingStore struct {
	state.Store
	mu    sync.Mutex
	fails int // guarded by mu
	// kids fails the next listings of a run's children: what a cancel
	// reads after it stopped the run; guarded by mu.
	kids int
}

func (s *electingStore) outage(n, kids int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails, s.kids = n, kids
}

// fail uses up one of the failures *n counts: an error wrapping
// state.ErrUnavailable while there are any, else nil.
func (s *electingStore) fail(n *int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if *n == 0 {
		return nil
	}
	*n--
	return fmt.Errorf("%w: no leader yet", state.ErrUnavailable)
}

func (s *electingStore) Children(ctx context.Context, id string) ([]string, error) {
	if err := s.fail(&s.kids); err != nil {
		return nil, err
	}
	return s.Store.Children(ctx, id)
}

func (s *electingStore) Run(ctx context.Context, id string) (state.Run, error) {
	if err := s.fail(&s.fails); err != nil {
		return state.Run{}, err
	}
	return s.Store.Run(ctx, id)
}

// TestControlWaitsOutElection: Pause, Resume and Cancel sent while the
// store does not answer (state.ErrUnavailable) wait for it and succeed,
// so that a client is not told to try again (issue 28.2's 503 after a
// NATS server rejoined); a cancel whose first try stopped the run before
// a read failed succeeds too, not "already ended".
func TestControlWaitsOutElection(t *testing.T) {
	s := newSleeper()
	reg := phases.NewRegistry()
	reg.MustRegister(s.workflow())
	var st *electingStore
	e := newEnvWith(t, reg, nil, func(c *workflows.Config) {
		st = &electingStore{Store: c.Store}
		c.Store = st
	})
	id := e.start("sleeper", "", "1h").ID
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	other := e.start("sleeper", "", "1h").ID
	for _, step := range []struct {
		name       string
		id         string
		do         func(context.Context, string) error
		heads, kid int // failed reads of the head, of the children
		want       state.Status
	}{
		{"pause", id, e.ex.Pause, 3, 0, state.StatusPaused},
		{"resume", id, e.ex.Resume, 3, 0, state.StatusRunning},
		{"cancel", id, e.ex.Cancel, 3, 0, state.StatusCancelled},
		{"cancel, the children unread", other, e.ex.Cancel, 0, 1, state.StatusCancelled},
	} {
		st.outage(step.heads, step.kid)
		if err := step.do(ctx, step.id); err != nil {
			t.Fatalf("%s during an election: %v", step.name, err)
		}
		if h, err := e.store.Run(ctx, step.id); err != nil || h.Status != step.want {
			t.Fatalf("after %s: %s, %v; want %s", step.name, h.Status, err, step.want)
		}
	}
}

// lateDriver is a cluster's dispatcher in which another node takes a run
// up just as it is asked to act on it, and can be reached only from the
// next ask on (its control subscription not yet known to the asker): the
// first Control finds nobody (handled false) after the take-up is in the
// store, every later one is answered by that node.
type lateDriver struct {
	store state.Store
	mu    sync.Mutex
	asked int // guarded by mu
	err   error
}

func (d *lateDriver) Enqueue(context.Context, string, time.Time) error { return nil }
func (d *lateDriver) Unloaded(string, workflows.Unload)                {}

func (d *lateDriver) Control(ctx context.Context, id string, req workflows.ControlRequest) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.asked++
	if d.asked > 1 {
		return true, nil // the driving node acted on the run
	}
	h, err := d.store.Run(ctx, id)
	if err == nil {
		now := time.Now().UTC()
		h.Driver, h.DrivenSince = "n2", &now
		err = d.store.Commit(ctx, &state.Commit{RunID: id, ExpectRevision: h.Revision, Run: &h})
	}
	d.err = err
	return false, nil
}

// TestControlAfterLateTakeUp: a pause or cancel of a run no node answered
// for is written to the store fenced by the head read before asking, not
// after: a node that took the run up meanwhile (and could not be reached
// yet) fences that write, and the request is asked of it again, instead of
// the run being marked paused or cancelled in the store while that node
// goes on driving it.
func TestControlAfterLateTakeUp(t *testing.T) {
	s := newSleeper()
	reg := phases.NewRegistry()
	reg.MustRegister(s.workflow())
	for _, c := range []struct {
		name string
		do   func(*workflows.Executor) func(context.Context, string) error
	}{
		{"pause", func(ex *workflows.Executor) func(context.Context, string) error { return ex.Pause }},
		{"cancel", func(ex *workflows.Executor) func(context.Context, string) error { return ex.Cancel }},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := &lateDriver{}
			e := newEnvWith(t, reg, nil, func(cfg *workflows.Config) {
				d.store = cfg.Store
				cfg.Dispatcher = d
			})
			e.refusals = true // the write over the take-up is refused, by design
			id := e.start("sleeper", "", "1h").ID
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := c.do(e.ex)(ctx, id); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			h, err := e.store.Run(ctx, id)
			if err != nil || d.err != nil {
				t.Fatal(err, d.err)
			}
			if d.asked != 2 || h.Status != state.StatusRunning || h.Driver != "n2" {
				t.Fatalf("asked %d times; head %s, driven by %q: want asked twice, the run left to node n2 (running)", d.asked, h.Status, h.Driver)
			}
		})
	}
}
