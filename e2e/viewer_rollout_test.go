package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/internal/testkit/browsertest"
)

// TestViewerSeesTerminalRollout: with flock serve holding a data
// directory and its viewer open in chromium, a flock rollout started in
// a terminal on the same directory hands its run to the server, and the
// viewer shows it while it runs: in the runs list, then its samples as
// its lanes finish them, one sample held on a gate; once the gate opens
// the command exits 0 and the page shows the rollout succeeded with every
// sample (issue 26, with 24.1's hand-over).
func TestViewerSeesTerminalRollout(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test (scripts/test.sh runs it)")
	}
	ctx := browsertest.NewTab(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	srv := startServer(t, data, freePort(t))

	// The viewer tests' benchmark (3 tasks × 2 chains) and script, with
	// mul's chain 1 held until the gate file exists.
	fixtures, err := filepath.Abs("../viewer/testdata/rollout")
	if err != nil {
		t.Fatal(err)
	}
	bench, err := os.ReadFile(filepath.Join(fixtures, "bench.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(fixtures, "script-a.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(dir, "gate")
	wait := fmt.Sprintf("while [ ! -e %q ]; do sleep 0.05; done; echo gate-opened", gate)
	lines := strings.Split(string(script), "\n")
	for i, l := range lines {
		if strings.Contains(l, `"t00002-c1"`) {
			lines[i] = fmt.Sprintf(`{"match": "t00002-c1", "tool_calls": [{"name": "bash", "arguments": {"command": %q}}]}`+"\n"+
				`{"match": "gate-opened", "tool_calls": [{"name": "submit", "arguments": {"answer": "56"}}]}`, wait)
		}
	}
	for name, content := range map[string][]byte{"bench.jsonl": bench, "script.jsonl": []byte(strings.Join(lines, "\n"))} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "rollout.yaml")
	if err := os.WriteFile(cfg, []byte(`data_path: bench.jsonl
benchmark_name: terminal
num_chains: 2
max_concurrency: 2
evaluation_metric: exact_match
models:
  m: {provider: scripted, script: script.jsonl}
agent:
  workflow: react
  settings: {model: m, max_turns: 4}
`), 0o644); err != nil {
		t.Fatal(err)
	}

	browsertest.Do(t, ctx, "open the viewer", chromedp.Navigate(srv.base+"/"))
	browsertest.Wait[bool](t, ctx, "the runs list", `!!document.querySelector('#runs tbody')`, 15*time.Second)

	cmd := exec.Command(binary, "rollout", "--config", cfg, "--data", data, "--output-dir", filepath.Join(dir, "out"), "--quiet")
	var out testkit.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = os.WriteFile(gate, nil, 0o644)
			_ = cmd.Process.Kill()
			<-done
		}
	})

	// The rollout appears in the open list while it runs (the first page
	// follows new runs), and opens on its samples.
	id := browsertest.Wait[string](t, ctx, "the terminal's rollout in the list",
		`(() => { const r = [...document.querySelectorAll('#runs tbody tr[data-id]')].find(r => r.children[1].textContent === 'rollout' && r.dataset.status === 'running'); return r ? r.dataset.id : ''; })()`, 30*time.Second)
	browsertest.Do(t, ctx, "open it", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#runs tr[data-id=%q] a.run-link`, id))))
	browsertest.Wait[bool](t, ctx, "five samples while it runs", fmt.Sprintf(`!!document.querySelector('#head[data-run=%q][data-status=running]') && (document.getElementById('s-count')||{dataset:{}}).dataset.total === '5'`, id), 30*time.Second)

	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("flock rollout: %v\n%s", err, out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("flock rollout did not end\n%s", out.String())
	}
	browsertest.Wait[bool](t, ctx, "the end and every sample", fmt.Sprintf(`!!document.querySelector('#head[data-run=%q][data-status=succeeded]') && document.getElementById('s-count').dataset.total === '6'`, id), 30*time.Second)
	if h := srv.run(id); h.Workflow != "rollout" || h.Status != "succeeded" {
		t.Errorf("the server's head of %s: %s %s", id, h.Workflow, h.Status)
	}
}
