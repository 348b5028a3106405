package text2sql_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit/testsandbox"
	"github.com/flockrun/flock/sandbox"
	_ "github.com/flockrun/flock/sandbox/text2sql"
)

var sampleDB = filepath.Join("..", "..", "configs", "sandbox", "data", "concert.sqlite")

// newService starts a sandbox service whose only backend is text2sql over the
// bundled database (plus extra JSON members of apis.text2sql), closed at the end.
func newService(tb testing.TB, extra string) *sandbox.Service {
	tb.Helper()
	doc := fmt.Sprintf(`{"apis": {"text2sql": {"databases": {"concert": %q}%s}}}`, sampleDB, extra)
	return testsandbox.Open(tb, doc, nil)
}

// newHTTP serves svc alone (as `flock sandbox` does) on a real listener.
func newHTTP(tb testing.TB, svc *sandbox.Service) string {
	tb.Helper()
	return testsandbox.Serve(tb, svc, configs.Server{Addr: "127.0.0.1:0", DataDir: tb.TempDir()})
}

func post(tb testing.TB, client *http.Client, url string, body any) (int, testsandbox.Envelope) {
	tb.Helper()
	return testsandbox.Post(tb, client, url+"/api/v1/execute", body)
}

// TestService runs the three tools through sandbox.Service: envelopes with the
// full tool name, no session, and the tool's codes.
func TestService(t *testing.T) {
	svc := newService(t, "")
	caller := sandbox.Caller{Worker: "w1"}
	env := svc.Execute(context.Background(), caller, sandbox.Action{Action: "text2sql:list_databases"})
	if env.Code != 0 || env.Meta.Tool != "text2sql:list_databases" || env.Meta.SessionID != nil {
		t.Fatalf("list_databases: %+v", env)
	}
	b, _ := json.Marshal(env.Data)
	if string(b) != `{"result":{"databases":["concert"]},"inputs":{"worker_id":"w1"}}` {
		t.Fatalf("list_databases data %s", b)
	}
	env = svc.Execute(context.Background(), caller, sandbox.Action{Action: "text2sql:execute",
		Params: map[string]any{"db_id": "concert", "query": "SELECT 1; DROP TABLE singer"}})
	if env.Code != sandbox.CodeInvalidInput || !strings.Contains(env.Message, "only one statement") {
		t.Fatalf("two statements: %+v", env)
	}
	env = svc.Execute(context.Background(), caller, sandbox.Action{Action: "text2sql:execute", Params: map[string]any{"db_id": "concert"}})
	if env.Code != sandbox.CodeMissingRequiredField || !strings.Contains(env.Message, "query") {
		t.Fatalf("no query: %+v", env)
	}
}

