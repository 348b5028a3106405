package sandbox_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkBashRun64 measures bash:run round trips over HTTP from 64
// concurrent workers, each on its own session: p50 and throughput.
func BenchmarkBashRun64(b *testing.B) {
	e := newEnv(b, "", baseCfg)
	const workers = 64
	for i := range workers {
		e.do(b, "POST", "/api/v1/session/create", map[string]any{"worker_id": fmt.Sprintf("b%d", i), "resource_type": "bash"})
		e.do(b, "POST", "/api/v1/execute", map[string]any{"worker_id": fmt.Sprintf("b%d", i), "action": "bash:run", "params": map[string]any{"command": "true"}})
	}
	var mu sync.Mutex
	var lat []time.Duration
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	per := max(b.N/workers, 1)
	for i := range workers {
		wg.Go(func() {
			for range per {
				t := time.Now()
				a := e.do(b, "POST", "/api/v1/execute", map[string]any{"worker_id": fmt.Sprintf("b%d", i), "action": "bash:run", "params": map[string]any{"command": "echo hi"}})
				d := time.Since(t)
				if a.code() != 0 {
					b.Error(a.body)
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(len(lat))/el.Seconds(), "calls/s")
}
