package telemetry_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/bolt"
	"github.com/flockrun/flock/telemetry"
	"github.com/flockrun/flock/workflows"
)

// countWorkflow calls its one phase "steps" times, appending an entry each time.
func countWorkflow() phases.Workflow {
	step := func(in phases.Input) (phases.Output, error) {
		var s struct{ Steps int }
		if err := json.Unmarshal(in.Run.Settings, &s); err != nil {
			return phases.Output{}, err
		}
		var i int
		if _, err := phases.GetVar(in.State, "i", &i); err != nil {
			return phases.Output{}, err
		}
		var out phases.Output
		if i >= s.Steps {
			return out, nil
		}
		out.Append = []phases.Entry{phases.MustEntry("tick", map[string]int{"i": i})}
		if err := out.SetVar("i", i+1); err != nil {
			return out, err
		}
		out.Next = "step"
		return out, nil
	}
	return phases.Workflow{Name: "bench.count", Start: "step",
		Phases: []phases.PhaseSpec{{Name: "step", Run: step, Next: []string{"step"}}}}
}

// BenchmarkTransitionTracing is the cost of a durable phase transition with
// trace export off and on (spans sent over OTLP/HTTP to a receiver in the
// process). ns/op is per transition.
func BenchmarkTransitionTracing(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := map[bool]string{false: "export=off", true: "export=on"}[on]
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			st, err := bolt.Open(filepath.Join(dir, "flock.db"), bolt.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			reg := phases.NewRegistry()
			reg.MustRegister(countWorkflow())
			cfg := workflows.Config{Store: st, Registry: reg, RunsDir: filepath.Join(dir, "runs")}
			var tr *telemetry.Tracer
			if on {
				c := newCollector(b)
				b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.srv.URL)
				exp, err := telemetry.NewOTLPExporter(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				if tr, err = telemetry.NewTracer(context.Background(), st, exp, nil); err != nil {
					b.Fatal(err)
				}
				cfg.Steps = tr
			}
			ex, err := workflows.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if err := ex.Start(ctx); err != nil {
				b.Fatal(err)
			}
			defer ex.Stop(ctx)
			doc, _ := json.Marshal(map[string]int{"steps": b.N})
			b.ResetTimer()
			h, err := ex.StartRun(ctx, workflows.StartRequest{Workflow: "bench.count", Settings: doc})
			if err != nil {
				b.Fatal(err)
			}
			if h, err = ex.Wait(ctx, h.ID); err != nil || h.Status != state.StatusSucceeded {
				b.Fatalf("run: %v %s %s", err, h.Status, h.Error)
			}
			b.StopTimer()
			if tr != nil {
				if err := tr.Close(ctx); err != nil {
					b.Fatal(err)
				}
				if s := tr.Stats(); s.Exported < uint64(b.N) || s.Failed+s.Dropped > 0 {
					b.Fatalf("stats %+v after %d transitions", s, b.N)
				}
			}
		})
	}
}
