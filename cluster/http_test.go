package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/server"
)

// serve starts node n's HTTP API (as `flock serve --cluster` does) on a
// loopback test server.
func serve(t testing.TB, n *testNode) *httptest.Server {
	t.Helper()
	srv, err := server.New(configs.Server{DataDir: n.dir}, NewEngine(n.a.Executor, n.m.Dispatcher), n.a.Executor.Store(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

// sseEvent is one event of a stream: its id line and its data.
type sseEvent struct {
	id  uint64
	typ string
	ev  api.Event
}

// readEvents reads an event stream until the run's terminal event, or
// until d passes.
func readEvents(t testing.TB, url, lastID string, d time.Duration) []sseEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			cur.id, _ = strconv.ParseUint(strings.TrimPrefix(line, "id: "), 10, 64)
		case strings.HasPrefix(line, "event: "):
			cur.typ = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.ev); err != nil {
				t.Fatalf("bad event data %q: %v", line, err)
			}
		case line == "" && cur.typ != "":
			out = append(out, cur)
			if cur.id > 0 && cur.ev.Type == "run" && (cur.ev.Status == "succeeded" || cur.ev.Status == "failed" || cur.ev.Status == "cancelled") {
				return out
			}
			cur = sseEvent{}
		}
	}
	t.Fatalf("stream %s ended before the run's final event (%d events read): %v", url, len(out), sc.Err())
	return nil
}

// TestClusterHTTPFromEveryNode: every node answers GET /runs, /runs/{id},
// /entries and /ops for a run driven elsewhere, and streams its events
// live to the end, resumably with Last-Event-ID.
func TestClusterHTTPFromEveryNode(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	srvs := make([]*httptest.Server, len(c.nodes))
	for i, n := range c.nodes {
		srvs[i] = serve(t, n)
	}
	settings, _ := json.Marshal(map[string]any{"commands": []string{"echo one", "sleep 0.3", "echo two", "sleep 0.3", "echo three"}})
	body, _ := json.Marshal(api.StartRequest{Workflow: "script", Settings: settings})
	resp, err := http.Post(srvs[0].URL+"/start_workflow", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	var started api.RunStatus
	if err := json.NewDecoder(resp.Body).Decode(&started); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := started.RunID
	var d int
	testkit.WaitFor(t, "the run driven", func() bool { d = c.driver(id); return d >= 0 })
	// Stream from every node at once, the driver's included, live from
	// the start.
	streams := make([][]sseEvent, len(srvs))
	done := make(chan int, len(srvs))
	for i, s := range srvs {
		go func() { // owned: the test waits for every stream below
			defer func() { done <- i }()
			streams[i] = readEvents(t, s.URL+"/runs/"+id+"/events", "", 30*time.Second)
		}()
	}
	for range srvs {
		<-done
	}
	for i, evs := range streams {
		for j, e := range evs {
			if e.id != uint64(j+1) || e.ev.Seq != e.id {
				t.Fatalf("node %s (driver %s): event %d has id %d seq %d, want %d", c.nodes[i].name, c.nodes[d].name, j, e.id, e.ev.Seq, j+1)
			}
		}
		if len(evs) != len(streams[d]) {
			t.Fatalf("node %s streamed %d events, the driver's node %d", c.nodes[i].name, len(evs), len(streams[d]))
		}
	}
	// Resume a stream after its third event on a node that did not drive it.
	other := srvs[(d+1)%len(srvs)]
	rest := readEvents(t, other.URL+"/runs/"+id+"/events", "3", 10*time.Second)
	if len(rest) != len(streams[d])-3 || rest[0].id != 4 {
		t.Fatalf("resumed after 3: %d events from id %d, want %d from 4", len(rest), rest[0].id, len(streams[d])-3)
	}
	for i, s := range srvs {
		for _, path := range []string{"/runs", "/runs/" + id, "/runs/" + id + "/entries", "/runs/" + id + "/ops"} {
			resp, err := http.Get(s.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			var v map[string]any
			err = json.NewDecoder(resp.Body).Decode(&v)
			resp.Body.Close()
			if resp.StatusCode != 200 || err != nil {
				t.Fatalf("node %s GET %s: %s %v", c.nodes[i].name, path, resp.Status, err)
			}
			if path == "/runs/"+id+"/entries" {
				if n := len(v["entries"].([]any)); n != 5 {
					t.Fatalf("node %s: %d entries, want 5", c.nodes[i].name, n)
				}
			}
			if path == "/runs/"+id && v["status"] != "succeeded" {
				t.Fatalf("node %s: run %v", c.nodes[i].name, v)
			}
		}
	}
	t.Logf("%d events streamed by each of %d nodes; run driven by %s", len(streams[d]), len(srvs), c.nodes[d].name)

}

// TestClusterHealthFollowsStore: /health answers 503 "unavailable",
// naming what is missing, once a stream the node needs was deleted, and
// 200 "ok" while they are all there.
func TestClusterHealthFollowsStore(t *testing.T) {
	for _, stream := range []string{"FLOCK_RUNS_1", "KV_FLOCK_HEADS_3", "OBJ_FLOCK_BLOBS", ClaimStream} {
		t.Run(stream, func(t *testing.T) {
			c := startCluster(t, clusterOpts{n: 1})
			srv := serve(t, c.nodes[0])
			health := func() (int, api.Health) {
				resp, err := http.Get(srv.URL + "/health")
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var h api.Health
				if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
					t.Fatal(err)
				}
				return resp.StatusCode, h
			}
			if code, h := health(); code != http.StatusOK || h.Status != "ok" {
				t.Fatalf("healthy node: %d %+v", code, h)
			}
			if err := c.nodes[0].m.JS.DeleteStream(context.Background(), stream); err != nil {
				t.Fatal(err)
			}
			var code int
			var h api.Health
			testkit.WaitFor(t, "/health to say unavailable", func() bool {
				code, h = health()
				return code == http.StatusServiceUnavailable
			})
			if h.Status != "unavailable" || !strings.Contains(h.Reason, stream) {
				t.Fatalf("after deleting %s: %d %+v", stream, code, h)
			}
		})
	}
}
