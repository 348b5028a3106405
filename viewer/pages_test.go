package viewer_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit/testsandbox"
)

// start starts a run over HTTP and returns its id.
func (e *env) start(t *testing.T, workflow string, settings map[string]any, task string) string {
	t.Helper()
	var started struct {
		RunID string `json:"run_id"`
	}
	e.call(http.MethodPost, "/start_workflow", map[string]any{"workflow": workflow, "settings": settings, "task": task}, &started)
	return started.RunID
}

// gateFile returns a path that does not exist yet and a shell command
// that waits for it.
func gateFile(t *testing.T) (path, wait string) {
	path = filepath.Join(t.TempDir(), "gate")
	return path, fmt.Sprintf("while [ ! -e %q ]; do sleep 0.05; done", path)
}

func open(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestViewerRunPage drives what any run's page shows (issue 26, point
// 3): a live script run's echo output in its transcript while it runs,
// the workflow graph with the current phase marked, the vars as each
// step left them, the tokens and cost of a triframe run by model as the
// API sums them, and an op's request and result at the table's full
// width, with a command and its output in the op's row.
func TestViewerRunPage(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test (scripts/test.sh runs it)")
	}
	ctx := newTab(t)
	e := startEnv(t, filepath.Join(t.TempDir(), "data"), "")
	sh := newShots(t)
	gate, wait := gateFile(t)
	id := e.start(t, "script", map[string]any{"commands": []string{"echo first-output", wait, "echo second-output; echo to-stderr >&2"}}, "print two lines")
	do(t, ctx, "open the script run", chromedp.Navigate(e.base+"/#/runs/"+id))
	waitJS[bool](t, ctx, "the first command's output while the run is live", statusIs(id, "running")+
		` && [...document.querySelectorAll('#transcript .entry[data-type=command] pre')].some(p => p.textContent.includes('first-output'))`, 20*time.Second)
	waitJS[bool](t, ctx, "the graph with the current phase", `!!document.querySelector('#graph .node.current[data-phase=run]')`, 10*time.Second)
	sh.viewport(ctx, "run-live-script")
	open(t, gate)
	waitJS[bool](t, ctx, "the end", statusIs(id, "succeeded")+` && document.querySelectorAll('#transcript .entry[data-type=command]').length === 3`, 20*time.Second)
	if !eval[bool](t, ctx, `[...document.querySelectorAll('#transcript .entry[data-type=command] pre.stderr')].some(p => p.textContent.includes('to-stderr'))`) {
		t.Error("the third command's stderr is not shown")
	}
	waitJS[bool](t, ctx, "the graph's last phase", `!!document.querySelector('#graph .node.last[data-phase=run]') && !!document.querySelector('#graph .edge.seen[data-from=run][data-to=run]')`, 10*time.Second)

	// Vars: now, and as step 2 left them (one command done).
	waitJS[bool](t, ctx, "the current vars", `document.getElementById('vars').dataset.step === 'now' && document.querySelector('#vars dd').textContent.includes('"commands": 3')`, 10*time.Second)
	do(t, ctx, "pick step 2", chromedp.Click(chromedp.CSS(`#timeline li[data-step="2"]`)))
	waitJS[bool](t, ctx, "the vars after step 2", `document.getElementById('vars').dataset.step === '2' && document.querySelector('#vars dd').textContent.includes('"commands": 1') && !!document.querySelector('#vars dt.changed[data-name=summary]')`, 10*time.Second)
	do(t, ctx, "edit them in the fork form", chromedp.Click(chromedp.CSS(`#vars-edit`)))
	if v := eval[string](t, ctx, `document.getElementById('fork-vars').value + '|' + document.getElementById('fork-step').value`); !strings.Contains(v, `"commands": 1`) || !strings.HasSuffix(v, "|2") {
		t.Errorf("fork form after 'edit in the fork form': %q", v)
	}

	// The op journal: a bash op's command and output in its row; its
	// result in a row of its own as wide as the table.
	waitJS[bool](t, ctx, "the ops", `document.querySelectorAll('#ops tbody tr[data-status=done]').length === 3`, 10*time.Second)
	row := `document.querySelector('#ops tbody tr[data-status=done]')`
	if got := eval[string](t, ctx, row+`.querySelector('td.req code').textContent + '|' + `+row+`.querySelector('td.res').textContent`); !strings.Contains(got, "$ echo first-output|") || !strings.Contains(got, "first-output\n") {
		t.Errorf("first op's row: %q", got)
	}
	do(t, ctx, "open a result", chromedp.Click(chromedp.CSS(`#ops tbody tr[data-status=done] .show-res`)))
	ratio := waitJS[float64](t, ctx, "the result at full width", `(() => {
		const d = document.querySelector('#ops tr.op-detail[data-what=result]');
		return d && d.textContent.includes('first-output') && d.firstElementChild.colSpan === 9 && d.firstElementChild.offsetWidth / document.getElementById('ops').offsetWidth;
	})()`, 10*time.Second)
	if ratio < 0.95 {
		t.Errorf("the result's row is %.0f%% of the table's width", ratio*100)
	}
	sh.take(ctx, "run-script")

	// A triframe run's tokens and cost by model, as GET /runs/{id}/usage
	// sums them.
	tf := e.start(t, "triframe", triframeSettings(t), task)
	e.waitRun(t, tf, "succeeded")
	var usage struct {
		Models []struct {
			Model  string `json:"model"`
			Calls  int    `json:"calls"`
			Prompt int    `json:"prompt_tokens"`
		} `json:"models"`
	}
	e.call(http.MethodGet, "/runs/"+tf+"/usage", nil, &usage)
	if len(usage.Models) == 0 || usage.Models[0].Calls == 0 {
		t.Fatalf("usage of the triframe run: %+v", usage)
	}
	do(t, ctx, "open the triframe run", chromedp.Navigate(e.base+"/#/runs/"+tf))
	for _, m := range usage.Models {
		waitJS[bool](t, ctx, "the model's row", fmt.Sprintf(`(() => { const r = document.querySelector('#models tr[data-model=%q]'); return !!r && r.children[1].textContent.replace(/,/g, '').startsWith(%q) && r.children[2].textContent.replace(/,/g, '') === %q; })()`,
			m.Model, fmt.Sprint(m.Calls), fmt.Sprint(m.Prompt)), 10*time.Second)
	}
	waitJS[bool](t, ctx, "triframe's graph", `document.querySelectorAll('#graph .node').length >= 5 && !!document.querySelector('#graph .node.last')`, 10*time.Second)
	sh.take(ctx, "run-triframe")
}

