package text2sql

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/sandbox"
)

// benchQuery is a typical text2sql query: a join, a group and an order.
const benchQuery = "SELECT s.name, count(*) AS n FROM singer s JOIN singer_in_concert sc USING (singer_id) " +
	"GROUP BY s.singer_id ORDER BY n DESC, s.name"

// latencies collects per-call durations from many goroutines and reports the p50.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration // guarded by mu
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) report(b *testing.B) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return
	}
	slices.Sort(l.d)
	b.ReportMetric(float64(l.d[len(l.d)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(l.d[len(l.d)*99/100].Microseconds()), "p99-µs")
}

// runParallel64 runs call from 64 goroutines (RunParallel's parallelism scaled to
// GOMAXPROCS) and reports calls/s and latency percentiles.
func runParallel64(b *testing.B, call func() error) {
	var l latencies
	b.SetParallelism((64 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			t0 := time.Now()
			if err := call(); err != nil {
				b.Error(err)
				return
			}
			l.add(time.Since(t0))
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
	l.report(b)
}

// BenchmarkExecuteTool is text2sql:execute called in-process (the tool's Run, no
// HTTP): one caller, then 64 concurrent workers.
func BenchmarkExecuteTool(b *testing.B) {
	be := provision(b, map[string]any{"databases": map[string]any{"concert": sampleDB}})
	t := tool(b, be, "text2sql:execute")
	call := func() error {
		_, err := t.Run(context.Background(), &sandbox.Call{WorkerID: "w", Params: map[string]any{"db_id": "concert", "query": benchQuery}})
		return err
	}
	b.Run("serial", func(b *testing.B) {
		var l latencies
		b.ReportAllocs()
		for b.Loop() {
			t0 := time.Now()
			if err := call(); err != nil {
				b.Fatal(err)
			}
			l.add(time.Since(t0))
		}
		l.report(b)
	})
	b.Run("workers=64", func(b *testing.B) { runParallel64(b, call) })
}
