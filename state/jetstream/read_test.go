package jetstream

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/storetest"
)

// laggingWatcher plays the watcher of a heads bucket whose consumer the
// server placed on a replica that lags the leader by the last writes:
// it delivers the values the replica had (stale), then the "every
// current value was delivered" marker, then the writes it was missing.
type laggingWatcher struct {
	updates chan jetstream.KeyValueEntry
}

func (w *laggingWatcher) Updates() <-chan jetstream.KeyValueEntry { return w.updates }
func (w *laggingWatcher) Stop() error                             { return nil }

// currentValues reads every entry of kv through a real watcher.
func currentValues(t *testing.T, kv jetstream.KeyValue) []jetstream.KeyValueEntry {
	t.Helper()
	w, err := kv.WatchAll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop() }()
	var out []jetstream.KeyValueEntry
	for e := range w.Updates() {
		if e == nil {
			return out
		}
		out = append(out, e)
	}
	t.Fatal("watcher closed")
	return nil
}

// TestRunsFromLaggingReplica: a listing that reads every head (Runs
// without an index filter, CountRuns) sees every commit acknowledged
// before it, with its latest head, even when the heads watcher's
// consumer sits on a replica that lags the leader (JetStream places an
// ephemeral R1 consumer on any replica of an R3 stream): the flake of
// TestContractR3/Runs/limit_capped, where one of 1100 runs just
// committed was missing from the listing.
func TestRunsFromLaggingReplica(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, []*server.Server{startServer(t)}, Options{})
	storetest.MustCommit(t, s, step("r1", 1, 0, state.StatusRunning))
	storetest.MustCommit(t, s, step("r2", 1, 0, state.StatusRunning))
	stale := map[string][]jetstream.KeyValueEntry{}
	for i := range s.shards {
		stale[s.shards[i].headsName] = currentValues(t, s.shards[i].heads)
	}
	h, err := s.Run(ctx, "r2")
	if err != nil {
		t.Fatal(err)
	}
	storetest.MustCommit(t, s, step("r2", 2, h.Revision, state.StatusSucceeded))
	storetest.MustCommit(t, s, step("r3", 1, 0, state.StatusSucceeded))

	orig := watchAll
	t.Cleanup(func() { watchAll = orig })
	watchAll = func(ctx context.Context, kv jetstream.KeyValue) (jetstream.KeyWatcher, error) {
		old := stale[kv.Bucket()]
		var oldTip uint64
		for _, e := range old {
			oldTip = max(oldTip, e.Revision())
		}
		now := currentValues(t, kv)
		w := &laggingWatcher{updates: make(chan jetstream.KeyValueEntry, len(old)+len(now)+1)}
		for _, e := range old {
			w.updates <- e
		}
		w.updates <- nil
		for _, e := range now {
			if e.Revision() > oldTip {
				w.updates <- e
			}
		}
		return w, nil
	}

	runs, _, err := s.Runs(ctx, state.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		got = append(got, fmt.Sprint(r.ID, " ", r.Status))
	}
	if want := "[r3 succeeded r2 succeeded r1 running]"; fmt.Sprint(got) != want {
		t.Fatalf("Runs from a lagging replica: %v, want %s", got, want)
	}
	c, err := s.CountRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (state.RunCounts{Total: 3, Running: 1, Succeeded: 2}); c != want {
		t.Fatalf("CountRuns from a lagging replica: %+v, want %+v", c, want)
	}
}