// TestViewerSynthesis runs a synthesis (one seed, the scripted model of
// phases/synthesis's end-to-end test: one QA pair kept, one rejected by
// the grounded check) and opens it (issue 26, point 2): the kept pair
// with its hops, evidence and checks, the rejected one with its failed
// check, and the seed's tree drawn with the selected paths marked, a
// node opening its full observation.
func TestViewerSynthesis(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test (scripts/test.sh runs it)")
	}
	ctx := newTab(t)
	fixtures, err := filepath.Abs("../phases/synthesis/testdata/e2e")
	if err != nil {
		t.Fatal(err)
	}
	e := startEnv(t, filepath.Join(t.TempDir(), "data"), "", envOpts{
		cfg: func(c *configs.Server) { c.ReadRoots = []string{fixtures} },
		app: []app.Option{app.WithSandbox(testsandbox.OpenFixtures(t, ""))}})
	sh := newShots(t)
	id := e.start(t, "synthesis", map[string]any{
		"seeds": []string{"The sample concert catalogue."}, "output_dir": "out",
		"available_tools": []string{"text2sql:execute", "rag:search"}, "model_name": "m",
		"models":    map[string]any{"m": map[string]any{"provider": "scripted", "script": filepath.Join(fixtures, "script.jsonl")}},
		"max_depth": 3, "branching_factor": 2, "depth_threshold": 1, "min_depth": 3, "max_selected_traj": 2, "max_retries": 2,
	}, "")
	e.waitRun(t, id, "succeeded")
	do(t, ctx, "open the synthesis", chromedp.Navigate(e.base+"/#/runs/"+id))
	waitJS[bool](t, ctx, "the QA pairs", `(document.getElementById('qa-counts')||{dataset:{}}).dataset.kept === '1' && document.getElementById('qa-counts').dataset.rejected === '1'`, 20*time.Second)
	kept := `document.querySelector('#qa-kept .qa')`
	if n := eval[int](t, ctx, kept+`.querySelectorAll('.hop').length`); n < 3 {
		t.Errorf("the kept pair shows %d hops, want its reasoning steps (at least 3)", n)
	}
	if !eval[bool](t, ctx, kept+`.querySelectorAll('blockquote.evidence').length >= 3 && [...`+kept+`.querySelectorAll('.check')].some(c => c.textContent.includes('grounded'))`) {
		t.Error("the kept pair lacks its evidence or its checks")
	}
	if c := eval[string](t, ctx, `document.querySelector('#qa-rejected .qa').dataset.check`); c != "grounded" {
		t.Errorf("the rejected pair's failed check %q, want grounded", c)
	}
	if r := eval[string](t, ctx, `document.querySelector('#qa-rejected .qa .text').textContent`); !strings.Contains(r, "does not occur") {
		t.Errorf("the rejected pair's reason %q", r)
	}
	// The seed's tree: 6 nodes and the root, the selected paths marked.
	do(t, ctx, "open the seed's tree", chromedp.Click(chromedp.CSS(`#seeds details.seed summary`)))
	waitJS[bool](t, ctx, "the tree", `document.querySelectorAll('#seeds .ttree .tnode').length === 7`, 10*time.Second)
	sel := eval[int](t, ctx, `document.querySelectorAll('#seeds .ttree .tnode.sel').length`)
	if sel < 4 || eval[int](t, ctx, `document.querySelectorAll('#seeds .ttree .tedge.sel').length`) < 3 {
		t.Errorf("%d selected nodes: the selected paths are not marked", sel)
	}
	node := eval[string](t, ctx, `document.querySelector('#seeds .ttree .tnode.sel:not([data-node="0"])').dataset.node`)
	do(t, ctx, "open a node", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#seeds .ttree .tnode[data-node=%q]`, node))))
	full := waitJS[string](t, ctx, "the node's full observation", `(document.querySelector('#seeds .node-detail pre.full-obs')||{}).textContent`, 10*time.Second)
	clipped := eval[string](t, ctx, fmt.Sprintf(`document.querySelector('#seeds .ttree .tnode[data-node=%q] text.obs').textContent`, node))
	if len(full) <= len(clipped) || !strings.HasPrefix(strings.Join(strings.Fields(full), " "), strings.TrimSuffix(clipped, "…")) {
		t.Errorf("node %s: clipped %q, full %q", node, clipped, full)
	}
	sh.viewport(ctx, "synthesis")

	// The seed run's own page draws its tree too.
	seed := eval[string](t, ctx, `document.querySelector('#seeds details.seed').dataset.id`)
	do(t, ctx, "open the seed run", chromedp.Navigate(e.base+"/#/runs/"+seed))
	waitJS[bool](t, ctx, "the seed's tree", `document.querySelectorAll('#seed .ttree .tnode').length === 7 && document.querySelectorAll('#seed #qa-kept .qa').length === 1`, 10*time.Second)
	sh.viewport(ctx, "synthesis-seed")
}

