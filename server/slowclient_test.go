package server

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/sandbox"
)

// TestSlowClientsCutOff is the attack of issue 23.5: a connection that
// trickles its body (GET /health with a large Content-Length, one byte
// every 10 s) was held past 150 s without a token. With header and body
// timeouts of 300 ms (test settings; the defaults are 10 s and 60 s), the
// server closes such a connection: a trickled header, a trickled body on
// a public route, a trickled body on a route that needs the token (sent
// without it), on the API server and on the sandbox service alike.
func TestSlowClientsCutOff(t *testing.T) {
	short := func(c *configs.Server) {
		c.HeaderTimeoutS, c.BodyTimeoutS = 0.3, 0.3
		c.AuthToken = strings.Repeat("k", 32)
	}
	e := newEnv(t, short)
	svcCfg, err := sandbox.ParseConfig([]byte(`{}`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	svc, err := sandbox.New(context.Background(), svcCfg, sandbox.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	sbCfg := configs.Server{Addr: "127.0.0.1:0"}
	short(&sbCfg)
	sb, err := NewSandbox(sbCfg, svc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sbAddr, err := sb.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Shutdown(context.Background()) })

	for name, addr := range map[string]string{"api": strings.TrimPrefix(e.base, "http://"), "sandbox": sbAddr.String()} {
		for _, c := range []struct{ name, head string }{
			{"header", "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "},
			{"body of /health", "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000000\r\n\r\n"},
			// Under 256 KiB, net/http reads what the handler left of the
			// body, to keep the connection: that read is what was held.
			{"small body of /health", "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 200000\r\n\r\n"},
			{"small body without a token", "POST /runs/x/cancel HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n\r\n{"},
			{"body without a token", "POST /api/v1/execute HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n{"},
			{"chunked body read by the handler", "POST /api/v1/execute HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: Bearer " + strings.Repeat("k", 32) + "\r\nTransfer-Encoding: chunked\r\n\r\n10000000\r\n"},
		} {
			closed, answer := testkit.Trickle(t, addr, c.head)
			if !closed {
				t.Errorf("%s, trickled %s: the connection is still open after %v", name, c.name, testkit.DefaultTimeout)
			}
			t.Logf("%s, %s: %.60q", name, c.name, answer)
		}
	}
}

// TestNosniffOnEveryAnswer: every answer of the API server and of the
// sandbox service carries X-Content-Type-Options: nosniff (issue 23.7):
// JSON answers, errors (400, 401, 404, 413) and the health check.
func TestNosniffOnEveryAnswer(t *testing.T) {
	token := strings.Repeat("k", 32)
	e := newEnv(t, func(c *configs.Server) { c.AuthToken = token; c.MaxBodyBytes = 100 })
	svcCfg, _ := sandbox.ParseConfig([]byte(`{}`), func(string) (string, bool) { return "", false })
	svc, err := sandbox.New(context.Background(), svcCfg, sandbox.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	sb, err := NewSandbox(configs.Server{Addr: "127.0.0.1:0"}, svc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sbAddr, err := sb.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Shutdown(context.Background()) })
	for _, r := range []struct {
		base, method, path, body string
		auth                     bool
	}{
		{e.base, "GET", "/health", "", false},
		{e.base, "GET", "/runs", "", false},
		{e.base, "GET", "/runs", "", true},
		{e.base, "GET", "/runs/nosuch", "", true},
		{e.base, "GET", "/nosuch", "", true},
		{e.base, "POST", "/start_workflow", "{", true},
		{e.base, "POST", "/start_workflow", strings.Repeat("x", 200), true},
		{"http://" + sbAddr.String(), "GET", "/health", "", false},
		{"http://" + sbAddr.String(), "POST", "/api/v1/execute", `{"worker_id":"w","action":"nosuch"}`, false},
		{"http://" + sbAddr.String(), "GET", "/api/v1/nosuch", "", false},
	} {
		req, _ := http.NewRequest(r.method, r.base+r.path, strings.NewReader(r.body))
		if r.auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, bufio.NewReader(resp.Body))
		resp.Body.Close()
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s%s: %d, X-Content-Type-Options %q", r.method, r.base, r.path, resp.StatusCode, got)
		}
	}
}

// TestSandboxConfigSetsListenerBounds: under `flock sandbox` the operator
// raises (or lowers) the body limit and the timeouts in the sandbox
// config's server section.
func TestSandboxConfigSetsListenerBounds(t *testing.T) {
	svcCfg, err := sandbox.ParseConfig([]byte(`{"server":{"max_body_bytes":1000,"header_timeout_s":0.3,"body_timeout_s":0.3}}`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	svc, err := sandbox.New(context.Background(), svcCfg, sandbox.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	sb, err := NewSandbox(configs.Server{Addr: "127.0.0.1:0"}, svc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr, err := sb.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Shutdown(context.Background()) })
	resp, err := http.Post("http://"+addr.String()+"/api/v1/execute", "application/json", strings.NewReader(`{"worker_id":"w","action":"x","params":{"p":"`+strings.Repeat("a", 2000)+`"}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a 2 KB body with max_body_bytes 1000: %d", resp.StatusCode)
	}
	if closed, _ := testkit.Trickle(t, addr.String(), "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 200000\r\n\r\n"); !closed {
		t.Fatal("a trickled body held past body_timeout_s 0.3")
	}
}
