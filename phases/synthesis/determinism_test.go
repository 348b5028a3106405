package synthesis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit/testsandbox"
	"github.com/flockrun/flock/phases/synthesis"
)

// exampleSeeds are the seeds of examples/synthesis/seeds.jsonl.
func exampleSeeds(t testing.TB) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo(t), "examples/synthesis/seeds.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var list []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		list = append(list, m)
	}
	return list
}

// What may differ between two runs of the same synthesis: times, the
// sandbox's trace ids (random when the caller sends none, as AgentFlow's)
// and run ids, replaced below.
var reVolatile = regexp.MustCompile(`"(execution_time_ms|duration_ms|started_at|finished_at|seconds)":[^,}]*|"trace_id":"[^"]*"`)

// synthesisRecord is everything a synthesis run journaled and wrote: each
// seed run's ops (request and result, in step and index order) and
// entries, the run's result and the output files' lines; run ids are replaced by
// their place in the tree, dir by "DIR", and the volatile fields by their
// names.
func synthesisRecord(t *testing.T, a *app.App, id, dir string) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	names := []string{id, "RUN"}
	lanes, err := a.Store.Children(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for li, lane := range lanes {
		names = append(names, lane, fmt.Sprintf("LANE%d", li))
		seeds, err := a.Store.Children(ctx, lane)
		if err != nil {
			t.Fatal(err)
		}
		for si, seed := range seeds {
			names = append(names, seed, fmt.Sprintf("SEED%d.%d", li, si))
			fmt.Fprintf(&b, "seed run %s\n", seed)
			ops, err := a.Store.Ops(ctx, seed, "", 10000)
			if err != nil {
				t.Fatal(err)
			}
			for _, op := range ops {
				req, _ := json.Marshal(op.Request)
				res, _ := json.Marshal(op.Result)
				fmt.Fprintf(&b, "op %d/%d %s %s\n-> %s\n", op.Step, op.Index, op.Phase, req, res)
			}
			es, err := a.Store.Entries(ctx, seed, 0, 10000)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				fmt.Fprintf(&b, "entry %d %s %d %s\n", e.Seq, e.Type, e.Step, e.Data)
			}
		}
	}
	end, err := a.Store.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "result %s\n", end.Result)
	for _, f := range []string{synthesis.FileQA, synthesis.FileTrajectories, synthesis.FileTrees, synthesis.FileDone} {
		data, err := os.ReadFile(filepath.Join(dir, "out", f))
		if err != nil {
			t.Fatal(err)
		}
		// Lanes run in parallel: a file holds the seeds' lines in the
		// order the seeds finished, so they are compared sorted.
		ls := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		slices.Sort(ls)
		fmt.Fprintf(&b, "file %s\n%s\n", f, strings.Join(ls, "\n"))
	}
	s := reVolatile.ReplaceAllStringFunc(b.String(), func(m string) string { return m[:strings.IndexByte(m[1:], '"')+2] })
	return strings.NewReplacer(append(names, dir, "DIR")...).Replace(s)
}

// TestSimulatedSynthesisIsDeterministic runs README's simulated synthesis
// (examples/synthesis: two seeds over the offline sandbox's text2sql and
// rag, lanes in parallel) several times in one process, each on a fresh
// store and a fresh sandbox (so a fresh rag index), and compares what each
// journaled and wrote: the same settings must make the same model calls,
// the same tool calls with the same results, the same trees and the same
// files. Phases, the simulated model and the offline tools are all
// deterministic; before the rag backend ordered passages of equal score,
// a search's order followed bleve's concurrent indexing, and the number of
// model calls and re-asks changed from run to run.
func TestSimulatedSynthesisIsDeterministic(t *testing.T) {
	seeds := exampleSeeds(t)
	var first string
	for i := 0; i < 5; i++ {
		dir := t.TempDir()
		svc := testsandbox.OpenFixtures(t, bashResource)
		a, err := app.Open(context.Background(), configs.Server{DataDir: filepath.Join(dir, "data"), Mode: "simulated", WriteRoots: []string{dir}}, nil, app.WithSandbox(svc))
		if err != nil {
			t.Fatal(err)
		}
		end := run(t, a, map[string]any{"seeds": seeds, "output_dir": filepath.Join(dir, "out"), "available_tools": []string{"text2sql:*", "rag:search"},
			"model_name": "simulated", "min_depth": 3, "max_selected_traj": 2})
		rec := synthesisRecord(t, a, end.ID, dir)
		if err := a.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = rec
			continue
		}
		if rec != first {
			a, b := strings.Split(first, "\n"), strings.Split(rec, "\n")
			for j := 0; j < min(len(a), len(b)); j++ {
				if a[j] != b[j] {
					t.Fatalf("run %d differs from run 0 at line %d:\n%.2000s\nwhere run 0 has\n%.2000s", i, j+1, b[j], a[j])
				}
			}
			t.Fatalf("run %d has %d lines, run 0 %d", i, len(b), len(a))
		}
	}
}