// TestViewerRunsList checks the runs list (issue 26, point 4): top-level
// runs by default, children under their parent on demand, each row with
// its task's first line, end reason and (rollouts) score, "waiting for
// you" on a run that waits on a question, and search by task text.
func TestViewerRunsList(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test (scripts/test.sh runs it)")
	}
	ctx := newTab(t)
	e := rolloutEnv(t, "")
	sh := newShots(t)
	ro := e.startRollout(t, "script-a.jsonl")
	head := e.waitRun(t, ro, "succeeded")
	alpha := e.start(t, "script", map[string]any{"commands": []string{"echo alpha"}}, "alpha job one\nsecond line of the task")
	beta := e.start(t, "script", map[string]any{"commands": []string{"echo beta"}}, "beta job two")
	e.waitRun(t, alpha, "succeeded")
	e.waitRun(t, beta, "succeeded")
	s := triframeSettings(t)
	s["ask_human"] = true
	ask := e.start(t, "triframe", s, task)

	do(t, ctx, "open the list", chromedp.Navigate(e.base+"/"))
	top := `[...document.querySelectorAll('#runs tbody tr[data-id]')]`
	got := waitJS[[]string](t, ctx, "four top-level runs", top+`.length === 4 && `+top+`.map(r => r.dataset.id)`, 15*time.Second)
	want := []string{ask, beta, alpha, ro}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("top-level rows %v, want %v", got, want)
	}
	cell := func(id, cls string) string {
		return eval[string](t, ctx, fmt.Sprintf(`document.querySelector('#runs tr[data-id=%q] td.%s').textContent`, id, cls))
	}
	if c := cell(alpha, "task"); c != "alpha job one" {
		t.Errorf("alpha's task cell %q, want its first line", c)
	}
	summary := head["result"].(map[string]any)
	if c := cell(ro, "score"); c != fmt.Sprintf("%.3f", summary["mean_score"].(float64)) {
		t.Errorf("rollout's score cell %q, summary mean %v", c, summary["mean_score"])
	}
	if c := cell(ro, "reason"); c != head["end_reason"] || c == "" {
		t.Errorf("rollout's end reason cell %q, head %v", c, head["end_reason"])
	}
	waitJS[bool](t, ctx, "waiting for you", fmt.Sprintf(`!!document.querySelector('#runs tr[data-id=%q] .s-waiting')`, ask), 30*time.Second)
	if eval[int](t, ctx, `document.querySelectorAll('#runs .s-waiting').length`) != 1 {
		t.Error("another run than the asking one says waiting for you")
	}
	sh.viewport(ctx, "runs-top")

	// The rollout's children (its lanes) and theirs (the samples' agents).
	var lanes struct {
		Runs []struct {
			ID       string `json:"id"`
			Children int    `json:"children"`
		} `json:"runs"`
	}
	e.call(http.MethodGet, "/runs?parent_id="+ro, nil, &lanes)
	do(t, ctx, "expand the rollout", chromedp.Click(chromedp.CSS(fmt.Sprintf(`button.expand[data-id=%q]`, ro))))
	waitJS[bool](t, ctx, "its lanes", fmt.Sprintf(`document.querySelectorAll('#runs tr[data-depth="1"]').length === %d`, len(lanes.Runs)), 10*time.Second)
	lane := lanes.Runs[0]
	do(t, ctx, "expand a lane", chromedp.Click(chromedp.CSS(fmt.Sprintf(`button.expand[data-id=%q]`, lane.ID))))
	waitJS[bool](t, ctx, "its agents", fmt.Sprintf(`document.querySelectorAll('#runs tr[data-depth="2"]').length === %d`, lane.Children), 10*time.Second)
	rowsOrder := eval[[]string](t, ctx, top+`.map(r => r.dataset.depth)`)
	if i := strings.Index(strings.Join(rowsOrder, ""), "1"); i != 4 {
		t.Errorf("rows by depth %v: the children do not follow their parent (the last top-level row)", rowsOrder)
	}
	sh.viewport(ctx, "runs-tree")

	// Search by task text, on the server.
	setInput(t, ctx, "#f-search", "BETA job")
	waitJS[bool](t, ctx, "the search", fmt.Sprintf(`location.hash.includes('q=BETA') && %s.length === 1 && %s[0].dataset.id === %q`, top, top, beta), 10*time.Second)
	// Child runs too: every run.
	var all struct {
		Runs []any `json:"runs"`
	}
	e.call(http.MethodGet, "/runs?limit=100", nil, &all)
	do(t, ctx, "every run", chromedp.Navigate(e.base+"/#/?all=1"))
	waitJS[bool](t, ctx, "every run listed", fmt.Sprintf(`%s.length === %d`, top, len(all.Runs)), 10*time.Second)
	do(t, ctx, "stop the asking run", chromedp.Navigate("about:blank"))
	e.call(http.MethodPost, "/runs/"+ask+"/cancel", nil, nil)
}

