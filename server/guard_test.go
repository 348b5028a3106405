package server

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/state"
)

// rawRequest describes a request sent exactly as given: no Content-Type
// is added, Host and Origin are only what the case says.
type rawRequest struct {
	method, path string
	body         string
	chunked      bool   // send the body without Content-Length
	contentType  string // "" sends none
	origin       string // "" sends none
	host         string // "" keeps the dialled address
}

// raw sends r with the env's token and reads the whole response.
func (e *env) raw(tb testing.TB, r rawRequest) response {
	tb.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
		if r.chunked {
			body = io.MultiReader(body) // hides the length: chunked encoding
		}
	}
	req, err := http.NewRequest(r.method, e.base+r.path, body)
	if err != nil {
		tb.Fatalf("new request: %v", err)
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	if r.origin != "" {
		req.Header.Set("Origin", r.origin)
	}
	if r.host != "" {
		req.Host = r.host
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		tb.Fatalf("%s %s: read body: %v", r.method, r.path, err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// runCount counts the runs in the store.
func (e *env) runCount(tb testing.TB) int {
	tb.Helper()
	runs, _, err := e.store.Runs(tb.Context(), state.RunFilter{Limit: 1000})
	if err != nil {
		tb.Fatalf("list runs: %v", err)
	}
	return len(runs)
}

// checkRefusal checks a guard refusal: status, a JSON error containing
// each of want, and a request id.
func checkRefusal(tb testing.TB, r response, status int, want ...string) {
	tb.Helper()
	if r.status != status {
		tb.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		tb.Errorf("Content-Type %q", ct)
	}
	msg := r.errorMessage(tb)
	for _, w := range want {
		if !strings.Contains(msg, w) {
			tb.Fatalf("error %q does not contain %q", msg, w)
		}
	}
	if r.header.Get("X-Request-ID") == "" {
		tb.Errorf("refusal without X-Request-ID")
	}
}

const startBody = `{"workflow":"test.log","settings":{},"task":""}`

// TestForeignOriginRefused: a request carrying a foreign Origin is refused
// with 403 on every route, before authentication and routing, and never
// starts a run.
func TestForeignOriginRefused(t *testing.T) {
	const token = "a-token-of-32-bytes-for-the-test"
	e := newEnv(t, func(c *configs.Server) { c.AuthToken = token })
	id := e.start(t, "test.log", "")
	e.waitStatus(t, id, state.StatusSucceeded)
	before := e.runCount(t)
	const evil = "https://evil.example"
	json := "application/json"
	tests := []struct {
		name   string
		req    rawRequest
		origin string
	}{
		{"start, JSON", rawRequest{method: "POST", path: "/start_workflow", body: startBody, contentType: json}, evil},
		{"start, text/plain", rawRequest{method: "POST", path: "/start_workflow", body: startBody, contentType: "text/plain"}, evil},
		{"start, form", rawRequest{method: "POST", path: "/start_workflow", body: startBody + "=", contentType: "application/x-www-form-urlencoded"}, evil},
		{"start, null origin", rawRequest{method: "POST", path: "/start_workflow", body: startBody, contentType: "text/plain"}, "null"},
		{"start, other local port", rawRequest{method: "POST", path: "/start_workflow", body: startBody, contentType: json}, "http://127.0.0.1:1"},
		{"cancel", rawRequest{method: "POST", path: "/runs/" + id + "/cancel"}, evil},
		{"runs", rawRequest{method: "GET", path: "/runs"}, evil},
		{"run head", rawRequest{method: "GET", path: "/runs/" + id}, evil},
		{"ops", rawRequest{method: "GET", path: "/runs/" + id + "/ops"}, evil},
		{"events (SSE)", rawRequest{method: "GET", path: "/runs/" + id + "/events"}, evil},
		{"health", rawRequest{method: "GET", path: "/health"}, evil},
		{"unknown route", rawRequest{method: "GET", path: "/nope"}, evil},
		{"preflight", rawRequest{method: "OPTIONS", path: "/start_workflow"}, evil},
	}
	for _, tt := range tests {
		for _, auth := range []bool{true, false} {
			name := tt.name
			ee := *e
			if !auth {
				name += ", no token"
				ee.token = ""
			}
			t.Run(name, func(t *testing.T) {
				req := tt.req
				req.origin = tt.origin
				r := ee.raw(t, req)
				checkRefusal(t, r, http.StatusForbidden, `origin "`+tt.origin+`"`, "allowed_origins")
			})
		}
	}
	if n := e.runCount(t); n != before {
		t.Fatalf("refused requests left %d runs, want %d", n, before)
	}
	if h := e.head(t, id); h.Status != state.StatusSucceeded {
		t.Fatalf("run %s is %s after a refused cancel", id, h.Status)
	}
}

// TestAllowedAndSameOrigin: the server's own origin and the listed origins
// pass, compared after normalization; requests without Origin (curl,
// programs) are unchanged.
func TestAllowedAndSameOrigin(t *testing.T) {
	e := newEnv(t, func(c *configs.Server) { c.AllowedOrigins = []string{"https://ui.example", "http://localhost:5173"} })
	id := e.start(t, "test.log", "")
	e.waitStatus(t, id, state.StatusSucceeded)
	origins := []struct{ name, origin string }{
		{"listed", "https://ui.example"},
		{"listed, other case and default port", "HTTPS://UI.Example:443"},
		{"listed with port", "http://localhost:5173"},
		{"own origin", e.base},
		{"no origin (curl)", ""},
	}
	for _, o := range origins {
		t.Run(o.name, func(t *testing.T) {
			for _, req := range []rawRequest{
				{method: "GET", path: "/health"},
				{method: "GET", path: "/runs"},
				{method: "GET", path: "/runs/" + id + "/ops"},
				{method: "GET", path: "/runs/" + id + "/events"},
			} {
				req.origin = o.origin
				if r := e.raw(t, req); r.status != http.StatusOK {
					t.Fatalf("%s %s: status %d: %s", req.method, req.path, r.status, r.body)
				}
			}
			r := e.raw(t, rawRequest{method: "POST", path: "/start_workflow", body: startBody,
				contentType: "application/json", origin: o.origin})
			if r.status != http.StatusCreated {
				t.Fatalf("start: status %d: %s", r.status, r.body)
			}
		})
	}
	// The same origin seen through localhost: the Host header decides.
	r := e.raw(t, rawRequest{method: "GET", path: "/runs", host: strings.Replace(e.base[len("http://"):], "127.0.0.1", "localhost", 1),
		origin: strings.Replace(e.base, "127.0.0.1", "localhost", 1)})
	if r.status != http.StatusOK {
		t.Fatalf("localhost same origin: status %d: %s", r.status, r.body)
	}
	// An unlisted origin is still refused.
	r = e.raw(t, rawRequest{method: "GET", path: "/runs", origin: "https://ui.example.evil.example"})
	checkRefusal(t, r, http.StatusForbidden, "allowed_origins")
}

// TestContentTypeRequired: state-changing routes take only JSON; text and
// form bodies, which a page can send cross-site without a preflight, get
// 415 and start nothing. An empty POST without Content-Type (curl -X POST)
// passes.
func TestContentTypeRequired(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "test.wait", "")
	tests := []struct {
		name   string
		req    rawRequest
		status int
	}{
		{"text/plain", rawRequest{body: startBody, contentType: "text/plain"}, 415},
		{"text/plain, charset", rawRequest{body: startBody, contentType: "text/plain; charset=utf-8"}, 415},
		{"form", rawRequest{body: startBody, contentType: "application/x-www-form-urlencoded"}, 415},
		{"multipart", rawRequest{body: startBody, contentType: "multipart/form-data; boundary=x"}, 415},
		{"JSON-like", rawRequest{body: startBody, contentType: "application/json-seq"}, 415},
		{"malformed", rawRequest{body: startBody, contentType: "application/json; charset"}, 415},
		{"no content type", rawRequest{body: startBody}, 415},
		{"no content type, chunked", rawRequest{body: startBody, chunked: true}, 415},
		{"JSON", rawRequest{body: startBody, contentType: "application/json"}, 201},
		{"JSON, charset", rawRequest{body: startBody, contentType: "application/json; charset=utf-8"}, 201},
		{"JSON, other case", rawRequest{body: startBody, contentType: "Application/JSON; Charset=UTF-8"}, 201},
		{"JSON, chunked", rawRequest{body: startBody, chunked: true, contentType: "application/json"}, 201},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := e.runCount(t)
			req := tt.req
			req.method, req.path = "POST", "/start_workflow"
			r := e.raw(t, req)
			after := e.runCount(t)
			if tt.status != 415 {
				if r.status != tt.status || after != before+1 {
					t.Fatalf("status %d, runs %d -> %d: %s", r.status, before, after, r.body)
				}
				return
			}
			want := "send Content-Type: application/json"
			if tt.req.contentType != "" {
				want = `content type "` + tt.req.contentType + `" is not accepted on POST /start_workflow`
			}
			checkRefusal(t, r, http.StatusUnsupportedMediaType, want)
			if after != before {
				t.Fatalf("a refused start created a run (%d -> %d)", before, after)
			}
		})
	}
	// Control routes: an empty body needs no Content-Type, any other
	// Content-Type is refused even with an empty body.
	r := e.raw(t, rawRequest{method: "POST", path: "/runs/" + id + "/pause", contentType: "text/plain"})
	checkRefusal(t, r, http.StatusUnsupportedMediaType, `content type "text/plain"`)
	if h := e.head(t, id); h.Status != state.StatusRunning {
		t.Fatalf("run is %s after a refused pause", h.Status)
	}
	for _, action := range []string{"pause", "resume", "cancel"} {
		r := e.raw(t, rawRequest{method: "POST", path: "/runs/" + id + "/" + action})
		if r.status != http.StatusOK {
			t.Fatalf("curl -X POST .../%s: status %d: %s", action, r.status, r.body)
		}
	}
	e.waitStatus(t, id, state.StatusCancelled)
}

