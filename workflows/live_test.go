package workflows_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
)

// TestWaitingShowsOnHeadAndEvents: an op that says it waits (a rate
// limit) shows on Executor.Live with its reason and a countdown, a live
// event reaches a plain subscriber, and the wait is gone once the op
// returns.
func TestWaitingShowsOnHeadAndEvents(t *testing.T) {
	reg := phases.NewRegistry()
	reg.MustRegister(fanout(1))
	release := make(chan struct{})
	e := newEnv(t, reg, map[operations.Kind]handlers.Handler{
		operations.KindBash: handlers.HandlerFunc(func(ctx context.Context, env handlers.Env, req operations.Request) operations.Result {
			env.Waiting("rate limited by gpt-4o-mini, retrying", time.Now().Add(42*time.Second))
			select {
			case <-release:
			case <-ctx.Done():
			}
			// No call ending the wait: the executor ends it with the op.
			return operations.Result{Kind: req.Kind, Data: &operations.BashResult{Stdout: "ok"}}
		}),
	})
	h := e.start("fanout", "", "")
	events, unsubscribe := e.ex.Subscribe(h.ID)
	defer unsubscribe()
	testkit.WaitFor(t, "the wait to show", func() bool { return len(e.ex.Live(h.ID).Waiting) == 1 })
	w := e.ex.Live(h.ID).Waiting[0]
	if w.OpID != state.OpID(h.ID, 1, 0) || !strings.HasPrefix(w.Message, "rate limited by gpt-4o-mini, retrying in 4") || !strings.HasSuffix(w.Message, " s") {
		t.Fatalf("wait = %+v", w)
	}
	deadline := time.After(10 * time.Second)
	for got := false; !got; {
		select {
		case ev := <-events:
			got = ev.Seq == 0 && ev.Status == "waiting" && strings.Contains(ev.Message, "rate limited by gpt-4o-mini")
		case <-deadline:
			t.Fatal("no waiting event reached a plain subscriber")
		}
	}
	if hl := e.ex.Health(); hl.Status != "ok" {
		t.Fatalf("a rate-limit wait is not a degraded server: %+v", hl)
	}
	close(release)
	end := e.wait(h.ID)
	if end.Status != state.StatusSucceeded {
		t.Fatalf("run: %+v", end)
	}
	if l := e.ex.Live(h.ID); !l.Empty() {
		t.Fatalf("live after the end: %+v", l)
	}
}
