package server

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/state"
)

// TestMountUI checks that the viewer's page and assets need no token
// while the API still does, and that the guard still refuses foreign
// origins and hosts on the viewer's paths.
func TestMountUI(t *testing.T) {
	const token = "ui-test-token-0123456789"
	ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("viewer " + r.URL.Path))
	})
	e := newEnvSetup(t, envSetup{server: func(s *Server) { s.MountUI(ui) }},
		func(c *configs.Server) { c.AuthToken = token })
	anon := &env{base: e.base}
	tests := []struct {
		name   string
		e      *env
		path   string
		header []string
		status int
		body   string
	}{
		{"page without token", anon, "/", nil, http.StatusOK, "viewer /"},
		{"asset without token", anon, "/ui/app.js", nil, http.StatusOK, "viewer /ui/app.js"},
		{"api without token", anon, "/runs", nil, http.StatusUnauthorized, ""},
		{"counts without token", anon, "/stats/runs", nil, http.StatusUnauthorized, ""},
		{"api with token", e, "/runs", nil, http.StatusOK, ""},
		{"page from a foreign origin", anon, "/", []string{"Origin", "http://evil.example"}, http.StatusForbidden, ""},
		{"page under a rebound name", anon, "/ui/app.js", []string{"Host", "evil.example"}, http.StatusForbidden, ""},
		{"page from its own origin", anon, "/", []string{"Origin", e.base}, http.StatusOK, "viewer /"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.e.doHost(t, http.MethodGet, tt.path, tt.header...)
			if r.status != tt.status {
				t.Fatalf("GET %s: %d %s, want %d", tt.path, r.status, r.body, tt.status)
			}
			if tt.body != "" && string(r.body) != tt.body {
				t.Fatalf("GET %s: body %q, want %q", tt.path, r.body, tt.body)
			}
		})
	}
}

// doHost is do with headers that may include Host.
func (e *env) doHost(tb testing.TB, method, path string, header ...string) response {
	tb.Helper()
	var host []string
	var rest []string
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			host = header[i : i+2]
		} else {
			rest = append(rest, header[i], header[i+1])
		}
	}
	if host == nil {
		return e.do(tb, method, path, nil, rest...)
	}
	req, err := http.NewRequest(method, e.base+path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Host = host[1]
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	return response{status: res.StatusCode, header: res.Header}
}

// TestRunCounts counts runs by status over HTTP.
func TestRunCounts(t *testing.T) {
	e := newEnv(t)
	ok := e.start(t, "test.log", "say hi")
	e.waitStatus(t, ok, state.StatusSucceeded)
	bad := e.start(t, "test.fail", "")
	e.waitStatus(t, bad, state.StatusFailed)
	r := e.do(t, http.MethodGet, "/stats/runs", nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET /stats/runs: %d %s", r.status, r.body)
	}
	var c api.RunCounts
	if err := json.Unmarshal(r.body, &c); err != nil {
		t.Fatal(err)
	}
	if c != (api.RunCounts{Total: 2, Succeeded: 1, Failed: 1}) {
		t.Fatalf("counts = %+v", c)
	}
}