// TestHostRefused: a Host header naming anything but loopback, the listen
// host or a public name is refused on every route (DNS rebinding: the page
// of attacker.example whose name now resolves to 127.0.0.1).
func TestHostRefused(t *testing.T) {
	const token = "a-token-of-32-bytes-for-the-test"
	e := newEnv(t, func(c *configs.Server) {
		c.PublicNames = []string{"flock.example", "[fd00::7]"}
		c.AuthToken = token
	})
	port := e.base[strings.LastIndexByte(e.base, ':')+1:]
	tests := []struct {
		host string
		ok   bool
	}{
		{"attacker.example:" + port, false},
		{"attacker.example", false},
		{"127.0.0.1.attacker.example:" + port, false},
		{"localhost.attacker.example", false},
		{"flock.example.attacker.example", false},
		{"0.0.0.0:" + port, false},
		{"192.0.2.1:" + port, false},
		{"localhost:" + port, true},
		{"LOCALHOST", true},
		{"127.0.0.1:" + port, true},
		{"127.8.9.10:" + port, true},
		{"[::1]:" + port, true},
		{"[::1]", true},
		{"flock.example:8443", true},
		{"FLOCK.EXAMPLE", true},
		{"[fd00::7]:" + port, true},
	}
	for _, tt := range tests {
		for _, path := range []string{"/health", "/runs", "/nope"} {
			t.Run(tt.host+path, func(t *testing.T) {
				for _, auth := range []bool{true, false} {
					ee := *e
					if !auth {
						ee.token = ""
					}
					r := ee.raw(t, rawRequest{method: "GET", path: path, host: tt.host})
					if !tt.ok {
						checkRefusal(t, r, http.StatusForbidden, `host "`+tt.host+`"`, "public_names")
						continue
					}
					if r.status == http.StatusForbidden {
						t.Fatalf("refused: %s", r.body)
					}
				}
			})
		}
	}
	// A rebound page cannot start a run either, even with a simple request.
	r := e.raw(t, rawRequest{method: "POST", path: "/start_workflow", host: "attacker.example:" + port,
		body: startBody, contentType: "application/json"})
	checkRefusal(t, r, http.StatusForbidden, "public_names")
	if n := e.runCount(t); n != 0 {
		t.Fatalf("%d runs after a refused start", n)
	}
}

