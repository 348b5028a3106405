package server

import (
	"bytes"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestWireGolden")

// masks replace what differs from one run of the test to the next: times,
// durations, request ids. Run ids are replaced separately, by name.
var masks = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)"`), `"<time>"`},
	{regexp.MustCompile(`"seconds":[0-9.e+-]+`), `"seconds":<seconds>`},
	{regexp.MustCompile(`"duration_ms":\d+`), `"duration_ms":<ms>`},
	{regexp.MustCompile(`request id [A-Za-z0-9]+`), `request id <rid>`},
}

// mask replaces run ids by their names and masks times.
func mask(b []byte, ids map[string]string) []byte {
	s := string(b)
	for id, name := range ids {
		s = strings.ReplaceAll(s, id, name)
	}
	for _, m := range masks {
		s = m.re.ReplaceAllString(s, m.with)
	}
	return []byte(s)
}

// TestWireGolden pins the JSON every route answers for fixed runs, byte for
// byte once times and ids are masked, so that the API's view types cannot
// drift from what clients already read. Run with -update to rewrite.
func TestWireGolden(t *testing.T) {
	e := newEnvSetup(t, envSetup{operator: true})
	ids := map[string]string{}
	var out bytes.Buffer
	record := func(name string, r response) {
		t.Helper()
		body := bytes.TrimRight(r.body, "\n")
		fmt.Fprintf(&out, "== %s %d %s\n%s\n", name, r.status, r.header.Get("Content-Type"), mask(body, ids))
	}
	start := func(name, body string) string {
		t.Helper()
		r := e.do(t, http.MethodPost, "/start_workflow", strings.NewReader(body))
		id := runIDOf(t, r)
		ids[id] = "<" + name + ">"
		record("POST /start_workflow "+name, r)
		return id
	}

	logID := start("log", `{"workflow":"test.log","settings":{},"task":"say hi"}`)
	e.waitStatus(t, logID, state.StatusSucceeded)
	failID := start("fail", `{"workflow":"test.fail"}`)
	e.waitStatus(t, failID, state.StatusFailed)
	waitID := start("wait", `{"workflow":"test.wait","settings":{"bogus_key":1}}`)

	get := func(path string) {
		t.Helper()
		record("GET "+string(mask([]byte(path), ids)), e.do(t, http.MethodGet, path, nil))
	}
	post := func(path string) {
		t.Helper()
		record("POST "+string(mask([]byte(path), ids)), e.do(t, http.MethodPost, path, nil))
	}
	get("/health")
	get("/runs/" + logID)
	get("/runs/" + failID)
	get("/runs?workflow=test.log")
	get("/runs?workflow=test.fail&limit=1")
	get("/runs/" + logID + "/entries")
	get("/runs/" + logID + "/entries?limit=2")
	get("/runs/" + logID + "/ops")
	get("/runs/" + logID + "/ops?limit=1")
	get("/runs/" + failID + "/ops")
	get("/runs/" + failID + "/events")
	get("/runs/" + failID + "/events?after=1")
	get("/workflows")
	post("/runs/" + waitID + "/pause")
	e.waitStatus(t, waitID, state.StatusPaused)
	post("/runs/" + waitID + "/resume")
	post("/runs/" + waitID + "/cancel")
	e.waitStatus(t, waitID, state.StatusCancelled)
	post("/runs/" + waitID + "/cancel")
	get("/runs/" + waitID)
	get("/stats/runs")
	get("/runs/nope")
	get("/runs?limit=0")
	get("/nope")
	// The operator's routes.
	postBody := func(path, body string) response {
		t.Helper()
		r := e.do(t, http.MethodPost, path, strings.NewReader(body))
		record("POST "+string(mask([]byte(path), ids))+" "+body, r)
		return r
	}
	forkBody := `{"step":1,"vars":{"x":1},"message":"hi"}`
	r := e.do(t, http.MethodPost, "/runs/"+logID+"/fork", strings.NewReader(forkBody))
	forkID := runIDOf(t, r)
	ids[forkID] = "<fork>"
	record("POST /runs/<log>/fork "+forkBody, r)
	e.waitStatus(t, forkID, state.StatusSucceeded)
	get("/runs/" + forkID)
	postBody("/runs/"+logID+"/fork", `{"step":9}`)
	askID := start("ask", `{"workflow":"test.ask"}`)
	testkit.WaitFor(t, "the question", func() bool { return len(e.questions(t, askID)) == 1 })
	get("/runs/" + askID + "/human")
	postBody("/runs/"+askID+"/intervene", `{"approve":true}`)
	postBody("/runs/"+askID+"/human/"+url.PathEscape(askID+"/1/1")+"/answer", `{"answer":"yes"}`)
	postBody("/runs/"+askID+"/human/"+url.PathEscape(askID+"/1/0")+"/answer", `{"answer":"yes"}`)
	postBody("/runs/"+askID+"/human/"+url.PathEscape(askID+"/1/0")+"/answer", `{"answer":"no"}`)
	e.waitStatus(t, askID, state.StatusSucceeded)
	get("/runs/" + askID + "/human")
	record("POST /start_workflow unknown", e.do(t, http.MethodPost, "/start_workflow", strings.NewReader(`{"workflow":"nope"}`)))

	path := filepath.Join("testdata", "wire.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("wire JSON differs from %s:\n%s", path, lineDiff(string(want), out.String()))
	}
}

