package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/workflows"
)

// BenchmarkTriframeEngine runs triframe through the real executor and
// bbolt store with an instant scripted model and an in-memory action
// (score_log, no shell; the run ends with no_valid_action when the
// script runs out), so the time is the engine's and the phases': 550
// actions of advisor -> actor -> advisor_ratings -> process -> tool_output.
// It reports phases per second over the first 50 actions and over actions
// 500-550 (a history of 500 actions). Run with -benchtime=1x.
//
// Per-phase cost grows with the prompt until the history fills the
// context budget (context_trimming_threshold, in characters), then stays
// flat: the actor generate's request, prompt included, is journaled each
// step. The sub-benchmarks compare the default 80,000 with 8,000.
func BenchmarkTriframeEngine(b *testing.B) {
	for _, ctxChars := range []int{80000, 8000} {
		b.Run(fmt.Sprintf("context=%d", ctxChars), func(b *testing.B) { benchEngine(b, ctxChars) })
	}
}

func benchEngine(b *testing.B, ctxChars int) {
	const actions, window = 550, 50
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		var sb strings.Builder
		for k := 0; k < actions; k++ {
			sb.WriteString(`{"content":"Checking the scores again.","tool_calls":[{"name":"score_log","arguments":{}}]}` + "\n")
		}
		// The run ends when the script does: the failed generate leaves no
		// option and max_actor_retries is 0.
		sb.WriteString(`{"error":"end of the benchmark script"}` + "\n")
		script := filepath.Join(dir, "act.jsonl")
		if err := os.WriteFile(script, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		doc, _ := json.Marshal(map[string]any{
			"actors":          []any{map[string]any{"model": "act"}},
			"enable_advising": false, "intermediate_scoring": true, "max_actor_retries": 0,
			"context_trimming_threshold": ctxChars,
			"models":                     map[string]any{"act": map[string]any{"provider": "scripted", "script": script}},
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		a, err := app.Open(ctx, configs.Server{DataDir: filepath.Join(dir, "data"), ReadRoots: []string{dir}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		h, err := a.Executor.StartRun(ctx, workflows.StartRequest{Workflow: "triframe", Settings: doc, Task: "Benchmark."})
		if err != nil {
			b.Fatal(err)
		}
		end, err := a.Executor.Wait(ctx, h.ID)
		if err != nil || end.EndReason != "no_valid_action" {
			b.Fatalf("run: %v %s %s %s", err, end.Status, end.EndReason, end.Error)
		}
		total := time.Since(start)
		evs, err := a.Store.Events(ctx, h.ID, 0, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		var times []time.Time // commit time of each phase
		for _, ev := range evs {
			if ev.Type == "phase" {
				times = append(times, ev.Time)
			}
		}
		const perAction = 5
		rate := func(fromAction int) float64 {
			lo, hi := 1+fromAction*perAction, 1+(fromAction+window)*perAction
			if hi >= len(times) {
				b.Fatalf("only %d phases", len(times))
			}
			return float64(hi-lo) / times[hi].Sub(times[lo]).Seconds()
		}
		b.ReportMetric(rate(0), "phases/s(first50)")
		b.ReportMetric(rate(250), "phases/s(at250)")
		b.ReportMetric(rate(actions-window), "phases/s(at500)")
		b.ReportMetric(float64(len(times))/total.Seconds(), "phases/s(run)")
		b.ReportMetric(float64(len(times)), "phases")
		cctx, c := context.WithTimeout(context.Background(), 30*time.Second)
		_ = a.Close(cctx)
		c()
		cancel()
	}
}