// TestServiceConfigError starts a service whose database is missing: start-up
// fails naming the JSON path.
func TestServiceConfigError(t *testing.T) {
	cfg, err := sandbox.ParseConfig([]byte(`{"apis": {"text2sql": {"databases": {"gone": "no/such/file.sqlite"}}}}`),
		func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	svc, err := sandbox.New(context.Background(), cfg, sandbox.Options{DataDir: t.TempDir()})
	if err == nil {
		svc.Close(context.Background())
		t.Fatal("started with a missing database")
	}
	if !strings.Contains(err.Error(), "apis.text2sql.databases.gone") || !strings.Contains(err.Error(), "file not found") {
		t.Fatalf("error %q does not name apis.text2sql.databases.gone", err)
	}
}

// TestHTTP drives the tools over real HTTP as AgentFlow's client does: 200 with the
// envelope on success, 400 with the envelope for a rejected query, and the tools'
// schemas at /api/v1/tools.
func TestHTTP(t *testing.T) {
	url := newHTTP(t, newService(t, ""))
	c := &http.Client{Timeout: 10 * time.Second}

	status, env := post(t, c, url, map[string]any{"worker_id": "w1", "action": "text2sql:execute",
		"params": map[string]any{"db_id": "concert", "query": "SELECT name FROM stadium WHERE opened IS NULL"}, "trace_id": "t-1"})
	if status != 200 || env.Code != 0 || env.Meta.Tool != "text2sql:execute" || env.Meta.TraceID != "t-1" || env.Meta.SessionID != nil {
		t.Fatalf("select: %d %+v", status, env)
	}
	if want := `{"result":{"columns":["name"],"rows":[["Old Quarry"]],"row_count":1,"truncated":false},` +
		`"inputs":{"db_id":"concert","query":"SELECT name FROM stadium WHERE opened IS NULL","worker_id":"w1"}}`; string(env.Data) != want {
		t.Fatalf("data %s\nwant %s", env.Data, want)
	}

	for _, q := range []string{"INSERT INTO singer VALUES (9, 'x', 'y', 'z', 1)", "UPDATE singer SET age = 0",
		"ATTACH ':memory:' AS m", "SELECT 1; DROP TABLE singer", "SELECT * FROM nope"} {
		status, env = post(t, c, url, map[string]any{"worker_id": "w1", "action": "text2sql:execute",
			"params": map[string]any{"db_id": "concert", "query": q}})
		if status != 400 || env.Code != 4000 || env.Message == "" {
			t.Fatalf("%q: %d %+v", q, status, env)
		}
	}
	status, env = post(t, c, url, map[string]any{"worker_id": "w1", "action": "text2sql:get_schema",
		"params": map[string]any{"db_id": "spider"}})
	if status != 400 || env.Code != 4000 || !strings.Contains(env.Message, "known: concert") {
		t.Fatalf("unknown db: %d %+v", status, env)
	}

	resp, err := c.Get(url + "/api/v1/tools")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tools struct {
		Tools []struct {
			Name       string          `json:"full_name"`
			Stateless  bool            `json:"stateless"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"tools"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tools); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if !tl.Stateless || !bytes.Contains(tl.Parameters, []byte(`"type":"object"`)) {
			t.Fatalf("tool %s: stateless %v, parameters %s", tl.Name, tl.Stateless, tl.Parameters)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"text2sql:execute", "text2sql:get_schema", "text2sql:list_databases"}) {
		t.Fatalf("tools %v", names)
	}
}

const benchQuery = "SELECT s.name, count(*) AS n FROM singer s JOIN singer_in_concert sc USING (singer_id) " +
	"GROUP BY s.singer_id ORDER BY n DESC, s.name"

// serial runs call from one goroutine and reports latency percentiles.
func serial(b *testing.B, call func() error) {
	var ds []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		if err := call(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	if len(ds) > 0 {
		b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds()), "p99-µs")
	}
}

// parallel64 runs call from 64 goroutines and reports calls/s and latency
// percentiles.
func parallel64(b *testing.B, call func() error) {
	var (
		mu sync.Mutex
		ds []time.Duration
	)
	b.SetParallelism((64 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var local []time.Duration
		for pb.Next() {
			t0 := time.Now()
			if err := call(); err != nil {
				b.Error(err)
				break
			}
			local = append(local, time.Since(t0))
		}
		mu.Lock()
		ds = append(ds, local...)
		mu.Unlock()
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
	slices.Sort(ds)
	if len(ds) > 0 {
		b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds()), "p99-µs")
	}
}

// BenchmarkServiceExecute is text2sql:execute through sandbox.Service.Execute (no
// HTTP): one caller, then 64 concurrent workers.
func BenchmarkServiceExecute(b *testing.B) {
	svc := newService(b, "")
	params := map[string]any{"db_id": "concert", "query": benchQuery}
	call := func() error {
		env := svc.Execute(context.Background(), sandbox.Caller{Worker: "w"}, sandbox.Action{Action: "text2sql:execute", Params: params})
		if env.Code != 0 {
			return fmt.Errorf("code %d: %s", env.Code, env.Message)
		}
		return nil
	}
	b.Run("serial", func(b *testing.B) { serial(b, call) })
	b.Run("workers=64", func(b *testing.B) { parallel64(b, call) })
}

// BenchmarkHTTPExecute is text2sql:execute over real HTTP (loopback, keep-alive)
// from one caller, then 64 concurrent workers.
func BenchmarkHTTPExecute(b *testing.B) {
	url := newHTTP(b, newService(b, ""))
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	body, _ := json.Marshal(map[string]any{"worker_id": "w", "action": "text2sql:execute",
		"params": map[string]any{"db_id": "concert", "query": benchQuery}})
	call := func() error {
		resp, err := c.Post(url+"/api/v1/execute", "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	b.Run("serial", func(b *testing.B) { serial(b, call) })
	b.Run("workers=64", func(b *testing.B) { parallel64(b, call) })
}
