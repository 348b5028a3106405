package synthesis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/phases/synthesis"
	"github.com/flockrun/flock/sandbox"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// instant is a sandbox backend whose one tool answers at once: it echoes
// its query, so a benchmark measures the engine, not a tool.
type instant struct{}

func (instant) Tools() []sandbox.Tool {
	return []sandbox.Tool{{
		Name: "instant:search", Description: "Echo the query.", Stateless: true,
		Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
		Run: func(_ context.Context, c *sandbox.Call) (any, error) {
			q, _ := c.Params["query"].(string)
			return "Result for " + q + ": the Harbour Arena in Lisbon holds 42000 people and opened in 1998.", nil
		},
	}}
}

func init() {
	sandbox.RegisterBackend(sandbox.BackendInfo{Name: "instant", New: func() sandbox.Backend { return instant{} }})
}

// BenchmarkSynthesis runs 20 seeds with the defaults (2+4+8+8+8 = 30
// nodes each) at max_concurrency 64 on the simulated model (no network)
// and an instant tool, on a real bbolt store: nodes/s and the wall time
// per node, which is the engine's overhead (phase calls, commits, op
// dispatch, prompt building) since the model and the tool take ~0.
func BenchmarkSynthesis(b *testing.B) {
	cfg, err := sandbox.ParseConfig([]byte(`{"apis": {"instant": {}}}`), func(string) (string, bool) { return "", false })
	if err != nil {
		b.Fatal(err)
	}
	svc, err := sandbox.New(context.Background(), cfg, sandbox.Options{DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close(context.Background())
	seeds := make([]string, 20)
	for i := range seeds {
		seeds[i] = fmt.Sprintf("Seed %d: the Harbour Arena and the singers who sang there.", i)
	}
	var nodes, steps int
	var wall time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		a, err := app.Open(context.Background(), configs.Server{DataDir: filepath.Join(dir, "data"), Mode: "simulated", WriteRoots: []string{dir}}, nil, app.WithSandbox(svc))
		if err != nil {
			b.Fatal(err)
		}
		doc, _ := json.Marshal(map[string]any{"seeds": seeds, "output_dir": filepath.Join(dir, "out"),
			"available_tools": []string{"instant:*"}, "model_name": "simulated", "max_concurrency": 64})
		b.StartTimer()
		t0 := time.Now()
		h, err := a.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: synthesis.Name, Settings: doc})
		if err != nil {
			b.Fatal(err)
		}
		end, err := a.Executor.Wait(context.Background(), h.ID)
		if err != nil {
			b.Fatal(err)
		}
		wall += time.Since(t0)
		b.StopTimer()
		if end.Status != state.StatusSucceeded {
			b.Fatalf("synthesis %s: %s %s", end.Status, end.EndReason, end.Error)
		}
		var sum synthesis.Summary
		if err := json.Unmarshal(end.Result, &sum); err != nil {
			b.Fatal(err)
		}
		if sum.SeedsDone != 20 || sum.Nodes != 600 {
			b.Fatalf("summary: %+v", sum)
		}
		nodes += sum.Nodes
		steps += sum.ModelCalls + sum.ToolCalls
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		a.Close(ctx)
		cancel()
		b.StartTimer()
	}
	b.ReportMetric(float64(nodes)/wall.Seconds(), "nodes/s")
	b.ReportMetric(float64(wall.Microseconds())/float64(nodes), "µs/node")
	b.ReportMetric(float64(steps)/float64(b.N), "calls/op")
}
