package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"runtime"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/phases/rollout"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// RolloutConfig is one rollout benchmark: tasks × chains react agents on a
// scripted model whose replies take no time.
type RolloutConfig struct {
	Tasks, Chains, Concurrency int
	// ItemsPerLane is the rollout's items_per_lane (0: lanes, 1: batches).
	ItemsPerLane int
	// Script is the scripted model's replies (JSONL); default: one submit.
	Script string
	// Episodes writes trajectories and episodes (the rollout's default).
	Episodes bool
}

// RolloutStats is what a rollout benchmark measured.
type RolloutStats struct {
	Samples int
	Wall    time.Duration
	// PerSample is Wall / samples: the engine's cost of one sample when the
	// model is instant (throughput), including its grading and writes.
	PerSample time.Duration
	// MeanSample is the mean wall time of one sample from spawn to its row
	// (latency under load).
	MeanSample time.Duration
	// Transitions counts phase commits of all runs (parent, lanes, agents).
	Transitions int
	// Commits, Txs and Bytes are the store's commits, write transactions
	// and logical bytes written during the rollout.
	Commits, Txs, Bytes uint64
	// PeakHeap is the highest HeapInuse sampled every 10ms; VmHWM the
	// process's peak resident set so far (Linux).
	PeakHeap uint64
	VmHWM    uint64
	// CorrectRate is the fraction of finished samples graded correct.
	CorrectRate float64
}

// instantScript answers every agent with one submit tool call.
const instantScript = `{"tool_calls": [{"name": "submit", "arguments": {"answer": "42"}}], "usage": {"prompt_tokens": 50, "completion_tokens": 5}}` + "\n"

// Rollout runs one rollout benchmark on a fresh App in a temporary
// directory.
func Rollout(c RolloutConfig) (RolloutStats, error) {
	var st RolloutStats
	dir, err := os.MkdirTemp("", "flock-bench-rollout-")
	if err != nil {
		return st, err
	}
	defer os.RemoveAll(dir)
	bench := filepath.Join(dir, "bench.jsonl")
	f, err := os.Create(bench)
	if err != nil {
		return st, err
	}
	w := bufio.NewWriter(f)
	for i := range c.Tasks {
		fmt.Fprintf(w, `{"id": "q%d", "question": "Task %d: what is 6*7?", "answer": "42"}`+"\n", i, i)
	}
	if err := errorsJoin(w.Flush(), f.Close()); err != nil {
		return st, err
	}
	script := c.Script
	if script == "" {
		script = instantScript
	}
	scriptPath := filepath.Join(dir, "script.jsonl")
	if err := os.WriteFile(scriptPath, []byte(script), 0o644); err != nil {
		return st, err
	}
	settings, err := json.Marshal(map[string]any{
		"data_path": bench, "output_dir": filepath.Join(dir, "out"), "num_chains": c.Chains,
		"max_concurrency": c.Concurrency, "items_per_lane": c.ItemsPerLane, "episodes": c.Episodes,
		"models": map[string]any{"m": map[string]any{"provider": "scripted", "script": scriptPath}},
		"agent":  map[string]any{"workflow": "react", "settings": map[string]any{"model": "m", "max_turns": 5}},
	})
	if err != nil {
		return st, err
	}
	ctx := context.Background()
	// As flock rollout does for its operator: the benchmark and script in
	// dir are readable, the output directory in it writable.
	a, err := app.Open(ctx, configs.Server{DataDir: filepath.Join(dir, "data"), ReadRoots: []string{dir}, WriteRoots: []string{dir}}, nil)
	if err != nil {
		return st, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = a.Close(cctx)
	}()

	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
		}
	}()
	sr, ok := a.Store.(state.StatsReporter)
	if !ok {
		close(stop)
		wg.Wait()
		return st, fmt.Errorf("the store (%T) reports no statistics", a.Store)
	}
	before := sr.Stats()
	start := time.Now()
	h, err := a.Executor.StartRun(ctx, workflows.StartRequest{Workflow: rollout.Name, Settings: settings})
	if err != nil {
		close(stop)
		wg.Wait()
		return st, err
	}
	end, err := a.Executor.Wait(ctx, h.ID)
	st.Wall = time.Since(start)
	after := sr.Stats()
	st.Commits, st.Txs, st.Bytes = after.Commits-before.Commits, after.Txs-before.Txs, after.Bytes-before.Bytes
	close(stop)
	wg.Wait()
	if err != nil {
		return st, err
	}
	if end.Status != state.StatusSucceeded {
		return st, fmt.Errorf("rollout %s: %s %s", end.Status, end.EndReason, end.Error)
	}
	var sum rollout.Summary
	if err := json.Unmarshal(end.Result, &sum); err != nil {
		return st, err
	}
	st.Samples = sum.FinishedSamples
	st.CorrectRate = float64(sum.Correct) / float64(max(1, sum.FinishedSamples))
	st.PerSample = st.Wall / time.Duration(max(1, st.Samples))
	st.PeakHeap = peak
	st.VmHWM = vmHWM()
	// Mean sample latency and transitions, from the store.
	rows, err := readRows(filepath.Join(dir, "out", "results_"+"bench"+"_"+sum.Timestamp+".jsonl"))
	if err != nil {
		return st, err
	}
	total := 0.0
	for _, r := range rows {
		total += r.Seconds
	}
	if len(rows) > 0 {
		st.MeanSample = time.Duration(total / float64(len(rows)) * float64(time.Second))
	}
	st.Transitions, err = countSteps(ctx, a.Store, h.ID)
	return st, err
}

