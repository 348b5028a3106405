package desktop

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// reportPercentiles reports the p50 and p95 of ds in milliseconds.
func reportPercentiles(b *testing.B, ds []time.Duration) {
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(ds[len(ds)/2]), "p50-ms")
	b.ReportMetric(ms(ds[len(ds)*95/100]), "p95-ms")
}

// BenchmarkSessionToFirstScreenshot measures, over real HTTP, a vm session
// create (Xvfb up, the server connected) followed by its first
// vm:screenshot at the default 1280x800, then the destroy (not timed).
func BenchmarkSessionToFirstScreenshot(b *testing.B) {
	needDesktop(b, false)
	h := newHarness(b, "", map[string]any{})
	var ds []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		w := fmt.Sprintf("b%d", i)
		start := time.Now()
		h.create(w)
		h.mustExec(w, "vm:screenshot", nil, nil)
		ds = append(ds, time.Since(start))
		b.StopTimer()
		h.destroy(w)
		b.StartTimer()
	}
	reportPercentiles(b, ds)
}

// BenchmarkScreenshot measures the round trip of vm:screenshot over real
// HTTP (GetImage of 1280x800, PNG encoding, base64, the window list, JSON)
// with the Tk test application on screen.
func BenchmarkScreenshot(b *testing.B) {
	needDesktop(b, true)
	h := newHarness(b, "", map[string]any{"start_command": appCommand(b)})
	ws := h.create("b")
	waitState(b, ws, "the app", func(appState) bool { return true })
	var ds []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		h.mustExec("b", "vm:screenshot", nil, nil)
		ds = append(ds, time.Since(start))
	}
	reportPercentiles(b, ds)
}

// BenchmarkClick measures the round trip of vm:click (XTEST motion, press
// and release, each checked, plus the window list).
func BenchmarkClick(b *testing.B) {
	needDesktop(b, false)
	h := newHarness(b, "", map[string]any{})
	h.create("b")
	var ds []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		h.mustExec("b", "vm:click", map[string]any{"x": 600, "y": 400}, nil)
		ds = append(ds, time.Since(start))
	}
	reportPercentiles(b, ds)
}
