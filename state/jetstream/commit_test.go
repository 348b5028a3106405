package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/storetest"
)

// step is the commit of one phase transition of run id at step n: head,
// one entry, one pending op, one event.
func step(id string, n, expect uint64, status state.Status) *state.Commit {
	return &state.Commit{RunID: id, ExpectRevision: expect,
		Run:     &state.Run{ID: id, Workflow: "w", Status: status, Step: n, Entries: n, Phase: fmt.Sprint("p", n)},
		Entries: []record.Entry{{Seq: n, Type: "log", Step: n, Data: json.RawMessage(fmt.Sprint(n))}},
		Ops: []state.Op{{ID: state.OpID(id, n, 0), RunID: id, Step: n, Status: state.OpPending,
			Request: operations.NewBash(fmt.Sprint("echo ", n), 0)}},
		Events: []state.Event{{Type: "phase", Step: n, Message: fmt.Sprint("step ", n)}},
	}
}

// crash runs the first half of a commit, the log appends, and stops before
// the head write, as a node killed at that point would. It returns the
// stream sequences it appended.
func crash(tb testing.TB, s *Store, c *state.Commit) []uint64 {
	tb.Helper()
	ctx := context.Background()
	p, err := s.prepare(c)
	if err != nil {
		tb.Fatal(err)
	}
	cur, err := s.load(ctx, p.key, true)
	if err != nil {
		tb.Fatal(err)
	}
	w, err := s.plan(p, cur)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.indexBefore(ctx, p, cur.env, w)(); err != nil {
		tb.Fatalf("index of the crashing commit: %v", err)
	}
	if err := s.appendLogs(ctx, p, cur, w); err != nil {
		tb.Fatalf("appends of the crashing commit: %v", err)
	}
	var seqs []uint64
	for i, m := range w.msgs {
		if m != nil {
			seqs = append(seqs, w.env.Tips[i])
		}
	}
	return seqs
}

// gone fails unless every one of seqs was deleted from run r's runs stream.
func gone(tb testing.TB, s *Store, seqs []uint64) {
	tb.Helper()
	for _, seq := range seqs {
		if _, err := s.leaderGet(context.Background(), s.shardOf("r").runsName, getReq{Seq: seq}); !errors.Is(err, jetstream.ErrMsgNotFound) {
			tb.Fatalf("message %d of a commit that never applied is still in the stream: %v", seq, err)
		}
	}
}

// TestCrashBetweenAppendsAndHead: a commit whose node died after its log
// appends and before its head write reads as not applied, from any node;
// the run's next commit applies (after Options.OrphanWait, since the dead
// commit was based on the current head) and deletes the dead appends.
func TestCrashBetweenAppendsAndHead(t *testing.T) {
	servers := []*server.Server{startServer(t)}
	a := openStore(t, servers, Options{OrphanWait: 100 * time.Millisecond})
	storetest.MustCommit(t, a, step("r", 1, 0, state.StatusRunning))
	before := storetest.Snapshot(t, a, "r")

	dead := crash(t, a, step("r", 2, 1, state.StatusRunning))
	if len(dead) != 3 { // entry, op, event
		t.Fatalf("the crashing commit appended %d messages, want 3", len(dead))
	}
	b := openStore(t, servers, Options{Prefix: a.opts.Prefix, OrphanWait: 100 * time.Millisecond})
	if got := storetest.Snapshot(t, b, "r"); got != before {
		t.Fatalf("a commit without its head write is visible:\nbefore %s\nafter  %s", before, got)
	}

	// Another node takes the run over and commits step 2 its own way.
	next := step("r", 2, 1, state.StatusRunning)
	next.Entries[0].Data = json.RawMessage(`"node b"`)
	start := time.Now()
	storetest.MustCommit(t, b, next)
	t.Logf("commit over a dead commit's appends took %v (OrphanWait 100ms)", time.Since(start).Round(time.Millisecond))
	gone(t, b, dead)
	es, err := b.Entries(context.Background(), "r", 0, 0)
	if err != nil || len(es) != 2 || string(es[1].Data) != `"node b"` {
		t.Fatalf("entries after the takeover: %+v %v", es, err)
	}
	if got, want := storetest.Snapshot(t, a, "r"), storetest.Snapshot(t, b, "r"); got != want {
		t.Fatalf("nodes disagree:\na %s\nb %s", got, want)
	}

	// A dead commit based on an older head is deleted without waiting.
	dead = crash(t, b, step("r", 3, 2, state.StatusRunning))
	storetest.MustCommit(t, b, &state.Commit{RunID: "r", ExpectRevision: 2, Run: &state.Run{ID: "r", Workflow: "w", Status: state.StatusPaused, Step: 2, Entries: 2}})
	slow := openStore(t, servers, Options{Prefix: a.opts.Prefix, OrphanWait: time.Hour})
	start = time.Now()
	storetest.MustCommit(t, slow, step("r", 3, 3, state.StatusSucceeded))
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("commit over appends of an outdated commit waited %v", d)
	}
	gone(t, slow, dead)
	h, err := a.Run(context.Background(), "r")
	if err != nil || h.Revision != 4 || h.Status != state.StatusSucceeded {
		t.Fatalf("head %+v %v", h, err)
	}
	if es, _ := a.Entries(context.Background(), "r", 0, 0); len(es) != 3 {
		t.Fatalf("%d entries, want 3", len(es))
	}

	// A run whose creating commit died is listed nowhere, though the
	// indexes were written before its head: they are a superset, checked
	// against the heads.
	ctx := context.Background()
	storetest.MustCommit(t, a, step("live", 1, 0, state.StatusRunning))
	child := step("orphan", 1, 0, state.StatusRunning)
	child.Run.ParentID = "live"
	crash(t, a, child)
	// So is a stale entry of a run that ended (its removal failed).
	if _, err := a.js.PublishMsg(ctx, &nats.Msg{Subject: a.idxUnfinished(runKey("r"))}); err != nil {
		t.Fatal(err)
	}
	unf, err := b.Unfinished(ctx)
	if err != nil || len(unf) != 1 || unf[0].ID != "live" {
		t.Fatalf("unfinished after a dead creating commit: %+v %v", unf, err)
	}
	if kids, err := b.Children(ctx, "live"); err != nil || len(kids) != 0 {
		t.Fatalf("children after a dead creating commit: %v %v", kids, err)
	}
	if runs, _, err := b.Runs(ctx, state.RunFilter{ParentID: "live"}); err != nil || len(runs) != 0 {
		t.Fatalf("runs by parent after a dead creating commit: %+v %v", runs, err)
	}
}

