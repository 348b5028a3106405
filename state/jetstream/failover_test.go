package jetstream

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/storetest"
)

// TestFailoverReadsFromReplicas reads a run through the failover reader
// of a store whose FailoverAfter is a nanosecond, so that every read asks
// a replica (a direct get) as it does while a stream has no leader: the
// head, the spec, the entries, the ops and the events read the same as
// from the leaders, once the replicas caught up; children and unfinished
// runs are listed, and so is every run (the heads bucket read in
// batches); a run that does not exist is not found. (That a failover read answers within a second
// while the leaders are dead is tested on real processes, killed with
// SIGKILL: an in-process server hands its leaderships over when it shuts
// down.)
func TestFailoverReadsFromReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	servers := startCluster(t, 3)
	a := openStore(t, servers, Options{Replicas: 3, FailoverAfter: time.Nanosecond})
	var rev uint64
	for n := uint64(1); n <= 5; n++ {
		c := step("r", n, rev, state.StatusRunning)
		if n == 1 {
			c.Spec = &state.Spec{Task: "t"}
		}
		storetest.MustCommit(t, a, c)
		rev = c.Run.Revision
	}
	kid := step("kid", 1, 0, state.StatusRunning)
	kid.Run.ParentID = "r"
	storetest.MustCommit(t, a, kid)
	acked := storetest.Snapshot(t, a, "r")
	fo := a.FailoverReads()
	testkit.CheckFor(t, 20*time.Second, func() error {
		if got := storetest.Snapshot(t, fo, "r"); got != acked {
			return fmt.Errorf("replicas read:\n%s\nleaders:\n%s", got, acked)
		}
		return nil
	})
	sp, err := fo.Spec(context.Background(), "r")
	if err != nil || sp.Task != "t" {
		t.Fatalf("spec from a replica: %+v, %v", sp, err)
	}
	if n, err := fo.(state.ChildCounter).CountChildren(context.Background(), "r"); err != nil || n != 1 {
		t.Fatalf("children counted from a replica: %d, %v", n, err)
	}
	if ids, err := fo.Children(context.Background(), "r"); err != nil || len(ids) != 1 || ids[0] != "kid" {
		t.Fatalf("children listed from a replica: %v, %v", ids, err)
	}
	if runs, err := fo.Unfinished(context.Background()); err != nil || len(runs) != 2 {
		t.Fatalf("unfinished runs listed from a replica: %d, %v", len(runs), err)
	}
	// Every head, listed and counted from a replica, a few at a time.
	// (No watch of the heads answers: it needs the stream's leader.)
	batch, watch := headsBatch, watchAll
	t.Cleanup(func() { headsBatch, watchAll = batch, watch })
	headsBatch = 1
	watchAll = func(context.Context, jetstream.KeyValue) (jetstream.KeyWatcher, error) { return nil, nats.ErrTimeout }
	if runs, _, err := fo.Runs(context.Background(), state.RunFilter{}); err != nil || len(runs) != 2 || runs[0].ID != "r" || runs[1].ID != "kid" {
		t.Fatalf("runs listed from a replica: %+v, %v", runs, err)
	}
	if c, err := fo.(state.RunCounter).CountRuns(context.Background()); err != nil || c.Total != 2 {
		t.Fatalf("runs counted from a replica: %+v, %v", c, err)
	}
	if _, err := fo.Run(context.Background(), "nope"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("an unknown run from a replica: %v, want ErrNotFound", err)
	}
}

// TestCommitRetriedAfterUnknownOutcome: a commit carrying a Commit.ID that
// applied, though its caller was not told (a timeout), and was then
// followed by another commit of the run, applies no second time when it
// is tried again: the retry returns nil with the event numbers and the
// revision of the first application, and the log holds its records once.
func TestCommitRetriedAfterUnknownOutcome(t *testing.T) {
	s := openStore(t, []*server.Server{startServer(t)}, Options{})
	ctx := context.Background()
	storetest.MustCommit(t, s, step("r", 1, 0, state.StatusRunning))
	c := step("r", 2, 1, state.StatusRunning)
	c.ID = "commit-2"
	storetest.MustCommit(t, s, c)
	first, firstRev := c.Events[0].Seq, c.Run.Revision
	// Another commit of the run (an op result) follows.
	other := &state.Commit{RunID: "r", ID: "result", Events: []state.Event{{Type: "op", Status: "ok"}}}
	storetest.MustCommit(t, s, other)

	again := step("r", 2, 1, state.StatusRunning)
	again.ID = "commit-2"
	if err := s.Commit(ctx, again); err != nil {
		t.Fatalf("retry of an applied commit: %v", err)
	}
	if again.Events[0].Seq != first || again.Run.Revision != firstRev {
		t.Fatalf("retry got event %d, revision %d; the first try got %d, %d", again.Events[0].Seq, again.Run.Revision, first, firstRev)
	}
	if es, _ := s.Entries(ctx, "r", 0, 0); len(es) != 2 {
		t.Fatalf("%d entries after the retry, want 2", len(es))
	}
	if evs, _ := s.Events(ctx, "r", 0, 0); len(evs) != 3 {
		t.Fatalf("%d events after the retry, want 3", len(evs))
	}
	// A commit without an ID is not taken for an earlier one.
	fresh := step("r", 2, 1, state.StatusRunning)
	if err := s.Commit(ctx, fresh); !errors.Is(err, state.ErrFenced) {
		t.Fatalf("a new commit on an old revision: %v, want ErrFenced", err)
	}
}

