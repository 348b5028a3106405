package workflows_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit/testrun"
	"github.com/flockrun/flock/internal/testkit/teststore"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// refusingDispatcher's claim queue is down (a JetStream leader being
// elected): every Enqueue fails. It records what it was asked.
type refusingDispatcher struct {
	mu    sync.Mutex
	asked []string
}

func (d *refusingDispatcher) Enqueue(_ context.Context, id string, _ time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.asked = append(d.asked, id)
	return errors.New("nats: timeout")
}

func (d *refusingDispatcher) Unloaded(string, workflows.Unload) {}

// TestStartSurvivesFailedEnqueue: in cluster mode a run is written, then
// its claim is queued. When queueing fails, the run exists all the same
// (the dispatcher's sweep queues it), so the start succeeds: an error
// would make the client start it again, a second run.
func TestStartSurvivesFailedEnqueue(t *testing.T) {
	dir := t.TempDir()
	st := teststore.OpenAt(t, dir)
	reg := phases.NewRegistry()
	reg.MustRegister(counter(2))
	d := &refusingDispatcher{}
	ex := testrun.Executor(t, workflows.Config{Store: st, Registry: reg, RunsDir: filepath.Join(dir, "runs"), Dispatcher: d})
	ctx := context.Background()
	h, err := ex.StartRun(ctx, workflows.StartRequest{Workflow: "counter"})
	if err != nil {
		t.Fatalf("start with the claim queue down: %v", err)
	}
	stored, err := st.Run(ctx, h.ID)
	if err != nil || stored.Status != state.StatusRunning {
		t.Fatalf("stored run: %+v %v, want it running for the sweep", stored, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.asked) != 1 || d.asked[0] != h.ID {
		t.Fatalf("enqueue asked for %v, want [%s]", d.asked, h.ID)
	}
}
