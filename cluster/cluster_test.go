package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// startScript starts a script run on node n whose commands append to
// marker files marks/r<k>_c<i> and sleep between 50 and 250 ms.
func startScript(t testing.TB, n *testNode, marks string, k, commands int) string {
	t.Helper()
	cmds := make([]string, commands)
	for i := range cmds {
		cmds[i] = testkit.MarkerCommand(marks, k, i, []string{"0.05", "0.15", "0.25", "0.1"}[(i+k)%4])
	}
	settings, _ := json.Marshal(map[string]any{"commands": cmds})
	h, err := n.a.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: "script", Settings: settings})
	if err != nil {
		t.Fatalf("start run %d on %s: %v", k, n.name, err)
	}
	return h.ID
}

// waitEnded waits for every run to end in the shared store.
func waitEnded(t testing.TB, st state.Reader, ids []string, d time.Duration) {
	t.Helper()
	testkit.CheckFor(t, d, func() error {
		for _, id := range ids {
			h, err := st.Run(context.Background(), id)
			if err != nil {
				return err
			}
			if !h.Status.Terminal() {
				return fmt.Errorf("run %s is %s (step %d)", id, h.Status, h.Step)
			}
		}
		return nil
	})
}

// checkScriptRuns asserts that each run succeeded, every command was
// journaled, commands journaled before a crash ran once, interrupted ones
// at most twice, and the entry log is whole.
func checkScriptRuns(t testing.TB, st state.Reader, marks string, ids []string, commands int) (interrupted int) {
	t.Helper()
	ctx := context.Background()
	for k, id := range ids {
		h, err := st.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if h.Status != state.StatusSucceeded {
			t.Fatalf("run %d ended %s (%s): %s", k, h.Status, h.EndReason, h.Error)
		}
		ops, err := st.Ops(ctx, id, "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(ops) != commands {
			t.Fatalf("run %d: %d ops journaled, want %d", k, len(ops), commands)
		}
		for i, op := range ops {
			if op.Status != state.OpDone {
				t.Fatalf("run %d op %s is %s", k, op.ID, op.Status)
			}
			if testkit.CheckRanOnce(t, marks, k, i, op.Attempts) {
				interrupted++
			}
		}
		entries, err := st.Entries(ctx, id, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != commands {
			t.Fatalf("run %d: %d entries, want %d", k, len(entries), commands)
		}
		for i, e := range entries {
			if e.Seq != uint64(i+1) || e.Type != "command" {
				t.Fatalf("run %d entry %d = %+v", k, i, e)
			}
		}
	}
	return interrupted
}

// TestClusterSpreadsRuns: runs started on one node are claimed by exactly
// one node each, spread over the cluster, and all finish.
func TestClusterSpreadsRuns(t *testing.T) {
	began := time.Now()
	c := startCluster(t, clusterOpts{})
	t.Logf("cluster up in %v", time.Since(began))
	marks := t.TempDir()
	const runs, commands = 9, 3
	ids := make([]string, runs)
	for k := range ids {
		ids[k] = startScript(t, c.nodes[k%2], marks, k, commands)
	}
	waitEnded(t, c.nodes[0].store, ids, 60*time.Second)
	t.Logf("runs ended after %v", time.Since(began))
	checkScriptRuns(t, c.nodes[0].store, marks, ids, commands)
	per := make([]int64, len(c.nodes))
	var total int64
	for i, n := range c.nodes {
		per[i], _ = n.m.Dispatcher.Stats()
		total += per[i]
	}
	t.Logf("claims received per node: %v", per)
	if total < runs {
		t.Fatalf("%d claims received for %d runs", total, runs)
	}
	testkit.WaitFor(t, "no claim held after every run ended", func() bool {
		for _, n := range c.nodes {
			if n.m.Dispatcher.Held() != 0 {
				return false
			}
		}
		return true
	})
}

// TestClusterKillNodeTakeover kills the node driving a set of runs in the
// middle of their commands: every run finishes on another node, commands
// journaled before the crash ran once, interrupted ones at most twice,
// nothing is lost, and each run is driven again within AckWait + 1 s.
// The victim's JetStream leaderships are moved off first: a dead leader
// adds JetStream's election (4–9 s, see docs/benchmarks.md for kills
// without that care, and e2e's TestClusterCrashResume).
func TestClusterKillNodeTakeover(t *testing.T) {
	const ackWait = time.Second
	c := startCluster(t, clusterOpts{ackWait: ackWait})
	marks := t.TempDir()
	const runs, commands = 9, 60 // ~8 s a run: still running after the leaders moved
	ids := make([]string, runs)
	for k := range ids {
		ids[k] = startScript(t, c.nodes[k%3], marks, k, commands)
	}
	// Wait until every node drives something, then kill the one that
	// drives the most runs.
	var victim int
	var victims []string
	testkit.WaitFor(t, "every run driven", func() bool {
		by := map[int][]string{}
		for _, id := range ids {
			d := c.driver(id)
			if d < 0 {
				return false
			}
			by[d] = append(by[d], id)
		}
		victim = -1
		for i, l := range by {
			if victim < 0 || len(l) > len(victims) {
				victim, victims = i, l
			}
		}
		return true
	})
	c.moveLeadersOff(victim)
	time.Sleep(300 * time.Millisecond) // into the runs' commands
	running := 0
	var seen []string
	for _, id := range victims {
		h, err := c.nodes[victim].store.Run(context.Background(), id)
		if err == nil && h.Status == state.StatusRunning {
			running++
		}
		seen = append(seen, fmt.Sprintf("%s step %d (%v)", h.Status, h.Step, err))
	}
	if running == 0 {
		t.Fatalf("every run of %s ended before the kill (%v): the test would prove nothing", c.nodes[victim].name, seen)
	}
	killed := time.Now()
	c.kill(victim)
	t.Logf("killed %s, which drove %d runs", c.nodes[victim].name, len(victims))

	takeover := make(map[string]time.Duration)
	testkit.WaitWithin(t, 30*time.Second, "every run of the killed node driven elsewhere", func() bool {
		for _, id := range victims {
			if _, ok := takeover[id]; ok {
				continue
			}
			st := c.alive().store
			h, err := st.Run(context.Background(), id)
			if err == nil && h.Status.Terminal() || c.driver(id) >= 0 {
				takeover[id] = time.Since(killed)
			}
		}
		return len(takeover) == len(victims)
	})
	st := c.alive().store
	waitEnded(t, st, ids, 60*time.Second)
	interrupted := checkScriptRuns(t, st, marks, ids, commands)
	ds := make([]time.Duration, 0, len(takeover))
	for _, d := range takeover {
		ds = append(ds, d)
	}
	slices.Sort(ds)
	t.Logf("takeover after kill: min %v, max %v (AckWait %v); %d commands re-dispatched", ds[0].Round(time.Millisecond),
		ds[len(ds)-1].Round(time.Millisecond), ackWait, interrupted)
	// AckWait + 1 s, plus a second of slack for a loaded machine (-race).
	if worst := ds[len(ds)-1]; worst > ackWait+2*time.Second {
		t.Fatalf("slowest takeover %v, want within AckWait + 1 s (%v)", worst, ackWait+time.Second)
	}
}

// TestClusterZombieFenced: a node that stalls (its writes hang, it stops
// acknowledging its claims) loses its runs to another node; when it wakes
// it stops driving them, writing nothing (its lease lapsed by its own
// clock, so it commits nothing before the store tells it the lease is
// lost; a commit already on its way is fenced).
func TestClusterZombieFenced(t *testing.T) {
	c := startCluster(t, clusterOpts{ackWait: time.Second})
	marks := t.TempDir()
	// One command long enough for the stall to fall inside it.
	settings, _ := json.Marshal(map[string]any{"commands": []string{
		fmt.Sprintf("echo ran >> %s/a; sleep 1.5", marks), fmt.Sprintf("echo ran >> %s/b", marks)}})
	h, err := c.nodes[0].a.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: "script", Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	var z int
	testkit.WaitFor(t, "the run driven", func() bool { z = c.driver(h.ID); return z >= 0 })
	zombie := c.nodes[z]
	zombie.store.freeze()   // its lease renewals and commits hang
	zombie.dispatch.Close() // and its claims are no longer acknowledged
	other := -1
	testkit.WaitWithin(t, 20*time.Second, "another node to take the run over", func() bool {
		for i, n := range c.nodes {
			if i != z && slices.Contains(n.a.Executor.Active(), h.ID) {
				other = i
				return true
			}
		}
		return false
	})
	waitEnded(t, c.nodes[other].store, []string{h.ID}, 30*time.Second)
	zombie.store.thaw()
	testkit.WaitFor(t, "the zombie to stop driving the run", func() bool {
		return !slices.Contains(zombie.a.Executor.Active(), h.ID)
	})
	// The zombie found its lease lapsed by its own clock and stopped
	// the command; it learnt from the store that the lease was lost
	// before it tried to commit, or its commit was fenced.
	end, err := c.nodes[other].store.Run(context.Background(), h.ID)
	if err != nil {
		t.Fatal(err)
	}
	if end.Status != state.StatusSucceeded {
		t.Fatalf("run ended %s: %s", end.Status, end.Error)
	}
	ops, err := c.nodes[other].store.Ops(context.Background(), h.ID, "", 10)
	if err != nil || len(ops) != 2 {
		t.Fatalf("ops %+v, %v", ops, err)
	}
	if n := testkit.CountLines(t, marks+"/b"); n != 1 {
		t.Fatalf("second command ran %d times, want once", n)
	}
	t.Logf("zombie %s fenced (%d commits refused); the run finished on %s", zombie.name, zombie.store.fenced.Load(), c.nodes[other].name)
}

// TestClusterControlReachesDriver: cancel, pause and resume asked of a node
// that does not drive a run reach the node that does.
func TestClusterControlReachesDriver(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	marks := t.TempDir()
	start := func() (string, int) {
		settings, _ := json.Marshal(map[string]any{"commands": []string{
			fmt.Sprintf("echo ran >> %s/x; sleep 30", marks), "true"}})
		h, err := c.nodes[0].a.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: "script", Settings: settings})
		if err != nil {
			t.Fatal(err)
		}
		var d int
		testkit.WaitFor(t, "the run driven", func() bool { d = c.driver(h.ID); return d >= 0 })
		return h.ID, d
	}
	ctx := context.Background()
	id, d := start()
	asker := c.nodes[(d+1)%3].a.Executor
	if err := asker.Pause(ctx, id); err != nil {
		t.Fatalf("pause from another node: %v", err)
	}
	h, _ := asker.Store().Run(ctx, id)
	if h.Status != state.StatusPaused || c.driver(id) >= 0 {
		t.Fatalf("after pause: %s, driven by %d", h.Status, c.driver(id))
	}
	if err := asker.Resume(ctx, id); err != nil {
		t.Fatalf("resume: %v", err)
	}
	testkit.WaitFor(t, "the resumed run driven", func() bool { d = c.driver(id); return d >= 0 })
	asker = c.nodes[(d+2)%3].a.Executor
	began := time.Now()
	if err := asker.Cancel(ctx, id); err != nil {
		t.Fatalf("cancel from another node: %v", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("cancel took %v: the driver's sleep was not interrupted", took)
	}
	h, _ = asker.Store().Run(ctx, id)
	if h.Status != state.StatusCancelled {
		t.Fatalf("after cancel: %s", h.Status)
	}
	if err := asker.Cancel(ctx, id); !errors.Is(err, workflows.ErrEnded) {
		t.Fatalf("second cancel: %v, want ErrEnded", err)
	}
}

