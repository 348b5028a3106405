package sandbox_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/sandbox"
)

// stuck is a test backend whose stuck:wait blocks until the test releases
// it, ignoring its context: what a read of a FIFO did (issue 23.5), or any
// tool call that cannot be interrupted.
type stuck struct{}

var (
	stuckMu      sync.Mutex
	stuckRelease chan struct{} // guarded by stuckMu; set by stuckReset
	stuckStarted chan string   // guarded by stuckMu
)

// stuckReset arms the tool for one test (tests may run with -count).
func stuckReset() {
	stuckMu.Lock()
	defer stuckMu.Unlock()
	stuckRelease, stuckStarted = make(chan struct{}), make(chan string, 16)
}

func releaseStuck() {
	stuckMu.Lock()
	defer stuckMu.Unlock()
	select {
	case <-stuckRelease:
	default:
		close(stuckRelease)
	}
}

func (stuck) Tools() []sandbox.Tool {
	return []sandbox.Tool{{Name: "stuck:wait", Run: func(_ context.Context, c *sandbox.Call) (any, error) {
		stuckMu.Lock()
		release, started := stuckRelease, stuckStarted
		stuckMu.Unlock()
		started <- c.Session.ID
		<-release
		return map[string]any{}, nil
	}}}
}

func init() {
	sandbox.RegisterBackend(sandbox.BackendInfo{Name: "stuck", New: func() sandbox.Backend { return stuck{} }})
}

// TestStuckCallWedgesNoOne is the second half of issue 23.5's FIFO attack:
// a call that never returns held its session's lock, and the expiry
// sweeper, waiting for that lock, stopped expiring every other session;
// shutdown waited for it forever. Now the sweeper passes over a session
// with a call running, the other sessions expire on time, and Close
// returns when its context ends.
func TestStuckCallWedgesNoOne(t *testing.T) {
	stuckReset()
	e := newEnv(t, "", `{"server":{"session_ttl":0.3,"cleanup_interval":0.05,"default_timeout":0.2},"resources":{"stuck":{},"keeper":{}}}`)
	t.Cleanup(releaseStuck) // before newEnv's Close
	if a := e.do(t, "POST", "/api/v1/session/create", map[string]any{"worker_id": "a", "resource_type": "stuck"}); a.code() != 0 {
		t.Fatalf("create: %v", a.body)
	}
	// The call times out for its client (5006) but its Run goes on.
	a := e.do(t, "POST", "/api/v1/execute", map[string]any{"worker_id": "a", "action": "stuck:wait"})
	if a.code() != sandbox.CodeTimeout {
		t.Fatalf("stuck call: %v", a.body)
	}
	stuckMu.Lock()
	started := stuckStarted
	stuckMu.Unlock()
	<-started
	// Sessions that start after it still expire and are cleaned up, well
	// after the stuck session's own TTL has passed.
	for _, w := range []string{"b", "c"} {
		a := e.do(t, "POST", "/api/v1/session/create", map[string]any{"worker_id": w, "resource_type": "keeper"})
		id, _ := a.data()["session_id"].(string)
		if a.code() != 0 {
			t.Fatalf("create %s: %v", w, a.body)
		}
		testkit.WaitFor(t, "the sweeper to expire session "+w, func() bool {
			_, ok := cleanedUp(id)
			return ok
		})
	}

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		done <- e.svc.Close(ctx)
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Close reported nothing about the call it left running")
		}
		t.Logf("Close: %v", err)
	case <-time.After(testkit.DefaultTimeout):
		t.Fatal("Close waited for a stuck call past its context")
	}
}
