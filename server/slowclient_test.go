package server

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit"
)

// TestSlowClientsCutOff is the attack of issue 23.5: a connection that
// trickles its body (GET /health with a large Content-Length, one byte
// every 10 s) was held past 150 s without a token. With header and body
// timeouts of 300 ms (test settings; the defaults are 10 s and 60 s), the
// server closes such a connection: a trickled header, a trickled body on
// a public route, a trickled body on a route that needs the token (sent
// without it), on the API server (the sandbox service alike: package
// sandboxapi's TestSlowClientsCutOff).
func TestSlowClientsCutOff(t *testing.T) {
	token := strings.Repeat("k", 32)
	e := newEnv(t, func(c *configs.Server) {
		c.HeaderTimeoutS, c.BodyTimeoutS = 0.3, 0.3
		c.AuthToken = token
	})
	testkit.CheckCutOff(t, strings.TrimPrefix(e.base, "http://"), token)
}

// TestNosniffOnEveryAnswer: every answer of the API server (and of the
// sandbox service: package sandboxapi's test of the same name) carries
// X-Content-Type-Options: nosniff (issue 23.7): JSON answers, errors (400,
// 401, 404, 413) and the health check.
func TestNosniffOnEveryAnswer(t *testing.T) {
	token := strings.Repeat("k", 32)
	e := newEnv(t, func(c *configs.Server) { c.AuthToken = token; c.MaxBodyBytes = 100 })
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
