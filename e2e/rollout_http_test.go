package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
)

// sseEvent is one event of GET /runs/:id/events.
type sseEvent struct {
	Seq    uint64 `json:"seq"`
	Type   string `json:"type"`
	Status string `json:"status"`
	Kind   string `json:"kind"`
}

// readStream reads a run's event stream until the server ends it.
func readStream(t testing.TB, base, id string, d time.Duration) []sseEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/runs/"+id+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("open events: %v", err)
	}
	defer resp.Body.Close()
	var evs []sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev sseEvent
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		evs = append(evs, ev)
	}
	if ctx.Err() != nil {
		t.Fatalf("the event stream of %s did not end within %s (%d events)", id, d, len(evs))
	}
	return evs
}

// TestRolloutOverHTTPKilled starts a rollout with POST /start_workflow,
// kills the server with SIGKILL in the middle, restarts it on the same data
// directory and checks that the rollout completes, that no sample whose
// row was written before the kill ran its agent again, and that the
// rollout's event stream ends with its end.
func TestRolloutOverHTTPKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	log := filepath.Join(dir, "agents.log")
	var bench strings.Builder
	for i := range 16 {
		fmt.Fprintf(&bench, `{"id": "q%d", "question": "Question %d?", "answer": "x"}`+"\n", i, i)
	}
	benchPath := filepath.Join(dir, "bench.jsonl")
	script := filepath.Join(dir, "script.jsonl")
	cmd := fmt.Sprintf(`basename "$PWD" >> %s; sleep 0.15`, log)
	lines := fmt.Sprintf(`{"tool_calls": [{"name": "bash", "arguments": {"command": %q}}]}`+"\n", cmd) +
		`{"tool_calls": [{"name": "submit", "arguments": {"answer": "x"}}]}` + "\n"
	if err := os.WriteFile(benchPath, []byte(bench.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	// The benchmark and the script are in an operator's read root; the
	// results go to the rollout's work directory, the only place a run
	// started over HTTP writes.
	serverConfig := filepath.Join(dir, "server.json")
	if err := os.WriteFile(serverConfig, []byte(fmt.Sprintf(`{"read_roots": [%q]}`, dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	settings := map[string]any{
		"data_path": benchPath, "output_dir": "out", "benchmark_name": "http", "num_chains": 2, "max_concurrency": 4,
		"models": map[string]any{"m": map[string]any{"provider": "scripted", "script": script}},
		"agent":  map[string]any{"workflow": "react", "settings": map[string]any{"model": "m"}},
	}
	addr := freePort(t)
	p := startServer(t, data, addr, "--config", serverConfig)
	var started struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	if code := p.do("POST", "/start_workflow", map[string]any{"workflow": "rollout", "settings": settings}, &started); code != 201 {
		t.Fatalf("start_workflow: %d", code)
	}
	out := filepath.Join(data, "runs", started.RunID, "out")
	results := func() map[string]bool {
		got := map[string]bool{}
		files, _ := filepath.Glob(filepath.Join(out, "results_http_*.jsonl"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			for _, l := range strings.Split(string(b), "\n") {
				var r struct {
					TaskID string `json:"task_id"`
					Chain  int    `json:"chain"`
				}
				if json.Unmarshal([]byte(l), &r) == nil && r.TaskID != "" {
					got[fmt.Sprintf("%s:%d", r.TaskID, r.Chain)] = true
				}
			}
		}
		return got
	}
	testkit.CheckFor(t, 60*time.Second, func() error {
		if len(results()) < 8 {
			return fmt.Errorf("no progress: %s", p.out.String())
		}
		return nil
	})
	p.kill()
	before := results()
	if len(before) >= 32 {
		t.Fatalf("the rollout finished before the kill")
	}

	p = startServer(t, data, addr, "--config", serverConfig)
	evs := readStream(t, p.base, started.RunID, 2*time.Minute)
	last := evs[len(evs)-1]
	if last.Type != "run" || last.Status != "succeeded" {
		t.Fatalf("stream ended with %+v", last)
	}
	spawns := 0
	for _, ev := range evs {
		if ev.Type == "op" && ev.Kind == "spawn" {
			spawns++
		}
	}
	if spawns != 4 {
		t.Fatalf("%d lane spawn events on the rollout's stream, want 4", spawns)
	}
	h := waitEnded(t, p, started.RunID, time.Minute)
	var sum struct {
		Complete        bool      `json:"complete"`
		FinishedSamples int       `json:"finished_samples"`
		Correct         int       `json:"correct"`
		PassAtK         []float64 `json:"pass_at_k"`
	}
	if err := json.Unmarshal(h.Result, &sum); err != nil {
		t.Fatal(err)
	}
	if h.Status != "succeeded" || !sum.Complete || sum.FinishedSamples != 32 || sum.Correct != 32 || len(sum.PassAtK) != 2 {
		t.Fatalf("rollout %s, summary %+v", h.Status, sum)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]int{}
	for _, l := range strings.Fields(string(b)) {
		ran[l]++
	}
	for s := range before {
		var task, chain int
		if _, err := fmt.Sscanf(s, "q%d:%d", &task, &chain); err != nil {
			t.Fatal(err)
		}
		if n := ran[fmt.Sprintf("t%05d-c%d", task, chain)]; n != 1 {
			t.Fatalf("sample %s was written before the kill but its agent ran %d times", s, n)
		}
	}
	if len(ran) != 32 {
		t.Fatalf("%d agents ran, want 32", len(ran))
	}
}