// TestListenHostAccepted: the specific host of the listen address is a
// name the server answers to; a wildcard listen address adds nothing.
func TestListenHostAccepted(t *testing.T) {
	tests := []struct {
		addr, host string
		ok         bool
	}{
		{"192.0.2.10:46397", "192.0.2.10:46397", true},
		{"[2001:db8::1]:46397", "[2001:DB8:0::1]:46397", true},
		{"flock.internal:46397", "Flock.Internal", true},
		{"0.0.0.0:46397", "0.0.0.0:46397", false},
		{"[::]:46397", "[::]:46397", false},
		{":46397", "example.com", false},
		{"192.0.2.10:46397", "192.0.2.11", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr+" "+tt.host, func(t *testing.T) {
			g, err := newGuard(configs.Server{Addr: tt.addr})
			if err != nil {
				t.Fatal(err)
			}
			err = g.checkHost(tt.host)
			if (err == nil) != tt.ok {
				t.Fatalf("checkHost(%q) = %v, want ok=%v", tt.host, err, tt.ok)
			}
		})
	}
}

// TestShortTokenRefused: a token shorter than 16 bytes is refused when the
// server is built, and the error does not quote it.
func TestShortTokenRefused(t *testing.T) {
	e := newEnv(t)
	for _, tok := range []string{"s3cret", "fifteen-bytes!!"} {
		_, err := New(configs.Server{Addr: "127.0.0.1:0", AuthToken: tok}, e.ex, e.store, nil)
		if err == nil {
			t.Fatalf("New accepted a %d-byte token", len(tok))
		}
		if msg := err.Error(); !strings.Contains(msg, "--auth-token") || !strings.Contains(msg, "shorter than 16 bytes") || strings.Contains(msg, tok) {
			t.Fatalf("error %q does not name the setting, or quotes the token", msg)
		}
	}
	if _, err := New(configs.Server{Addr: "127.0.0.1:0", AuthToken: "sixteen-bytes!!!"}, e.ex, e.store, nil); err != nil {
		t.Fatalf("16-byte token: %v", err)
	}
}