// TestZombieFenced runs the takeover of a run on one server and on a
// three-node cluster (the nodes' clients connected to different servers).
func TestZombieFenced(t *testing.T) {
	t.Run("R1", func(t *testing.T) {
		servers := []*server.Server{startServer(t)}
		testZombieFenced(t, servers[:1], servers[:1], 1)
	})
	t.Run("R3", func(t *testing.T) {
		servers := startCluster(t, 3)
		testZombieFenced(t, servers[:1], servers[1:], 3)
	})
}

// testZombieFenced: node a drives a run, loses its lease while paused; node
// b claims the run, reads everything a acknowledged, and commits; a wakes
// up and commits from what it knew: fenced, nothing of it visible, its
// renew refused.
func testZombieFenced(t *testing.T, sa, sb []*server.Server, replicas int) {
	ctx := context.Background()
	a := openStore(t, sa, Options{Replicas: replicas})
	if _, err := a.Claim(ctx, "r", "a", 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var rev uint64
	for n := uint64(1); n <= 5; n++ {
		c := step("r", n, rev, state.StatusRunning)
		storetest.MustCommit(t, a, c)
		rev = c.Run.Revision
	}
	acked := storetest.Snapshot(t, a, "r")

	b := openStore(t, sb, Options{Prefix: a.opts.Prefix, Replicas: replicas})
	testkit.CheckFor(t, 10*time.Second, func() error {
		_, err := b.Claim(ctx, "r", "b", time.Minute)
		return err
	})
	if got := storetest.Snapshot(t, b, "r"); got != acked {
		t.Fatalf("the new owner reads less than was acknowledged:\nacked %s\nread  %s", acked, got)
	}
	h, err := b.Run(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	storetest.MustCommit(t, b, step("r", 6, h.Revision, state.StatusRunning))
	after := storetest.Snapshot(t, b, "r")

	zombie := step("r", 6, rev, state.StatusRunning)
	zombie.Entries[0].Data = json.RawMessage(`"zombie"`)
	if err := a.Commit(ctx, zombie); !errors.Is(err, state.ErrFenced) {
		t.Fatalf("zombie commit: %v, want ErrFenced", err)
	}
	// a's release and renew go to the lease as a last wrote it, which b
	// has rewritten since: they find out, and neither touches b's lease.
	if err := a.Release(ctx, "r", "a"); err != nil {
		t.Fatalf("zombie release: %v", err)
	}
	if _, err := a.Renew(ctx, "r", "a", time.Minute); !errors.Is(err, state.ErrLeaseLost) {
		t.Fatalf("zombie renew: %v, want ErrLeaseLost", err)
	}
	if _, err := b.Renew(ctx, "r", "b", time.Minute); err != nil {
		t.Fatalf("the new owner's renew after the zombie's release and renew: %v", err)
	}
	if got := storetest.Snapshot(t, a, "r"); got != after {
		t.Fatalf("the zombie's commit is visible:\nwant %s\ngot  %s", after, got)
	}
}

// TestLeaderLoss kills the server leading the runs stream of a three-node
// cluster after a run's commits were acknowledged: the other nodes elect
// new leaders, every acknowledged commit reads back through them, and
// commits go on.
func TestLeaderLoss(t *testing.T) {
	ctx := context.Background()
	servers := startCluster(t, 3)
	a := openStore(t, servers, Options{Replicas: 3})
	var rev uint64
	for n := uint64(1); n <= 20; n++ {
		c := step("r", n, rev, state.StatusRunning)
		storetest.MustCommit(t, a, c)
		rev = c.Run.Revision
	}
	acked := storetest.Snapshot(t, a, "r")
	info, err := a.shardOf("r").runs.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var rest []*server.Server
	for _, s := range servers {
		if s.Name() == info.Cluster.Leader {
			s.Shutdown()
			s.WaitForShutdown()
			continue
		}
		rest = append(rest, s)
	}
	if len(rest) != 2 {
		t.Fatalf("leader %q not among the servers", info.Cluster.Leader)
	}
	start := time.Now()
	b := openStoreRetry(t, rest, Options{Prefix: a.opts.Prefix, Replicas: 3})
	var got string
	testkit.CheckFor(t, 20*time.Second, func() error {
		got, err = tryView(b, "r")
		return err
	})
	t.Logf("reads served %v after the leader's loss", time.Since(start).Round(time.Millisecond))
	if got != acked {
		t.Fatalf("acknowledged commits lost with the leader:\nacked %s\nread  %s", acked, got)
	}
	storetest.MustCommit(t, b, step("r", 21, rev, state.StatusSucceeded))
	if es, _ := b.Entries(ctx, "r", 0, 0); len(es) != 21 {
		t.Fatalf("%d entries, want 21", len(es))
	}
}

// openStoreRetry opens a store while the cluster may still be electing
// leaders.
func openStoreRetry(tb testing.TB, servers []*server.Server, opts Options) *Store {
	tb.Helper()
	nc := connect(tb, servers...)
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
	var s *Store
	testkit.CheckFor(tb, 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err = Open(ctx, js, opts)
		return err
	})
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func tryView(s state.Store, id string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	h, err := s.Run(ctx, id)
	if err != nil {
		return "", err
	}
	es, err := s.Entries(ctx, id, 0, 0)
	if err != nil {
		return "", err
	}
	ops, err := s.Ops(ctx, id, "", 0)
	if err != nil {
		return "", err
	}
	evs, err := s.Events(ctx, id, 0, 0)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal([]any{h, es, ops, evs})
	return string(b), err
}

// TestOpenBadOptions: invalid options are refused with an error naming
// what is wrong.
func TestOpenBadOptions(t *testing.T) {
	servers := []*server.Server{startServer(t)}
	js, err := jetstream.New(connect(t, servers...))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"prefix with a dot", Options{Prefix: "a.b"}, "prefix"},
		{"prefix with a wildcard", Options{Prefix: "a*"}, "prefix"},
		{"replicas", Options{Replicas: 7}, "replicas"},
		{"negative replicas", Options{Replicas: -1}, "replicas"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(context.Background(), js, tt.opts)
			if !errors.Is(err, ErrOptions) || !strings.Contains(strings.ToLower(err.Error()), tt.want) {
				t.Fatalf("Open: %v, want ErrOptions naming %s", err, tt.want)
			}
		})
	}
	if _, err := Open(context.Background(), nil, Options{}); !errors.Is(err, ErrOptions) {
		t.Fatalf("Open(nil): %v", err)
	}
	// R3 on a single server cannot be placed: Open says so.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := Open(ctx, js, Options{Prefix: "r3", Replicas: 3}); err == nil {
		t.Fatal("R3 opened on one server")
	} else {
		t.Log(err)
	}
}