// TestViewerCompare compares (issue 26, point 5) two rollouts of the
// same benchmark — per-task score differences, the samples that turned
// incorrect and those that turned correct — and a fork with its parent,
// their transcripts aligned from the fork step.
func TestViewerCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test (scripts/test.sh runs it)")
	}
	ctx := newTab(t)
	e := rolloutEnv(t, "")
	sh := newShots(t)
	a, b := e.startRollout(t, "script-a.jsonl"), e.startRollout(t, "script-b.jsonl")
	e.waitRun(t, a, "succeeded")
	e.waitRun(t, b, "succeeded")
	ra, rb := e.rows(t, a), e.rows(t, b)
	var broke, fixed []string
	for k, x := range ra {
		y := rb[k]
		switch {
		case x.ok() && !y.ok():
			broke = append(broke, k)
		case !x.ok() && y.ok():
			fixed = append(fixed, k)
		}
	}
	sort.Strings(broke)
	sort.Strings(fixed)
	if len(broke) == 0 || len(fixed) == 0 {
		t.Fatalf("the fixtures should change samples both ways: broke %v fixed %v", broke, fixed)
	}
	// From the rollout's page, pick the other rollout.
	do(t, ctx, "open rollout b", chromedp.Navigate(e.base+"/#/runs/"+b))
	waitJS[bool](t, ctx, "the compare menu", `!!document.getElementById('cmp-rollout')`, 15*time.Second)
	waitJS[bool](t, ctx, "rollout a in the menu", fmt.Sprintf(`!!document.querySelector('#cmp-rollout option[value=%q]')`, a), 10*time.Second)
	setInput(t, ctx, "#cmp-rollout", a)
	keys := func(list string) string {
		return fmt.Sprintf(`[...document.querySelectorAll('#%s li')].map(li => li.dataset.key).sort().join(',')`, list)
	}
	waitJS[bool](t, ctx, "the comparison", fmt.Sprintf(`location.hash === '#/compare?a=%s&b=%s' && %s === %q && %s === %q`,
		a, b, keys("cmp-broke"), strings.Join(broke, ","), keys("cmp-fixed"), strings.Join(fixed, ",")), 20*time.Second)
	// Per task: B's mean score minus A's.
	mean := func(rows map[string]sampleRow, task string) float64 {
		sum, n := 0.0, 0
		for _, r := range rows {
			if r.TaskID == task && (r.Evaluated || !r.Success) {
				if r.Success {
					sum += r.Score
				}
				n++
			}
		}
		return sum / float64(n)
	}
	diffs := eval[map[string]string](t, ctx, `Object.fromEntries([...document.querySelectorAll('#cmp-tasks .vt-row')].map(r => [r.dataset.task, r.dataset.diff]))`)
	for _, task := range []string{"add", "cap", "mul"} {
		d := mean(rb, task) - mean(ra, task)
		got, shown := diffs[task]
		if d == 0 && shown {
			t.Errorf("task %s has no difference but is listed (%s)", task, got)
		}
		if d != 0 && got != strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", d), "0"), ".") {
			t.Errorf("task %s: page diff %q, want %.3f", task, got, d)
		}
	}
	sh.viewport(ctx, "compare-rollouts")

	// A fork and its parent: the shared steps once, then step by step.
	parent := e.start(t, "script", map[string]any{"commands": []string{"echo one", "echo two", "echo three", "echo four"}}, "count to four")
	e.waitRun(t, parent, "succeeded")
	var forked struct {
		RunID string `json:"run_id"`
	}
	e.call(http.MethodPost, "/runs/"+parent+"/fork", map[string]any{"step": 2, "message": "go on from here"}, &forked)
	e.waitRun(t, forked.RunID, "succeeded")
	do(t, ctx, "open the fork", chromedp.Navigate(e.base+"/#/runs/"+forked.RunID))
	waitJS[bool](t, ctx, "the link to compare", `!!document.getElementById('cmp-parent')`, 15*time.Second)
	do(t, ctx, "compare with the parent", chromedp.Click(chromedp.CSS("#cmp-parent")))
	steps := waitJS[[]string](t, ctx, "the aligned steps", `document.getElementById('cmp-shared') && document.querySelectorAll('#cmp-steps .cmp-step').length > 0 &&
		[...document.querySelectorAll('#cmp-steps .cmp-step')].map(r => r.dataset.step)`, 20*time.Second)
	if strings.Join(steps, ",") != "2,3,4,5" {
		t.Errorf("aligned steps %v, want the fork's message at step 2, then steps 3 to 5", steps)
	}
	if s := eval[string](t, ctx, `document.querySelector('#cmp-shared summary').textContent`); !strings.Contains(s, "up to step 2") {
		t.Errorf("shared part %q", s)
	}
	// Each side has its own command outputs from step 3 on.
	for _, side := range []string{"a", "b"} {
		if !eval[bool](t, ctx, fmt.Sprintf(`[...document.querySelectorAll('#cmp-steps .cmp-cell[data-side=%s]')].some(c => c.textContent.includes('three'))`, side)) {
			t.Errorf("side %s lacks the third command's output", side)
		}
	}
	if !eval[bool](t, ctx, `[...document.querySelectorAll('#cmp-steps .cmp-step[data-step="2"] .cmp-cell[data-side=b] .k-operator')].some(c => c.textContent.includes('go on from here'))`) {
		t.Error("the fork's side lacks the injected message")
	}
	sh.viewport(ctx, "compare-fork")
}
