package viewer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/internal/testkit/browsertest"
	"github.com/flockrun/flock/server"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/viewer"
)

// env is a flock server (real executor, bbolt store in a temp dir) with
// the viewer mounted, served over real HTTP on 127.0.0.1.
type env struct {
	t     *testing.T
	app   *app.App
	ts    *httptest.Server
	base  string
	token string

	mu sync.Mutex
	// resumes are the Last-Event-ID headers of the event stream requests.
	resumes []string // guarded by mu
}

// envOpts adjust an env's server configuration and app.
type envOpts struct {
	cfg func(*configs.Server)
	app []app.Option
}

func startEnv(t *testing.T, dataDir, token string, opts ...envOpts) *env {
	t.Helper()
	ctx := context.Background()
	cfg := configs.Server{DataDir: dataDir, AuthToken: token, Addr: "127.0.0.1:0"}
	var appOpts []app.Option
	for _, o := range opts {
		if o.cfg != nil {
			o.cfg(&cfg)
		}
		appOpts = append(appOpts, o.app...)
	}
	a, err := app.Open(ctx, cfg, nil, appOpts...)
	if err != nil {
		t.Fatalf("app.Open: %v", err)
	}
	srv, err := server.New(a.Config, a.Executor, a.Executor.Store(), nil)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	srv.MountUI(viewer.Handler())
	e := &env{t: t, app: a, token: token}
	h := srv.Handler()
	e.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/events") {
			e.mu.Lock()
			e.resumes = append(e.resumes, r.Header.Get("Last-Event-ID"))
			e.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	e.base = e.ts.URL
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		e.ts.CloseClientConnections()
		_ = srv.Shutdown(sctx)
		e.ts.Close()
		if err := a.Close(sctx); err != nil {
			t.Errorf("app.Close: %v", err)
		}
	})
	return e
}

// call sends one API request with the token and decodes the answer.
func (e *env) call(method, path string, body, out any) int {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.base+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
	if resp.StatusCode >= 300 && out != nil {
		e.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode
}

func (e *env) resumed() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.resumes...)
}

// newTab, do, eval and waitJS are package browsertest's, shortened.
func newTab(t *testing.T) context.Context { return browsertest.NewTab(t) }

func do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	browsertest.Do(t, ctx, what, actions...)
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	return browsertest.Eval[T](t, ctx, expr)
}

func waitJS[T any](t *testing.T, ctx context.Context, what, expr string, timeout time.Duration) T {
	t.Helper()
	return browsertest.Wait[T](t, ctx, what, expr, timeout)
}

// shots saves screenshots into a directory named in the test log.
type shots struct {
	t   *testing.T
	dir string
}

func newShots(t *testing.T) *shots {
	dir := os.Getenv("FLOCK_SCREENSHOTS")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "flock-viewer-screenshots-"); err != nil {
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return &shots{t: t, dir: dir}
}

func (s *shots) take(ctx context.Context, name string) {
	s.t.Helper()
	s.save(ctx, name, chromedp.FullScreenshot(100))
}

// viewport saves what the window shows (for pages too long to capture).
func (s *shots) viewport(ctx context.Context, name string) {
	s.t.Helper()
	s.save(ctx, name, chromedp.CaptureScreenshot())
}