// TestClusterLongDelayHandsOff: a run waiting longer than HandoffDelay
// holds no lease and no node drives it; it is enqueued again when due and
// finishes.
func TestClusterLongDelayHandsOff(t *testing.T) {
	c := startCluster(t, clusterOpts{handoffDelay: 200 * time.Millisecond})
	ctx := context.Background()
	var ids []string
	for i := 0; i < 4; i++ {
		h, err := c.nodes[i%3].a.Executor.StartRun(ctx, workflows.StartRequest{Workflow: "test.sleeper", Task: "1500ms"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, h.ID)
	}
	testkit.WaitFor(t, "every run parked (waiting, driven nowhere)", func() bool {
		for _, id := range ids {
			h, err := c.nodes[0].store.Run(ctx, id)
			if err != nil || h.WakeAt == nil || c.driver(id) >= 0 {
				return false
			}
		}
		return true
	})
	testkit.WaitFor(t, "no claim held while every run waits", func() bool {
		for _, n := range c.nodes {
			if n.m.Dispatcher.Held() != 0 {
				return false
			}
		}
		return true
	})
	waitEnded(t, c.nodes[0].store, ids, 20*time.Second)
	for _, id := range ids {
		h, _ := c.nodes[0].store.Run(ctx, id)
		if h.Status != state.StatusSucceeded {
			t.Fatalf("run %s ended %s: %s", id, h.Status, h.Error)
		}
	}
}

// askWorkflow asks a person a question and ends once it is answered.
func askWorkflow() phases.Workflow {
	p := func(in phases.Input) (phases.Output, error) {
		if in.Run.Step == 1 {
			return phases.Output{Next: "p", Ops: []operations.Request{operations.NewHuman(operations.HumanRequest{Question: "go on?"})}}, nil
		}
		return phases.Output{}, nil
	}
	return phases.Workflow{Name: "test.ask", Start: "p", Phases: []phases.PhaseSpec{{Name: "p", Run: p, Next: []string{"p"}}}}
}

func init() { phases.Default.MustRegister(askWorkflow()) }

// TestClusterAnswerReachesDriver: an answer given on a node that does not
// drive the run reaches the node that does, whose parked run goes on.
func TestClusterAnswerReachesDriver(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	ctx := context.Background()
	h, err := c.nodes[0].a.Executor.StartRun(ctx, workflows.StartRequest{Workflow: "test.ask"})
	if err != nil {
		t.Fatal(err)
	}
	var d int
	var qs []workflows.Question
	testkit.WaitFor(t, "the question asked", func() bool {
		d = c.driver(h.ID)
		qs, _ = c.nodes[0].a.Executor.Questions(ctx, h.ID)
		return d >= 0 && len(qs) == 1
	})
	asker := c.nodes[(d+1)%3].a.Executor
	if err := asker.Answer(ctx, h.ID, qs[0].OpID, json.RawMessage(`"yes"`)); err != nil {
		t.Fatalf("answer from another node: %v", err)
	}
	waitEnded(t, c.nodes[0].store, []string{h.ID}, 20*time.Second)
	end, _ := c.nodes[0].store.Run(ctx, h.ID)
	if end.Status != state.StatusSucceeded {
		t.Fatalf("run ended %s: %s", end.Status, end.Error)
	}
	if err := asker.Answer(ctx, h.ID, qs[0].OpID, json.RawMessage(`"again"`)); !errors.Is(err, workflows.ErrAnswered) && !errors.Is(err, workflows.ErrEnded) {
		t.Fatalf("second answer: %v, want ErrAnswered or ErrEnded", err)
	}
}