// TestFailoverAsksSilentLeaderOnce: once a stream's leader has not
// answered a failover read, the next reads of that stream go to its
// replicas without waiting for the leader again (a listing of many runs
// during an election would otherwise wait FailoverAfter per message);
// other streams still ask their leader first, and once the leader
// answers again, so does the stream.
func TestFailoverAsksSilentLeaderOnce(t *testing.T) {
	s := &Store{opts: Options{FailoverAfter: 10 * time.Millisecond}}
	var leaderCalls, replicaCalls int
	silent := func(ctx context.Context) (string, error) {
		leaderCalls++
		<-ctx.Done()
		return "", ctx.Err()
	}
	answers := func(context.Context) (string, error) {
		leaderCalls++
		return "leader", nil
	}
	replica := func(context.Context) (string, error) {
		replicaCalls++
		return "replica", nil
	}
	ctx := context.Background()
	for i := range 3 {
		if v, err := failover(ctx, s, "A", silent, replica); err != nil || v != "replica" {
			t.Fatalf("read %d of A: %q, %v", i, v, err)
		}
	}
	if leaderCalls != 1 || replicaCalls != 3 {
		t.Fatalf("3 reads of A during an election asked the leader %d times and the replicas %d times, want 1 and 3", leaderCalls, replicaCalls)
	}
	if v, err := failover(ctx, s, "B", answers, replica); err != nil || v != "leader" || leaderCalls != 2 {
		t.Fatalf("stream B: %q, %v after %d leader calls; want its leader asked", v, err, leaderCalls)
	}
	// The leader answers again: a read after leaderRecheck asks it, and
	// the one after that too.
	s.leaders.mu.Lock()
	s.leaders.since["A"] = time.Now().Add(-leaderRecheck)
	s.leaders.mu.Unlock()
	for range 2 {
		if v, err := failover(ctx, s, "A", answers, replica); err != nil || v != "leader" {
			t.Fatalf("A after the election: %q, %v", v, err)
		}
	}
	if leaderCalls != 4 || replicaCalls != 3 {
		t.Fatalf("after the election: %d leader and %d replica calls, want 4 and 3", leaderCalls, replicaCalls)
	}
}

// TestBatchedDirectGetNoResponders: a batched direct get that no replica
// answers (JetStream's 503 status, a stream whose servers are dying or
// not up yet) fails as the store being unavailable for now, so that a
// failover read asks again rather than answer 500.
func TestBatchedDirectGetNoResponders(t *testing.T) {
	s := openStore(t, []*server.Server{startServer(t)}, Options{})
	_, err := s.directBatch(context.Background(), "NO_SUCH_STREAM", getBatch{Seq: 1, NextFor: ">", Batch: 1}, func(*nats.Msg) {})
	if !errors.Is(err, nats.ErrNoResponders) || !transient(err) {
		t.Fatalf("a batched direct get nobody answers: %v, want a transient nats.ErrNoResponders", err)
	}
}

// TestLeaderGetAsksAgain: a strict get whose request no leader answers
// (sent while the servers still took a dead server for the stream's
// leader: a takeover's first read of the run's head, right after the
// election of the claims consumer) asks again while its context lasts,
// and takes a late answer to an earlier ask: here the "leader" (the test,
// on a server without JetStream) answers no first request, keeps the
// second unanswered until the third came, then answers the second.
// Before, the get waited for its whole context (a takeover's 3 s try)
// and failed.
func TestLeaderGetAsksAgain(t *testing.T) {
	opts := soloOptions(t)
	opts.JetStream = false
	nc := connect(t, runServer(t, opts))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s := &Store{js: js}
	asks := make(chan *nats.Msg, 8)
	sub, err := nc.ChanSubscribe(jetstream.DefaultAPIPrefix+"STREAM.MSG.GET.S", asks)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	answered := make(chan error, 1)
	go func() { // owned: ends with the second ask or the read's context
		var got []*nats.Msg
		for len(got) < 3 {
			select {
			case ask := <-asks:
				got = append(got, ask)
			case <-ctx.Done():
				answered <- fmt.Errorf("the get asked %d times, no more", len(got))
				return
			}
		}
		answered <- got[1].Respond([]byte(`{"message": {"subject": "s", "seq": 7, "data": "aGk="}}`))
	}()
	m, err := s.leaderGet(ctx, "S", getReq{Seq: 7})
	if err != nil {
		t.Fatalf("get: %v (the responder: %v)", err, <-answered)
	}
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	if m.Sequence != 7 || string(m.Data) != "hi" {
		t.Fatalf("got message %d %q, want 7 \"hi\"", m.Sequence, m.Data)
	}
}