func (s *shots) save(ctx context.Context, name string, shot chromedp.Action[[]byte]) {
	s.t.Helper()
	b, err := chromedp.Run(ctx, shot)
	if err != nil {
		s.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, name+".png"), b, 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// gateLs puts an ls first on PATH that waits for the returned file to
// exist: the simulated agent's first command is ls -la, so its run stays
// live (blocked in its first tool call) until the test opens the gate.
func gateLs(t *testing.T) (gate string) {
	t.Helper()
	dir := t.TempDir()
	gate = filepath.Join(dir, "open")
	real := "/usr/bin/ls"
	if _, err := os.Stat(real); err != nil {
		real = "/bin/ls"
	}
	script := fmt.Sprintf("#!/bin/sh\nwhile [ ! -e %q ]; do sleep 0.05; done\nexec %s \"$@\"\n", gate, real)
	if err := os.WriteFile(filepath.Join(dir, "ls"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return gate
}

// triframeSettings are the repository's example settings (triframe on the
// simulated model).
func triframeSettings(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("../settings.example.json")
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// statusIs is a page predicate: the page shows run id with status st.
func statusIs(id, st string) string {
	return fmt.Sprintf(`!!document.querySelector('#head[data-run=%q][data-status=%q]')`, id, st)
}

const task = "Create a file hello.txt containing the word flock, then submit the number of bytes in it."

// TestViewerLiveRun drives the viewer in a real headless chromium against
// a real server: log in with the token, the runs list with live counts,
// a live triframe run on the simulated model whose transcript grows,
// pause and resume, an event stream dropped and resumed with
// Last-Event-ID, and a fork from step 3 that finishes.
func TestViewerLiveRun(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test (scripts/test.sh runs it)")
	}
	start := time.Now()
	// chromium first: Debian's chromium is a shell script, which must not
	// meet the gated ls.
	ctx := newTab(t)
	gate := gateLs(t)
	const token = "viewer-test-token-0123456789"
	e := startEnv(t, filepath.Join(t.TempDir(), "data"), token)
	sh := newShots(t)

	var started struct {
		RunID string `json:"run_id"`
	}
	e.call(http.MethodPost, "/start_workflow", map[string]any{"workflow": "triframe", "settings": triframeSettings(t), "task": task}, &started)
	id := started.RunID

	// Log in: the page needs no token, the API does.
	do(t, ctx, "open the viewer", chromedp.Navigate(e.base+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	sh.take(ctx, "login")
	do(t, ctx, "log in", chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS("#login-submit")))

	// The runs list shows the live run and the counts.
	waitJS[bool](t, ctx, "the run in the list", fmt.Sprintf(`!!document.querySelector('#runs tr[data-id=%q]')`, id), 15*time.Second)
	waitJS[bool](t, ctx, "live counts", `(document.querySelector('#counts [data-status=running] b')||{}).textContent === '1'`, 10*time.Second)
	if href := eval[string](t, ctx, `location.href`); strings.Contains(href, token) {
		t.Fatalf("the token is in the URL: %s", href)
	}
	if stored := eval[string](t, ctx, `sessionStorage.getItem('flock-token')`); stored != token {
		t.Fatalf("sessionStorage token = %q", stored)
	}
	sh.take(ctx, "runs")

	// Open the run: it is blocked in its first tool call (ls -la).
	do(t, ctx, "open the run", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#runs tr[data-id=%q] a.run-link`, id))))
	waitJS[bool](t, ctx, "the chosen action", `!!document.querySelector('#transcript .entry[data-type=choice]')`, 15*time.Second)
	waitJS[bool](t, ctx, "the live stream", `document.getElementById('live').dataset.state === 'live'`, 10*time.Second)
	before := eval[int](t, ctx, `document.querySelectorAll('#transcript .entry').length`)
	if st := eval[string](t, ctx, `document.getElementById('run-status').dataset.status`); st != "running" {
		t.Fatalf("run status %q before the gate opens, want running", st)
	}
	sh.viewport(ctx, "run-live")

	// Pause and resume through the buttons.
	do(t, ctx, "pause", chromedp.Click(chromedp.CSS("#btn-pause")))
	waitJS[bool](t, ctx, "paused", statusIs(id, "paused"), 15*time.Second)
	var head struct {
		Status  string `json:"status"`
		Step    int    `json:"step"`
		Entries int    `json:"entries"`
		Result  any    `json:"result"`
		Forked  *struct {
			Run  string `json:"run"`
			Step int    `json:"step"`
		} `json:"forked_from"`
	}
	e.call(http.MethodGet, "/runs/"+id, nil, &head)
	if head.Status != "paused" {
		t.Fatalf("after Pause the server says %q", head.Status)
	}
	sh.take(ctx, "run-paused")

	// Drop every connection: the page reconnects with Last-Event-ID.
	n := len(e.resumed())
	e.ts.CloseClientConnections()
	testkit.WaitWithin(t, 10*time.Second, "a reconnect with Last-Event-ID after the connection dropped", func() bool {
		r := e.resumed()
		return len(r) > n && r[len(r)-1] != ""
	})
	if r := e.resumed(); r[len(r)-1] == "0" {
		t.Fatalf("reconnected with Last-Event-ID %q", r[len(r)-1])
	}
	waitJS[bool](t, ctx, "live again", `document.getElementById('live').dataset.state === 'live'`, 10*time.Second)

	do(t, ctx, "resume", chromedp.Click(chromedp.CSS("#btn-resume")))
	waitJS[bool](t, ctx, "running", statusIs(id, "running"), 15*time.Second)

	// Open the gate: the run goes on and the transcript grows to the end.
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitJS[bool](t, ctx, "the run's end", statusIs(id, "succeeded"), 30*time.Second)
	e.call(http.MethodGet, "/runs/"+id, nil, &head)
	waitJS[bool](t, ctx, "every entry", fmt.Sprintf(`document.querySelectorAll('#transcript .entry').length === %d`, head.Entries), 10*time.Second)
	if head.Entries <= before {
		t.Fatalf("transcript did not grow: %d entries at first, %d at the end", before, head.Entries)
	}
	for _, sel := range []string{".k-task", ".k-advice", ".k-options .option.chosen", ".k-ratings", ".opt-score", ".k-choice code.call", ".k-tool pre", ".k-submission"} {
		if !eval[bool](t, ctx, fmt.Sprintf(`!!document.querySelector('#transcript %s')`, sel)) {
			t.Errorf("transcript has no %s", sel)
		}
	}
	// The timeline shows each phase event once, resumed stream included.
	evs, err := e.app.Executor.Store().Events(context.Background(), id, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, ev := range evs {
		if ev.Type == "phase" {
			steps = append(steps, strconv.FormatUint(ev.Step, 10))
		}
	}
	got := eval[[]string](t, ctx, `[...document.querySelectorAll('#timeline li')].map(li => li.dataset.step)`)
	if strings.Join(got, ",") != strings.Join(steps, ",") {
		t.Errorf("timeline steps %v, want the phase events' %v", got, steps)
	}
	ops, err := e.app.Executor.Store().Ops(context.Background(), id, "", 10000)
	if err != nil {
		t.Fatal(err)
	}
	waitJS[bool](t, ctx, "every op", fmt.Sprintf(`document.querySelectorAll('#ops tbody tr[data-status=done]').length === %d`, len(ops)), 10*time.Second)
	sh.take(ctx, "run-done")

	// Fork from step 3: the page opens the fork, which finishes.
	do(t, ctx, "fork", chromedp.SetValue(chromedp.CSS("#fork-step"), "3"),
		chromedp.SendKeys(chromedp.CSS("#fork-message"), "Check the file before you submit."),
		chromedp.Click(chromedp.CSS("#btn-fork")))
	fork := waitJS[string](t, ctx, "the fork's page", fmt.Sprintf(`location.hash.startsWith('#/runs/') && location.hash !== '#/runs/%s' && location.hash.slice(7)`, id), 15*time.Second)
	waitJS[bool](t, ctx, "the fork's end", statusIs(fork, "succeeded")+` && !!document.querySelector('#transcript .k-submission')`, 30*time.Second)
	e.call(http.MethodGet, "/runs/"+fork, nil, &head)
	if head.Forked == nil || head.Forked.Run != id || head.Forked.Step != 3 {
		t.Errorf("fork %s: forked_from = %+v, want %s at step 3", fork, head.Forked, id)
	}
	if !eval[bool](t, ctx, `[...document.querySelectorAll('#transcript .k-operator')].some(b => b.textContent.includes('Check the file'))`) {
		t.Error("the fork's transcript does not show the injected message")
	}
	sh.viewport(ctx, "fork-done")

	// A run that asks a person to approve each action: answer in the page.
	s := triframeSettings(t)
	s["ask_human"] = true
	e.call(http.MethodPost, "/start_workflow", map[string]any{"workflow": "triframe", "settings": s, "task": task}, &started)
	do(t, ctx, "open the asking run", chromedp.Navigate(e.base+"/#/runs/"+started.RunID))
	answered := 0
	for {
		st := waitJS[string](t, ctx, "a question or the end", fmt.Sprintf(`(document.querySelector('#head[data-run=%q]') && document.querySelector('#human:not([hidden]) .human-op button.choice') && 'ask') ||
			(%s && 'done')`, started.RunID, statusIs(started.RunID, "succeeded")), 30*time.Second)
		if st == "done" {
			break
		}
		if answered == 0 {
			sh.take(ctx, "human-question")
		}
		op := eval[string](t, ctx, `document.querySelector('#human .human-op').dataset.op`)
		do(t, ctx, "approve", chromedp.Click(chromedp.CSS(`#human .human-op button.choice`)))
		waitJS[bool](t, ctx, "the answer taken", fmt.Sprintf(`!document.querySelector('#human .human-op[data-op=%q]')`, op), 15*time.Second)
		if answered++; answered > 10 {
			t.Fatal("more than 10 questions")
		}
	}
	if answered < 2 {
		t.Errorf("answered %d questions, want one per action", answered)
	}

	// Intervention mode: replace the first action through the page.
	s = triframeSettings(t)
	s["intervention"] = true
	e.call(http.MethodPost, "/start_workflow", map[string]any{"workflow": "triframe", "settings": s, "task": task}, &started)
	do(t, ctx, "open the intervention run", chromedp.Navigate(e.base+"/#/runs/"+started.RunID))
	waitJS[bool](t, ctx, "the intervention", fmt.Sprintf(`!!document.querySelector('#head[data-run=%q]') && !!document.querySelector('#human:not([hidden]) .human-op[data-kind=intervention] button.replace')`, started.RunID), 30*time.Second)
	do(t, ctx, "replace", chromedp.Click(chromedp.CSS(`#human .human-op button.replace`)),
		chromedp.SetValue(chromedp.CSS("#intervene-action"), `{"name": "bash", "arguments": {"command": "echo replaced-by-operator"}}`),
		chromedp.Click(chromedp.CSS("#btn-intervene")))
	waitJS[bool](t, ctx, "the replaced action's output", `[...document.querySelectorAll('#transcript .k-tool pre')].some(p => p.textContent.includes('replaced-by-operator'))`, 30*time.Second)
	sh.take(ctx, "intervened")
	for {
		st := waitJS[string](t, ctx, "an intervention or the end", fmt.Sprintf(`(document.querySelector('#head[data-run=%q]') && document.querySelector('#human:not([hidden]) .human-op button.approve') && 'ask') ||
			(%s && 'done')`, started.RunID, statusIs(started.RunID, "succeeded")), 30*time.Second)
		if st == "done" {
			break
		}
		op := eval[string](t, ctx, `document.querySelector('#human .human-op').dataset.op`)
		do(t, ctx, "approve", chromedp.Click(chromedp.CSS(`#human .human-op button.approve`)))
		waitJS[bool](t, ctx, "the approval taken", fmt.Sprintf(`!document.querySelector('#human .human-op[data-op=%q]')`, op), 15*time.Second)
	}
	do(t, ctx, "the list at the end", chromedp.Navigate(e.base+"/"))
	waitJS[bool](t, ctx, "four runs", `document.querySelectorAll('#runs tbody tr[data-id]').length === 4 && (document.querySelector('#counts .count b')||{}).textContent === '4'`, 10*time.Second)
	sh.take(ctx, "runs-end")
	t.Logf("browser test took %s", time.Since(start).Round(time.Millisecond))
}

var _ = state.StatusRunning