func errorsJoin(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func readRows(path string) ([]rollout.Row, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows []rollout.Row
	for _, l := range strings.Split(string(b), "\n") {
		var r rollout.Row
		if json.Unmarshal([]byte(l), &r) == nil {
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// countSteps sums the phase calls of a run and its descendants.
func countSteps(ctx context.Context, s state.Reader, id string) (int, error) {
	h, err := s.Run(ctx, id)
	if err != nil {
		return 0, err
	}
	n := int(h.Step)
	kids, err := s.Children(ctx, id)
	if err != nil {
		return 0, err
	}
	for _, k := range kids {
		m, err := countSteps(ctx, s, k)
		if err != nil {
			return 0, err
		}
		n += m
	}
	return n, nil
}

// vmHWM returns the process's peak resident set in bytes (0 if unknown).
func vmHWM() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseUint(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// slowScript makes every agent run one bash command that sleeps 1s for
// one agent in ten and 50ms for the others, then submit.
const slowScript = `{"tool_calls": [{"name": "bash", "arguments": {"command": "if [ $((RANDOM % 10)) -eq 0 ]; then sleep 1; else sleep 0.05; fi"}}]}
{"tool_calls": [{"name": "submit", "arguments": {"answer": "42"}}]}
`

func mib(b uint64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// rolloutRows adds the rollout rows to the bench table: the issue's
// 1,000 tasks × 4 chains at max_concurrency 256 (200 tasks with -quick),
// and lanes against batches when agent latency is heavy-tailed.
func rolloutRows(w io.Writer, quick bool) error {
	tasks, slow := 1000, 100
	if quick {
		tasks, slow = 200, 40
	}
	r, err := Rollout(RolloutConfig{Tasks: tasks, Chains: 4, Concurrency: 256, Episodes: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "rollout %d tasks × 4 chains of react, instant model, max_concurrency 256\t%.1fs wall, %s/sample, latency %s, %d commits in %d txs, peak heap %s, VmHWM %s\t—\n",
		tasks, r.Wall.Seconds(), us(r.PerSample), ms(r.MeanSample), r.Commits, r.Txs, mib(r.PeakHeap), mib(r.VmHWM))
	lanes, err := Rollout(RolloutConfig{Tasks: slow, Chains: 4, Concurrency: 32, Script: slowScript})
	if err != nil {
		return err
	}
	batches, err := Rollout(RolloutConfig{Tasks: slow, Chains: 4, Concurrency: 32, Script: slowScript, ItemsPerLane: 1})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "rollout %d×4, c=32, 1 agent in 10 takes 1s: lanes vs batches\t%.1fs vs %.1fs (×%.1f)\tlanes faster\n",
		slow, lanes.Wall.Seconds(), batches.Wall.Seconds(), batches.Wall.Seconds()/lanes.Wall.Seconds())
	return nil
}
