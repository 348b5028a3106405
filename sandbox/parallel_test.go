package sandbox_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/sandbox"
)

// gauge is a test backend: gauge:hold counts the calls running at once
// (per worker) and waits for the test to open its gate.
type gauge struct{}

var (
	gaugeMu     sync.Mutex
	gaugeGate   chan struct{}
	gaugeActive = map[string]*atomic.Int32{}
	gaugeMax    = map[string]*atomic.Int32{}
)

func gaugeReset() {
	gaugeMu.Lock()
	defer gaugeMu.Unlock()
	gaugeGate = make(chan struct{})
	gaugeActive, gaugeMax = map[string]*atomic.Int32{}, map[string]*atomic.Int32{}
}

func gaugeOf(m map[string]*atomic.Int32, w string) *atomic.Int32 {
	gaugeMu.Lock()
	defer gaugeMu.Unlock()
	if m[w] == nil {
		m[w] = new(atomic.Int32)
	}
	return m[w]
}

func (gauge) Tools() []sandbox.Tool {
	return []sandbox.Tool{{Name: "gauge:hold", Stateless: true, Run: func(ctx context.Context, c *sandbox.Call) (any, error) {
		active, mx := gaugeOf(gaugeActive, c.WorkerID), gaugeOf(gaugeMax, c.WorkerID)
		n := active.Add(1)
		defer active.Add(-1)
		for {
			m := mx.Load()
			if n <= m || mx.CompareAndSwap(m, n) {
				break
			}
		}
		gaugeMu.Lock()
		gate := gaugeGate
		gaugeMu.Unlock()
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return map[string]any{}, nil
	}}}
}

func init() {
	sandbox.RegisterBackend(sandbox.BackendInfo{Name: "gauge", New: func() sandbox.Backend { return gauge{} }})
}

func holdBatch(worker string, n int) map[string]any {
	actions := make([]any, n)
	for i := range actions {
		actions[i] = map[string]any{"action": "gauge:hold"}
	}
	return map[string]any{"worker_id": worker, "actions": actions, "parallel": true}
}

// TestBatchParallelBounded is the attack of issue 23.5: one
// /api/v1/execute/batch with parallel: true and 100 actions started 100
// shells at once. Over real HTTP, one request runs at most
// server.max_batch_parallel actions at a time, and a worker at most
// server.max_worker_parallel (two batches of one worker share it); the rest
// wait their turn, every action runs, and another worker is not held up.
func TestBatchParallelBounded(t *testing.T) {
	gaugeReset()
	e := newEnv(t, "", `{"server":{"max_batch_parallel":4,"max_worker_parallel":6},"apis":{"gauge":{}}}`)
	var openOnce sync.Once
	openGate := func() { openOnce.Do(func() { gaugeMu.Lock(); close(gaugeGate); gaugeMu.Unlock() }) }
	t.Cleanup(openGate) // before newEnv's: the server waits for its calls
	run := func(worker string, n int, wg *sync.WaitGroup, results chan<- answer) {
		wg.Go(func() { results <- e.do(t, "POST", "/api/v1/execute/batch", holdBatch(worker, n)) })
	}
	var wg sync.WaitGroup
	results := make(chan answer, 8)
	run("one", 100, &wg, results)
	testkit.WaitFor(t, "4 actions of the batch to run", func() bool { return gaugeOf(gaugeActive, "one").Load() == 4 })
	// Two batches of another worker: 6 at once between them, not 8.
	run("two", 10, &wg, results)
	run("two", 10, &wg, results)
	testkit.WaitFor(t, "6 actions of worker two to run", func() bool { return gaugeOf(gaugeActive, "two").Load() == 6 })
	// A single call of a third worker is not held up by the others.
	run("three", 1, &wg, results)
	testkit.WaitFor(t, "worker three's action to run", func() bool { return gaugeOf(gaugeActive, "three").Load() == 1 })
	openGate()
	wg.Wait()
	close(results)
	for a := range results {
		d := a.data()
		if a.code() != 0 || d["executed"] != d["total"] || d["success_count"] != d["total"] {
			t.Fatalf("batch: %v", a.body)
		}
	}
	if m := gaugeOf(gaugeMax, "one").Load(); m != 4 {
		t.Fatalf("one request ran %d actions at once, want at most max_batch_parallel 4", m)
	}
	if m := gaugeOf(gaugeMax, "two").Load(); m != 6 {
		t.Fatalf("one worker ran %d actions at once, want at most max_worker_parallel 6", m)
	}
}