// TestSettle: a head write whose answer was lost is settled: applied if
// the leader's head is the commit's, otherwise fenced off, so that the
// lost write, arriving late, cannot apply.
func TestSettle(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, []*server.Server{startServer(t)}, Options{})
	storetest.MustCommit(t, s, step("r", 1, 0, state.StatusRunning))
	c := step("r", 2, 1, state.StatusRunning)
	p, err := s.prepare(c)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := s.load(ctx, p.key, true)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.plan(p, cur)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.appendLogs(ctx, p, cur, w); err != nil {
		t.Fatal(err)
	}
	val, err := json.Marshal(w.env)
	if err != nil {
		t.Fatal(err)
	}
	lost := errors.New("timeout")

	// The write never reached the server: settle fences it off.
	applied, err := s.settle(ctx, p, lost)
	if err != nil || applied {
		t.Fatalf("settle of a write that did not apply: applied %v, %v", applied, err)
	}
	if _, err := s.shardOf(p.key).heads.Update(ctx, p.key, val, cur.rev); !isWrongLast(err) {
		t.Fatalf("the lost write applied after settle: %v", err)
	}
	if h, _ := s.Run(ctx, "r"); h.Step != 1 {
		t.Fatalf("head after a settled-off write: step %d", h.Step)
	}

	// The write applied but its answer was lost: settle says applied.
	now, err := s.load(ctx, p.key, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.shardOf(p.key).heads.Update(ctx, p.key, val, now.rev); err != nil {
		t.Fatal(err)
	}
	applied, err = s.settle(ctx, p, lost)
	if err != nil || !applied {
		t.Fatalf("settle of a write that applied: applied %v, %v", applied, err)
	}
}

