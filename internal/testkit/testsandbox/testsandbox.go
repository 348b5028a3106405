// Package testsandbox starts a real sandbox service for a test and serves
// it over HTTP as `flock sandbox` does, in place of the parse, start,
// serve and clean-up lines the tests of the sandbox, its backends, the
// server, the viewer and the synthesis phases each wrote; Post posts to
// its API and reads the envelope back. The service has
// the backends the test's binary links: a backend's own tests get it, the
// others import sandbox/all or the backends they name. It is apart from
// package testkit because it imports the sandbox and the server.
package testsandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/sandbox"
	"github.com/flockrun/flock/server/sandboxapi"
)

// Open parses doc as a sandbox config file, in which ${NAME} is looked up
// in env (nil: no variable is set), and starts the service with its data
// in tb.TempDir(). The service is closed when the test ends.
func Open(tb testing.TB, doc string, env map[string]string) *sandbox.Service {
	tb.Helper()
	cfg, err := sandbox.ParseConfig([]byte(doc), func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	})
	if err != nil {
		tb.Fatalf("%v", err)
	}
	svc, err := sandbox.New(context.Background(), cfg, sandbox.Options{DataDir: tb.TempDir()})
	if err != nil {
		tb.Fatalf("start sandbox: %v", err)
	}
	tb.Cleanup(func() { svc.Close(context.Background()) })
	return svc
}

// OpenFixtures opens the service of the offline fixtures the synthesis
// tests and demos explore: text2sql over configs/sandbox/data/concert.sqlite
// and rag over configs/sandbox/docs (two passages a search) of this
// checkout. resources, if not empty, is the config's "resources" object
// (a bash resource, say).
func OpenFixtures(tb testing.TB, resources string) *sandbox.Service {
	tb.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("testsandbox: no source path to find the repository's fixtures")
	}
	repo := filepath.Join(filepath.Dir(file), "..", "..", "..")
	if resources == "" {
		resources = "{}"
	}
	return Open(tb, fmt.Sprintf(`{"server": {"session_ttl": 600, "cleanup_interval": 60}, "resources": %s,
		"apis": {"text2sql": {"databases": {"concert": %q}}, "rag": {"documents_dir": %q, "default_top_k": 2}}}`,
		resources, filepath.Join(repo, "configs/sandbox/data/concert.sqlite"), filepath.Join(repo, "configs/sandbox/docs")), nil)
}

// Serve serves svc alone (AgentFlow's API, as `flock sandbox` does) under
// the server settings cfg on a real listener, and returns its base URL.
// The listener is closed when the test ends, before the service a test
// opened earlier is.
func Serve(tb testing.TB, svc *sandbox.Service, cfg configs.Server) string {
	tb.Helper()
	srv, err := sandboxapi.NewServer(cfg, svc, nil, nil)
	if err != nil {
		tb.Fatalf("sandbox server: %v", err)
	}
	ts := httptest.NewServer(srv.Handler())
	tb.Cleanup(ts.Close)
	return ts.URL
}

// Envelope is AgentFlow's answer envelope (sandbox.Envelope) as a test
// reads it back, its data left raw for the test to decode.
type Envelope struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
	Meta    sandbox.Meta    `json:"meta"`
}

// Post posts body as JSON to url with client (nil: http.DefaultClient)
// and returns the answer's HTTP status and envelope; it fails tb if the
// request fails or the answer is not an envelope.
func Post(tb testing.TB, client *http.Client, url string, body any) (int, Envelope) {
	tb.Helper()
	if client == nil {
		client = http.DefaultClient
	}
	b, err := json.Marshal(body)
	if err != nil {
		tb.Fatalf("POST %s: %v", url, err)
	}
	resp, err := client.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		tb.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("POST %s: read the answer: %v", url, err)
	}
	var env Envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		tb.Fatalf("POST %s: status %d, body %s: %v", url, resp.StatusCode, raw, err)
	}
	return resp.StatusCode, env
}