// TestCORSForAllowedOrigins: a listed origin gets the CORS headers that
// let its page read answers, and its preflight is answered without a
// token; the own origin and clients without Origin get none.
func TestCORSForAllowedOrigins(t *testing.T) {
	const token = "a-token-of-32-bytes-for-the-test"
	e := newEnv(t, func(c *configs.Server) {
		c.AllowedOrigins = []string{"https://ui.example"}
		c.AuthToken = token
	})
	r := e.raw(t, rawRequest{method: "GET", path: "/runs", origin: "https://UI.example"})
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "https://UI.example" ||
		!strings.Contains(r.header.Get("Access-Control-Expose-Headers"), "X-Request-ID") {
		t.Fatalf("allowed GET: status %d, headers %v", r.status, r.header)
	}
	noToken := *e
	noToken.token = ""
	req, err := http.NewRequest(http.MethodOptions, e.base+"/start_workflow", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", "https://ui.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent || !strings.Contains(res.Header.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(res.Header.Get("Access-Control-Allow-Headers"), "Content-Type") ||
		!strings.Contains(res.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Fatalf("preflight: status %d, headers %v", res.StatusCode, res.Header)
	}
	// The token is still required for the request itself.
	r = noToken.raw(t, rawRequest{method: "POST", path: "/start_workflow", body: startBody,
		contentType: "application/json", origin: "https://ui.example"})
	if r.status != http.StatusUnauthorized {
		t.Fatalf("allowed origin without token: status %d", r.status)
	}
	for _, origin := range []string{"", e.base} {
		r := e.raw(t, rawRequest{method: "GET", path: "/runs", origin: origin})
		if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("origin %q: status %d, Access-Control-Allow-Origin %q", origin, r.status, r.header.Get("Access-Control-Allow-Origin"))
		}
	}
}
