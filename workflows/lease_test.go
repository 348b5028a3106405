package workflows_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/internal/testkit/testrun"
	"github.com/flockrun/flock/internal/testkit/teststore"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// TestSecondOwnerCannotTakeDrivenRun: while an executor drives a run, a
// second owner on the same store (a direct client, or a second executor
// starting up) can neither claim it nor drive it; once the run ends its
// lease is released.
func TestSecondOwnerCannotTakeDrivenRun(t *testing.T) {
	ctx := context.Background()
	reg := phases.NewRegistry()
	reg.MustRegister(fanout(2))
	b := newBlocker()
	e := newEnv(t, reg, map[operations.Kind]handlers.Handler{operations.KindBash: b})
	h := e.start("fanout", "", "")
	for range 2 {
		<-b.started
	}
	if _, err := e.store.Claim(ctx, h.ID, "node-b", time.Minute); !errors.Is(err, state.ErrLeaseHeld) {
		t.Fatalf("claim by node-b: %v, want ErrLeaseHeld", err)
	}
	ex2 := testrun.Executor(t, workflows.Config{Store: e.store, Registry: reg, Owner: "node-b",
		Handlers: []handlers.Info{handlers.Fixed(b, operations.KindBash)}, RunsDir: filepath.Join(e.dir, "runs")})
	if got := ex2.Active(); len(got) != 0 {
		t.Fatalf("second executor drives %v", got)
	}
	if got := e.ex.Active(); !slices.Equal(got, []string{h.ID}) {
		t.Fatalf("first executor drives %v", got)
	}
	close(b.release)
	if end := e.wait(h.ID); end.Status != state.StatusSucceeded {
		t.Fatalf("end = %s %q", end.Status, end.Error)
	}
	for i := range 2 {
		if n := b.count(state.OpID(h.ID, 1, i)); n != 1 {
			t.Fatalf("op %d ran %d times, want once (by the first executor only)", i, n)
		}
	}
	testkit.WaitFor(t, "the ended run's lease to be released", func() bool {
		_, err := e.store.Claim(ctx, h.ID, "node-b", time.Minute)
		return err == nil
	})
}

// TestFencedExecutorStopsWriting: when another owner writes a run's head
// (as a node that claimed the run after this one's lease lapsed would),
// the executor that was driving it has its next commit fenced: nothing of
// it is written, and it stops driving the run, leaving it running for its
// new owner.
func TestFencedExecutorStopsWriting(t *testing.T) {
	ctx := context.Background()
	reg := phases.NewRegistry()
	reg.MustRegister(fanout(2))
	b := newBlocker()
	e := newEnv(t, reg, map[operations.Kind]handlers.Handler{operations.KindBash: b})
	e.refusals = true
	h := e.start("fanout", "", "")
	for range 2 {
		<-b.started
	}
	head, err := e.store.Run(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	rev := head.Revision
	takeover := &state.Commit{RunID: h.ID, ExpectRevision: rev, Run: &head,
		Events: []state.Event{{Time: time.Now().UTC(), Type: "run", Status: "running", Message: "taken over by node-b"}}}
	if err := e.store.Commit(ctx, takeover); err != nil {
		t.Fatalf("takeover commit: %v", err)
	}
	close(b.release) // the zombie's ops finish and it tries to journal them
	testkit.WaitFor(t, "the fenced executor to stop driving the run", func() bool {
		return len(e.ex.Active()) == 0
	})
	ops, err := e.store.StepOps(ctx, h.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if op.Status != state.OpPending {
			t.Fatalf("op %s is %s: the fenced executor wrote its result", op.ID, op.Status)
		}
	}
	got, err := e.store.Run(ctx, h.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision != rev+1 || got.Status != state.StatusRunning {
		t.Fatalf("head after the fence: revision %d status %s, want %d running", got.Revision, got.Status, rev+1)
	}
	evs, err := e.store.Events(ctx, h.ID, takeover.Events[0].Seq, 100)
	if err != nil || len(evs) != 0 {
		t.Fatalf("events written after the takeover: %v %v", evs, err)
	}
	if st := e.store.Stats(); st.Rejected == 0 {
		t.Fatal("no commit was refused")
	}
}

// holdStore is a store whose lease renewals can be held unanswered, as
// from a node stopped with SIGSTOP, frozen, or cut off from the store.
type holdStore struct {
	state.Store
	mu   sync.Mutex
	held chan struct{} // closed to answer the held renewals; nil: not held
}

func (s *holdStore) hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = make(chan struct{})
}

func (s *holdStore) answer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.held)
	s.held = nil
}

func (s *holdStore) Renew(ctx context.Context, id, owner string, ttl time.Duration) (state.Lease, error) {
	s.mu.Lock()
	held := s.held
	s.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-ctx.Done():
			return state.Lease{}, ctx.Err()
		}
	}
	return s.Store.Renew(ctx, id, owner, ttl)
}

// TestLapsedLeaseStartsNothing (issue 28.1): in cluster mode, when the
// store stops confirming a run's lease, the node stops the run's
// operation in flight and starts none of the operations queued behind it,
// even once the first one's process ends: by its own clock the lease may
// have lapsed, and another node claims the run. When the store answers
// again that the lease is lost, the node lets the run go.
func TestLapsedLeaseStartsNothing(t *testing.T) {
	dir := t.TempDir()
	st := &holdStore{Store: teststore.OpenAt(t, dir)}
	reg := phases.NewRegistry()
	reg.MustRegister(fanout(3))
	b := newBlocker()
	d := &unloadRecorder{unloaded: map[string]workflows.Unload{}}
	const ttl = 400 * time.Millisecond
	ex := testrun.Executor(t, workflows.Config{Store: st, Registry: reg, RunsDir: filepath.Join(dir, "runs"), Dispatcher: d,
		LeaseTTL: ttl, Concurrency: map[string]int{string(operations.KindBash): 1},
		Handlers: []handlers.Info{handlers.Fixed(b, operations.KindBash)}})
	ctx := context.Background()
	h := testrun.Start(t, ex, workflows.StartRequest{Workflow: "fanout"})
	if err := ex.Drive(ctx, h.ID); err != nil {
		t.Fatal(err)
	}
	first := <-b.started // one op runs; the two others wait for the bash slot
	st.hold()
	// The lease expires in the store: another node claims the run.
	testkit.WaitFor(t, "another node's claim", func() bool {
		_, err := st.Store.Claim(ctx, h.ID, "node-b", time.Minute)
		return err == nil
	})
	close(b.release) // the first op's process would end now
	st.answer()      // the store answers again: the lease is lost
	testkit.WaitFor(t, "the node to let the run go", func() bool { return len(ex.Active()) == 0 })
	if u, _ := d.get(h.ID); u.Reason != workflows.UnloadLost {
		t.Fatalf("unload %v, want %v", u.Reason, workflows.UnloadLost)
	}
	for i := range 3 {
		id := state.OpID(h.ID, 1, i)
		if n, want := b.count(id), map[bool]int{true: 1}[id == first]; n != want {
			t.Errorf("op %s started %d times, want %d", id, n, want)
		}
	}
	ops, err := st.StepOps(ctx, h.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if op.Status != state.OpPending {
			t.Errorf("op %s is %s: the node journaled it after its lease lapsed", op.ID, op.Status)
		}
	}
}
