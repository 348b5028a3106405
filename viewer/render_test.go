package viewer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/bolt"
)

// Seeded store sizes of TestViewerFirstRender (issue 15, point 5).
const (
	seedRuns    = 100_000
	seedEntries = 5_000
)

// seedStore writes seedRuns ended runs, one run with seedEntries triframe
// entries and five descendants of it (three children, two grandchildren)
// straight into a bbolt store at dataDir, and returns the big run's id and
// the id of a run deep in the list.
func seedStore(t *testing.T, dataDir string) (big, deep string) {
	t.Helper()
	st := openSeed(t, dataDir)
	defer closeSeed(t, st)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	statuses := []state.Status{state.StatusSucceeded, state.StatusSucceeded, state.StatusFailed, state.StatusCancelled}
	workflows := []string{"triframe", "react", "modular", "rollout"}
	id := func(i int) string { return fmt.Sprintf("01seed%010d", i) }
	head := func(i int) *state.Run {
		created := t0.Add(time.Duration(i) * time.Second)
		ended := created.Add(time.Duration(5+i%50) * time.Second)
		return &state.Run{ID: id(i), Workflow: workflows[i%len(workflows)], Status: statuses[i%len(statuses)],
			Phase: "process", Step: uint64(10 + i%30), Entries: uint64(i % 40), EndReason: "submitted",
			Result:    json.RawMessage(`"42"`),
			Usage:     operations.RunUsage{Tokens: 1000 + i%9000, Actions: i % 12, Seconds: float64(i%50) + 0.5},
			Limits:    operations.RunLimits{Tokens: 500000, Actions: 30, Seconds: 600},
			CreatedAt: created, UpdatedAt: ended, EndedAt: &ended}
	}
	const workers = 256
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < seedRuns; i += workers {
				if err := st.Commit(ctx, &state.Commit{RunID: id(i), Run: head(i)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	big = id(seedRuns)
	h := head(seedRuns)
	h.Entries = seedEntries
	var entries []record.Entry
	for i := range seedEntries {
		typ, data := triframeEntry(i)
		entries = append(entries, record.Entry{Seq: uint64(i + 1), Type: typ, Phase: "actor", Step: uint64(i/5 + 1), Data: data})
	}
	for i := 0; i < len(entries); i += 1000 {
		c := &state.Commit{RunID: big, Entries: entries[i:min(i+1000, len(entries))]}
		if i == 0 {
			c.Run = h
		}
		if err := st.Commit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	// The big run's children (a rollout's chains, subagents) and
	// grandchildren, for the tree.
	for i, parent := range []string{big, big, big, id(seedRuns + 1), id(seedRuns + 1)} {
		c := head(seedRuns + 1 + i)
		c.ParentID = parent
		if err := st.Commit(ctx, &state.Commit{RunID: c.ID, Run: c}); err != nil {
			t.Fatal(err)
		}
	}
	return big, id(seedRuns / 10)
}

// openSeed opens the bbolt store of dataDir for a bulk load (NoSync: the
// test can rebuild it; closeSeed syncs).
func openSeed(t *testing.T, dataDir string) *bolt.Store {
	t.Helper()
	st, err := bolt.Open(filepath.Join(dataDir, "flock.db"), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func closeSeed(t *testing.T, st *bolt.Store) {
	t.Helper()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// triframeEntry returns the i-th entry of a long triframe transcript:
// advice, options, ratings, choice, tool output (every 4th one long).
func triframeEntry(i int) (string, json.RawMessage) {
	step := i / 5
	cmd := fmt.Sprintf("grep -n 'pattern %d' src/*.go", step)
	var v any
	typ := ""
	switch i % 5 {
	case 0:
		typ, v = "advice", map[string]any{"summary": "advice", "advice": fmt.Sprintf("Step %d: run `%s` and read its output carefully before changing anything.", step, cmd), "advisor": 0}
	case 1:
		var opts []map[string]any
		for o := range 4 {
			opts = append(opts, map[string]any{"content": fmt.Sprintf("Option %d of step %d: look for the pattern.", o, step),
				"call":   map[string]any{"id": fmt.Sprintf("call_%d_%d", step, o), "name": "bash", "arguments": map[string]any{"command": cmd}},
				"source": fmt.Sprintf("actor %d", o%2)})
		}
		typ, v = "options", map[string]any{"summary": "4 options", "options": opts}
	case 2:
		typ, v = "ratings", map[string]any{"summary": "ratings", "best": 0, "scores": []map[string]any{
			{"option": 0, "mean": 1.5, "min": 1, "max": 2, "count": 2}, {"option": 1, "mean": 0.5, "min": 0, "max": 1, "count": 2},
			{"option": 2, "mean": 0.25, "min": 0, "max": 0.5, "count": 2}, {"option": 3, "mean": -1, "min": -1, "max": -1, "count": 2}}}
	case 3:
		typ, v = "choice", map[string]any{"summary": cmd, "index": 0, "mean": 1.5, "option": map[string]any{"content": "Look for the pattern.",
			"call": map[string]any{"name": "bash", "arguments": map[string]any{"command": cmd}}}}
	default:
		out := fmt.Sprintf("src/main.go:%d: pattern %d found", step, step)
		if step%4 == 0 {
			out = strings.Repeat(out+"\n", 120)
		}
		typ, v = "tool_output", map[string]any{"summary": "bash exit 0", "tool": "bash", "output": out}
	}
	b, _ := json.Marshal(v)
	return typ, b
}

// listFilters drives the runs list's filters and paging in the page.
func listFilters(t *testing.T, ctx context.Context, e *env, big string) {
	t.Helper()
	rows := `[...document.querySelectorAll('#runs tbody tr[data-id]')]`
	do(t, ctx, "the list", chromedp.Navigate(e.base+"/"))
	waitJS[bool](t, ctx, "the first page", rows+`.length === 50`, 10*time.Second)
	first := eval[string](t, ctx, rows+`[0].dataset.id`)
	do(t, ctx, "older", chromedp.Click(chromedp.CSS("#next")))
	waitJS[bool](t, ctx, "page 2", fmt.Sprintf(`document.getElementById('page').textContent.trim() === 'page 2' && %s.length === 50 && !%s.some(r => r.dataset.id === %q)`, rows, rows, first), 10*time.Second)
	do(t, ctx, "newer", chromedp.Click(chromedp.CSS("#prev")))
	waitJS[bool](t, ctx, "page 1 again", fmt.Sprintf(`%s.length === 50 && %s[0].dataset.id === %q`, rows, rows, first), 10*time.Second)

	do(t, ctx, "status filter", chromedp.SetValue(chromedp.CSS("#f-status"), "cancelled"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('f-status').dispatchEvent(new Event('change'))`))
	waitJS[bool](t, ctx, "cancelled runs only", fmt.Sprintf(`location.hash === '#/?status=cancelled' && %s.length === 50 && %s.every(r => r.dataset.status === 'cancelled')`, rows, rows), 10*time.Second)
	do(t, ctx, "workflow filter", chromedp.Navigate(e.base+"/#/?workflow=react"))
	waitJS[bool](t, ctx, "react runs only", fmt.Sprintf(`%s.length === 50 && %s.every(r => r.children[1].textContent === 'react')`, rows, rows), 10*time.Second)
	do(t, ctx, "parent filter", chromedp.Navigate(e.base+"/#/?parent_id="+big))
	waitJS[bool](t, ctx, "the big run's children", fmt.Sprintf(`%s.length === 3 && %s.every(r => r.children[10].textContent === %q)`, rows, rows, big), 10*time.Second)
}

// TestViewerFirstRender measures, in a real headless chromium, the time
// to first render of the runs list over 100,000 runs and of a run page
// with 5,000 entries (issue 15, point 5; docs/benchmarks.md "Issue 15").
// Times are from navigation start to the app's performance marks
// flock:runs-rendered and flock:transcript-rendered, with the browser's
// first-contentful-paint beside them.
func TestViewerFirstRender(t *testing.T) {
	if testing.Short() {
		t.Skip("browser benchmark (scripts/test.sh runs it)")
	}
	ctx := newTab(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	t0 := time.Now()
	big, deep := seedStore(t, dataDir)
	t.Logf("seeded %d runs and a run of %d entries in %s", seedRuns, seedEntries, time.Since(t0).Round(time.Millisecond))
	e := startEnv(t, dataDir, "")
	sh := newShots(t)

	type render struct{ Mark, FCP, All float64 }
	measure := func(url, mark, done string) render {
		do(t, ctx, "blank", chromedp.Navigate("about:blank"))
		do(t, ctx, "open "+url, chromedp.Navigate(url))
		r := waitJS[render](t, ctx, mark, fmt.Sprintf(`(() => {
			const m = performance.getEntriesByName(%q)[0];
			if (!m || !(%s)) return null;
			const f = performance.getEntriesByName('first-contentful-paint')[0];
			return {Mark: m.startTime, FCP: f ? f.startTime : -1, All: performance.now()};
		})()`, mark, done), 30*time.Second)
		return r
	}
	median := func(rs []render, f func(render) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	const rounds = 3
	var list, run []render
	for range rounds {
		list = append(list, measure(e.base+"/", "flock:runs-rendered", `document.querySelectorAll('#runs tbody tr').length === 50`))
	}
	waitJS[bool](t, ctx, "the count of runs", `(document.querySelector('#counts .count b')||{}).textContent === '100,006'`, 10*time.Second)
	sh.viewport(ctx, "runs-100k")
	for range rounds {
		run = append(run, measure(e.base+"/#/runs/"+big, "flock:transcript-rendered", fmt.Sprintf(`document.querySelectorAll('#transcript .entry').length === %d`, seedEntries)))
	}
	sh.viewport(ctx, "run-5000")
	// The children tree of the big run: three children, two grandchildren
	// under the first child.
	child, grand := fmt.Sprintf("01seed%010d", seedRuns+1), fmt.Sprintf("01seed%010d", seedRuns+4)
	waitJS[bool](t, ctx, "the children tree", fmt.Sprintf(`document.querySelectorAll('#children li').length === 5 &&
		!!document.querySelector('#children li[data-id=%q] > ul > li[data-id=%q] .badge')`, child, grand), 10*time.Second)
	mark := func(r render) float64 { return r.Mark }
	fcp := func(r render) float64 { return r.FCP }
	all := func(r render) float64 { return r.All }
	listFilters(t, ctx, e, big)
	t.Logf("runs list, %d runs: first render %.0f ms, first contentful paint %.0f ms (median of %d)", seedRuns+6, median(list, mark), median(list, fcp), rounds)
	t.Logf("run page, %d entries: first transcript render %.0f ms, first contentful paint %.0f ms, all %d entries %.0f ms (median of %d)",
		seedEntries, median(run, mark), median(run, fcp), seedEntries, median(run, all), rounds)
	if m := median(run, mark); m > 5000 {
		t.Errorf("first transcript render took %.0f ms", m)
	}
	if m := median(list, mark); m > 5000 {
		t.Errorf("first runs list render took %.0f ms", m)
	}

	// Paging deep into the list and counting stay cheap on the server.
	for _, path := range []string{"/runs?limit=50", "/runs?limit=50&after=" + deep, "/runs?limit=50&status=cancelled&after=" + deep} {
		var best time.Duration
		for i := range 5 {
			s := time.Now()
			if code := e.call(http.MethodGet, path, nil, nil); code != http.StatusOK {
				t.Fatalf("GET %s: %d", path, code)
			}
			if d := time.Since(s); i == 0 || d < best {
				best = d
			}
		}
		t.Logf("GET %s: %s (best of 5)", path, best.Round(10*time.Microsecond))
	}
	counter := e.app.Executor.Store().(state.RunCounter)
	var best time.Duration
	for i := range 5 {
		s := time.Now()
		if _, err := counter.CountRuns(context.Background()); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(s); i == 0 || d < best {
			best = d
		}
	}
	t.Logf("CountRuns over %d runs (GET /stats/runs uncached): %s (best of 5)", seedRuns+6, best.Round(10*time.Microsecond))
}
