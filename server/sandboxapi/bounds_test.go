package sandboxapi_test

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/internal/testkit/testsandbox"
	"github.com/flockrun/flock/server/sandboxapi"
)

// start serves a sandbox service of config cfgJSON alone, as flock
// sandbox does, on a real listener, and returns its address.
func start(t *testing.T, cfgJSON string, cfg configs.Server) string {
	t.Helper()
	svc := testsandbox.Open(t, cfgJSON, nil)
	cfg.Addr = "127.0.0.1:0"
	srv, err := sandboxapi.NewServer(cfg, svc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(testkit.Serve(t, srv), "http://")
}

// TestSlowClientsCutOff is the attack of issue 23.5 on the sandbox service
// (package server's test of the same name has the API server): with
// header and body timeouts of 300 ms, the server closes a connection that
// trickles its header, a body on a public route, a body on a route that
// needs the token (sent without it), and a chunked body a handler reads.
func TestSlowClientsCutOff(t *testing.T) {
	token := strings.Repeat("k", 32)
	addr := start(t, `{}`, configs.Server{HeaderTimeoutS: 0.3, BodyTimeoutS: 0.3, AuthToken: token})
	testkit.CheckCutOff(t, addr, token)
}

// TestNosniffOnEveryAnswer: every answer of the sandbox service carries
// X-Content-Type-Options: nosniff (issue 23.7): the health check, an
// envelope and an unrouted path.
func TestNosniffOnEveryAnswer(t *testing.T) {
	base := "http://" + start(t, `{}`, configs.Server{})
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/health", ""},
		{"POST", "/api/v1/execute", `{"worker_id":"w","action":"nosuch"}`},
		{"GET", "/api/v1/nosuch", ""},
	} {
		req, _ := http.NewRequest(r.method, base+r.path, strings.NewReader(r.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, bufio.NewReader(resp.Body))
		resp.Body.Close()
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s: %d, X-Content-Type-Options %q", r.method, r.path, resp.StatusCode, got)
		}
	}
}

// TestSandboxConfigSetsListenerBounds: under `flock sandbox` the operator
// raises (or lowers) the body limit and the timeouts in the sandbox
// config's server section.
func TestSandboxConfigSetsListenerBounds(t *testing.T) {
	addr := start(t, `{"server":{"max_body_bytes":1000,"header_timeout_s":0.3,"body_timeout_s":0.3}}`, configs.Server{})
	resp, err := http.Post("http://"+addr+"/api/v1/execute", "application/json", strings.NewReader(`{"worker_id":"w","action":"x","params":{"p":"`+strings.Repeat("a", 2000)+`"}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a 2 KB body with max_body_bytes 1000: %d", resp.StatusCode)
	}
	if closed, _ := testkit.Trickle(t, addr, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 200000\r\n\r\n"); !closed {
		t.Fatal("a trickled body held past body_timeout_s 0.3")
	}
}