// runIDOf returns the run_id of a 201 start answer.
func runIDOf(t *testing.T, r response) string {
	t.Helper()
	if r.status != http.StatusCreated {
		t.Fatalf("start: status %d: %s", r.status, r.body)
	}
	m := regexp.MustCompile(`"run_id":"([^"]+)"`).FindSubmatch(r.body)
	if m == nil {
		t.Fatalf("start: no run_id in %s", r.body)
	}
	return string(m[1])
}

// lineDiff lists the lines that differ between want and got.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString(fmt.Sprintf("line %d:\n  want %s\n  got  %s\n", i+1, wl, gl))
		}
	}
	return b.String()
}

// liveEngine is an Engine that reports a fixed overlay for every live run
// and a fixed health, as the executor does while a disk is full or a rate
// limit holds operations.
type liveEngine struct {
	Engine
	live   workflows.Live
	health workflows.Health
}

func (l liveEngine) Live(string) workflows.Live { return l.live }
func (l liveEngine) Health() workflows.Health   { return l.health }

// TestWireLiveOverlay pins the JSON of GET /runs/{id}'s stalled and waiting
// fields on a live run and of a degraded /health; an ended run has none.
func TestWireLiveOverlay(t *testing.T) {
	until := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e := newEnvSetup(t, envSetup{engine: func(eng Engine) Engine {
		return liveEngine{Engine: eng,
			live: workflows.Live{Stalled: "no space left on device; retrying", Waiting: []workflows.Wait{
				{OpID: "x/1/0", Reason: "rate_limit", Until: until, Message: "rate limited by m, retrying in 42 s"}}},
			health: workflows.Health{Status: "degraded", Stalled: 2, Reason: "no space left on device"}}
	}})
	id := e.start(t, "test.wait", "")
	r := e.do(t, http.MethodGet, "/runs/"+id, nil)
	want := `"stalled":"no space left on device; retrying","waiting":[{"op_id":"x/1/0","reason":"rate_limit","until":"2026-01-02T03:04:05Z","message":"rate limited by m, retrying in 42 s"}]}`
	if !strings.HasSuffix(strings.TrimSpace(string(r.body)), want) {
		t.Errorf("GET /runs/%s = %s\nwant it to end with %s", id, r.body, want)
	}
	r = e.do(t, http.MethodGet, "/health", nil)
	if got := strings.TrimSpace(string(r.body)); r.status != http.StatusOK ||
		got != `{"status":"degraded","stalled_runs":2,"reason":"no space left on device"}` {
		t.Errorf("GET /health = %d %s", r.status, got)
	}
	e.do(t, http.MethodPost, "/runs/"+id+"/cancel", nil)
	e.waitStatus(t, id, state.StatusCancelled)
	if r := e.do(t, http.MethodGet, "/runs/"+id, nil); strings.Contains(string(r.body), "stalled") {
		t.Errorf("ended run has an overlay: %s", r.body)
	}
}
