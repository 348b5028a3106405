package workflows_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/internal/testkit/testrun"
	"github.com/flockrun/flock/internal/testkit/teststore"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// flakyStore fails every commit once fail is set (after letting pass
// the number of commits given to failAfter), as JetStream does while a
// stream elects a new leader.
type flakyStore struct {
	state.Store
	mu   sync.Mutex
	fail bool
	pass int // commits that still pass once fail is set
}

// failAfter makes every commit fail after the next n.
func (f *flakyStore) failAfter(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail, f.pass = true, n
}

func (f *flakyStore) Commit(ctx context.Context, c *state.Commit) error {
	f.mu.Lock()
	fail := f.fail && f.pass == 0
	if f.fail && f.pass > 0 {
		f.pass--
	}
	f.mu.Unlock()
	if fail {
		return errors.New("nats: timeout")
	}
	return f.Store.Commit(ctx, c)
}

// unloadRecorder is a Dispatcher that queues nothing and records unloads.
type unloadRecorder struct {
	mu       sync.Mutex
	unloaded map[string]workflows.Unload
}

func (d *unloadRecorder) Enqueue(context.Context, string, time.Time) error { return nil }

func (d *unloadRecorder) Unloaded(id string, u workflows.Unload) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.unloaded[id] = u
}

func (d *unloadRecorder) get(id string) (workflows.Unload, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	u, ok := d.unloaded[id]
	return u, ok
}

// TestClusterStoreErrorReleasesRun: in cluster mode a run whose commit
// fails is released to the dispatcher (UnloadFailed: another node, or
// this one, takes it over soon), and the log says so as a warning; it
// does not claim the run waits for the next start.
func TestClusterStoreErrorReleasesRun(t *testing.T) {
	dir := t.TempDir()
	st := &flakyStore{Store: teststore.OpenAt(t, dir)}
	reg := phases.NewRegistry()
	reg.MustRegister(counter(3))
	d := &unloadRecorder{unloaded: map[string]workflows.Unload{}}
	var logs testkit.Buffer
	ex := testrun.Executor(t, workflows.Config{Store: st, Registry: reg, RunsDir: filepath.Join(dir, "runs"), Dispatcher: d,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := context.Background()
	h := testrun.Start(t, ex, workflows.StartRequest{Workflow: "counter"})
	// The node's take-up of the run (Run.Driver) is written; the run's
	// commits after it fail.
	st.failAfter(1)
	if err := ex.Drive(ctx, h.ID); err != nil {
		t.Fatalf("drive: %v", err)
	}
	var u workflows.Unload
	testkit.WaitFor(t, "the run's unload", func() bool {
		var ok bool
		u, ok = d.get(h.ID)
		return ok
	})
	if u.Reason != workflows.UnloadFailed {
		t.Fatalf("unload %v, want %v", u.Reason, workflows.UnloadFailed)
	}
	out := logs.String()
	if strings.Contains(out, "next start") || !strings.Contains(out, "level=WARN") || !strings.Contains(out, "released to the cluster") {
		t.Fatalf("log:\n%s\nwant a warning that the run is released to the cluster", out)
	}
}
