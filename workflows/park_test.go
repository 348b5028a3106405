package workflows_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
)

// sleeper is a test workflow whose phase, on its first call, waits for
// the duration given as the run's task (Output.Delay), and ends the run on
// its second call. calls counts the phase calls; woke records, per run,
// how long after its first call the second came.
type sleeper struct {
	calls atomic.Int64
	mu    sync.Mutex
	first map[string]time.Time
	woke  map[string]time.Duration
}

func newSleeper() *sleeper {
	return &sleeper{first: map[string]time.Time{}, woke: map[string]time.Duration{}}
}

func (s *sleeper) workflow() phases.Workflow {
	p := func(in phases.Input) (phases.Output, error) {
		s.calls.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		if in.Run.Step == 1 {
			d, err := time.ParseDuration(in.Run.Task)
			if err != nil {
				return phases.Output{}, err
			}
			s.first[in.Run.ID] = time.Now()
			return phases.Output{Next: "p", Delay: d}, nil
		}
		s.woke[in.Run.ID] = time.Since(s.first[in.Run.ID])
		return phases.Output{}, nil
	}
	return phases.Workflow{Name: "sleeper", Start: "p", Phases: []phases.PhaseSpec{{Name: "p", Run: p, Next: []string{"p"}}}}
}

// goroutinesAtMost waits until the process runs at most n goroutines.
func goroutinesAtMost(t *testing.T, n int, what string) {
	t.Helper()
	testkit.CheckFor(t, testkit.DefaultTimeout, func() error {
		if got := runtime.NumGoroutine(); got > n {
			return fmt.Errorf("%s: %d goroutines, want at most %d", what, got, n)
		}
		return nil
	})
}

// TestParkedRunsHoldNoGoroutine: a run waiting on a delay is parked, not
// driven by a sleeping goroutine, so N delayed runs cost a constant number
// of goroutines; it stays active (leased, Live, Wait), and Cancel, Pause,
// Resume and Stop act on it at once, as on a sleeping run.
func TestParkedRunsHoldNoGoroutine(t *testing.T) {
	const n, slack = 100, 10
	s := newSleeper()
	reg := phases.NewRegistry()
	reg.MustRegister(s.workflow())
	e := newEnv(t, reg, nil)
	base := runtime.NumGoroutine()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = e.start("sleeper", "", "1h").ID
	}
	testkit.WaitFor(t, "every run's first phase", func() bool { return s.calls.Load() == n })
	goroutinesAtMost(t, base+slack, fmt.Sprintf("%d parked runs", n))
	if got := e.ex.Active(); len(got) != n {
		t.Fatalf("active = %d runs, want %d (parked runs stay active)", len(got), n)
	}
	if l := e.ex.Live(ids[0]); !l.Empty() {
		t.Fatalf("live of a parked run = %+v, want empty", l)
	}

	// Cancel ends a parked run at once.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.ex.Cancel(ctx, ids[0]); err != nil {
		t.Fatalf("cancel a parked run: %v", err)
	}
	if end := e.wait(ids[0]); end.Status != state.StatusCancelled || end.EndReason != state.ReasonCancelled {
		t.Fatalf("cancelled parked run = %s/%s", end.Status, end.EndReason)
	}

	// Pause records it paused at once; Resume parks it again, still
	// waiting for the same WakeAt (the phase is not called again).
	if err := e.ex.Pause(ctx, ids[1]); err != nil {
		t.Fatalf("pause a parked run: %v", err)
	}
	h, _ := e.store.Run(ctx, ids[1])
	if h.Status != state.StatusPaused || slices.Contains(e.ex.Active(), ids[1]) {
		t.Fatalf("paused parked run: %s, active %v", h.Status, slices.Contains(e.ex.Active(), ids[1]))
	}
	if err := e.ex.Resume(ctx, ids[1]); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if h, _ := e.store.Run(ctx, ids[1]); h.Status != state.StatusRunning || h.WakeAt == nil {
		t.Fatalf("resumed run: %s, wake at %v", h.Status, h.WakeAt)
	}
	if !slices.Contains(e.ex.Active(), ids[1]) {
		t.Fatal("resumed run is not active")
	}
	goroutinesAtMost(t, base+slack, "parked runs after pause and resume")

	// Stop returns at once and leaves no goroutine of a parked run; the
	// runs stay running in the store and park again after the restart.
	e.close()
	goroutinesAtMost(t, base, "after Stop")
	if got := s.calls.Load(); got != n {
		t.Fatalf("phase calls = %d after Stop, want %d (a parked run is not called before its WakeAt)", got, n)
	}
	e.open()
	for _, id := range ids[1:] {
		if h, err := e.store.Run(ctx, id); err != nil || h.Status != state.StatusRunning {
			t.Fatalf("run %s after Stop: %s %v, want running", id, h.Status, err)
		}
	}
	testkit.WaitFor(t, "the runs resumed", func() bool { return len(e.ex.Active()) == n-1 })
	goroutinesAtMost(t, base+slack, "parked runs after a restart")
	if got := s.calls.Load(); got != n {
		t.Fatalf("phase calls = %d after the restart, want %d", got, n)
	}
}

// TestParkedRunsWake: parked runs are called again at their WakeAt, not
// before, and end.
func TestParkedRunsWake(t *testing.T) {
	const n = 20
	const delay = 200 * time.Millisecond
	s := newSleeper()
	reg := phases.NewRegistry()
	reg.MustRegister(s.workflow())
	e := newEnv(t, reg, nil)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = e.start("sleeper", "", delay.String()).ID
	}
	for _, id := range ids {
		if end := e.wait(id); end.Status != state.StatusSucceeded {
			t.Fatalf("run %s: %s %q", id, end.Status, end.Error)
		}
	}
	if got := s.calls.Load(); got != 2*n {
		t.Fatalf("phase calls = %d, want %d", got, 2*n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if d := s.woke[id]; d < delay {
			t.Fatalf("run %s called again %v after its delay of %v began", id, d, delay)
		}
	}
}

// TestStopRacesWake: Stop while parked runs are waking leaves no
// goroutine behind and no run half-driven: every run resumes after a
// restart and ends.
func TestStopRacesWake(t *testing.T) {
	const n = 50
	s := newSleeper()
	reg := phases.NewRegistry()
	reg.MustRegister(s.workflow())
	e := newEnv(t, reg, nil)
	base := runtime.NumGoroutine()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = e.start("sleeper", "", fmt.Sprintf("%dms", 1+i%5)).ID
	}
	e.close()
	goroutinesAtMost(t, base, "after Stop")
	e.open()
	for _, id := range ids {
		if end := e.wait(id); end.Status != state.StatusSucceeded {
			t.Fatalf("run %s: %s %q", id, end.Status, end.Error)
		}
	}
}