// TestAsyncPublishBackpressure: many more appends at once than the
// client's async publish window (here 1) slow commits down instead of
// failing them, however long the queue for the window.
func TestAsyncPublishBackpressure(t *testing.T) {
	servers := []*server.Server{startServer(t)}
	js, err := jetstream.New(connect(t, servers...),
		jetstream.WithPublishAsyncMaxPending(1), jetstream.WithPublishAsyncTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// The stall wait follows ctx's deadline (stallWait): a long one, so
	// that the queue's length on a loaded machine (200 commits through a
	// window of one, under -race) is never what fails the test.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := Open(ctx, js, Options{Prefix: "bp"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	const runs = 200
	errs := make(chan error, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			id := fmt.Sprint("r", i)
			var rev uint64
			for n := uint64(1); n <= 3; n++ {
				c := step(id, n, rev, state.StatusRunning)
				if err := s.Commit(ctx, c); err != nil {
					errs <- err
					return
				}
				rev = c.Run.Revision
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestServerRestart: a server stopped and started again on its store
// directory serves every acknowledged commit; Open binds to the existing
// streams and commits go on from the stored heads.
func TestServerRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opts := &server.Options{ServerName: "solo", Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: dir, SyncAlways: true, NoLog: true, NoSigs: true}
	first := runServer(t, opts)
	a := openStore(t, []*server.Server{first}, Options{Prefix: "restart"})
	var rev uint64
	for n := uint64(1); n <= 10; n++ {
		c := step("r", n, rev, state.StatusRunning)
		storetest.MustCommit(t, a, c)
		rev = c.Run.Revision
	}
	if _, err := a.Claim(ctx, "r", "a", time.Hour); err != nil {
		t.Fatal(err)
	}
	acked := storetest.Snapshot(t, a, "r")
	first.Shutdown()
	first.WaitForShutdown()

	again := *opts // the same store directory
	second := runServer(t, &again)
	b := openStore(t, []*server.Server{second}, Options{Prefix: "restart"})
	if got := storetest.Snapshot(t, b, "r"); got != acked {
		t.Fatalf("after a restart:\nacked %s\nread  %s", acked, got)
	}
	if _, err := b.Claim(ctx, "r", "b", time.Minute); !errors.Is(err, state.ErrLeaseHeld) {
		t.Fatalf("lease after a restart: %v, want ErrLeaseHeld", err)
	}
	if unf, err := b.Unfinished(ctx); err != nil || len(unf) != 1 {
		t.Fatalf("unfinished after a restart: %+v %v", unf, err)
	}
	storetest.MustCommit(t, b, step("r", 11, rev, state.StatusSucceeded))
	if unf, err := b.Unfinished(ctx); err != nil || len(unf) != 0 {
		t.Fatalf("unfinished after the run ended: %+v %v", unf, err)
	}
}

// TestDeleteGoneMessage deletes a dead append twice, as two commits that
// clear the same dead appends do when they race: the server refuses the
// second delete ("sequence not found", which the client reports as
// ErrMsgDeleteUnsuccessful, not ErrMsgNotFound), and the store takes that
// as done. TestContractR3/ConcurrentCommitsOneRun failed on it once.
func TestDeleteGoneMessage(t *testing.T) {
	servers := []*server.Server{startServer(t)}
	a := openStore(t, servers, Options{})
	storetest.MustCommit(t, a, step("r", 1, 0, state.StatusRunning))
	dead := crash(t, a, step("r", 2, 1, state.StatusRunning))
	ctx := context.Background()
	sh := a.shardOf("r")
	if err := sh.runs.DeleteMsg(ctx, dead[0]); err != nil {
		t.Fatal(err)
	}
	if err := sh.runs.DeleteMsg(ctx, dead[0]); !errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful) {
		t.Fatalf("a second raw delete: %v, want ErrMsgDeleteUnsuccessful (the failure mode this guards)", err)
	}
	if err := a.deleteMsg(ctx, sh, dead[0]); err != nil {
		t.Fatalf("deleting a message already gone: %v", err)
	}
	if err := a.deleteMsg(ctx, sh, dead[1]); err != nil {
		t.Fatal(err)
	}
	gone(t, a, dead[:2])
}
