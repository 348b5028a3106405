package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v5"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/state"
)

func TestBadStartBodies(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name string
		body string
		want string // substring of the error message
	}{
		{"empty body", ``, "body: empty"},
		{"truncated JSON", `{"workflow": "test.log",`, "body: malformed JSON: unexpected end of input at byte"},
		{"syntax error", `{"workflow" "test.log"}`, "body: malformed JSON at byte 13"},
		{"array body", `["test.log"]`, "body: expected a JSON object, got JSON array"},
		{"null body", `null`, "body: expected a JSON object"},
		{"trailing data", `{"workflow":"test.log"} {}`, "body: unexpected data after the JSON object"},
		{"unknown field", `{"workflow":"test.log","workflw":"x"}`, `"workflw": unknown field (expected workflow, settings, task)`},
		{"missing workflow", `{"task":"t"}`, "workflow: required (or settings.workflow_type)"},
		{"empty workflow", `{"workflow":"","settings":{}}`, "workflow: required (or settings.workflow_type)"},
		{"workflow not a string", `{"workflow":7}`, "workflow: must be a string, got JSON number"},
		{"task not a string", `{"workflow":"test.log","task":{"a":1}}`, "task: must be a string, got JSON object"},
		{"settings a string", `{"workflow":"test.log","settings":"settings.json"}`, "settings: must be a JSON object, got JSON string"},
		{"settings an array", `{"workflow":"test.log","settings":[1]}`, "settings: must be a JSON object, got JSON array"},
		{"unknown workflow", `{"workflow":"nope"}`, `"nope" is not registered (registered: test.fail, test.log, test.parent, test.wait)`},
		{"workflow typo", `{"workflow":"test.wiat"}`, `"test.wiat" is not registered; did you mean "test.wait"? (registered: test.fail, test.log, test.parent, test.wait)`},
		{"unknown workflow_type", `{"settings":{"workflow_type":"nope"}}`, `"nope"`},
		{"bad settings field", `{"workflow":"test.log","settings":{"workflow_type":3}}`, "workflow_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(t, http.MethodPost, "/start_workflow", strings.NewReader(tt.body))
			if r.status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", r.status, r.body)
			}
			if msg := r.errorMessage(t); !strings.Contains(msg, tt.want) {
				t.Fatalf("error %q does not contain %q", msg, tt.want)
			}
		})
	}
	var p struct {
		Runs []api.Run `json:"runs"`
	}
	e.getJSON(t, "/runs", &p)
	if len(p.Runs) != 0 {
		t.Fatalf("bad requests created %d runs", len(p.Runs))
	}
}

func TestBadQueriesAndRoutes(t *testing.T) {
	e := newEnv(t)
	id := e.start(t, "test.log", "")
	e.waitStatus(t, id, state.StatusSucceeded)
	const limitMsg = "limit: must be an integer between 1 and 1000"
	tests := []struct {
		name   string
		method string
		path   string
		header []string
		status int
		want   string
	}{
		{"limit zero", "GET", "/runs?limit=0", nil, 400, limitMsg},
		{"limit too big", "GET", "/runs?limit=1001", nil, 400, limitMsg},
		{"limit not a number", "GET", "/runs?limit=ten", nil, 400, limitMsg + ` (got "ten")`},
		{"entries limit", "GET", "/runs/" + id + "/entries?limit=-1", nil, 400, limitMsg},
		{"ops limit", "GET", "/runs/" + id + "/ops?limit=x", nil, 400, limitMsg},
		{"status filter", "GET", "/runs?status=done", nil, 400, `status: must be one of running, paused, succeeded, failed, cancelled (got "done")`},
		{"entries after", "GET", "/runs/" + id + "/entries?after=-3", nil, 400, `after: must be a non-negative integer`},
		{"events after", "GET", "/runs/" + id + "/events?after=x", nil, 400, `after: must be a non-negative integer`},
		{"Last-Event-ID", "GET", "/runs/" + id + "/events", []string{"Last-Event-ID", "abc"}, 400, `Last-Event-ID: must be a non-negative integer`},
		{"unknown run", "GET", "/runs/nope", nil, 404, `run "nope" not found`},
		{"unknown run entries", "GET", "/runs/nope/entries", nil, 404, `run "nope" not found`},
		{"unknown run ops", "GET", "/runs/nope/ops", nil, 404, `run "nope" not found`},
		{"unknown run events", "GET", "/runs/nope/events", nil, 404, `run "nope" not found`},
		{"unknown run cancel", "POST", "/runs/nope/cancel", nil, 404, `run "nope" not found`},
		{"unknown route", "GET", "/nope", nil, 404, "no route for GET /nope"},
		{"wrong method", "DELETE", "/health", nil, 405, "method DELETE is not allowed on /health"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(t, tt.method, tt.path, nil, tt.header...)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q", ct)
			}
			if msg := r.errorMessage(t); !strings.Contains(msg, tt.want) {
				t.Fatalf("error %q does not contain %q", msg, tt.want)
			}
		})
	}
}

func TestPanicIs500(t *testing.T) {
	// A second server over the same executor, served through Handler by
	// httptest, with two extra routes registered before it serves.
	base := newEnv(t)
	srv, err := New(configs.Server{Addr: "127.0.0.1:0"}, base.ex, base.store, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.e.GET("/panic", func(*echo.Context) error { panic("secret detail") })
	srv.e.GET("/fail", func(*echo.Context) error { return errors.New("secret detail") })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	e := &env{base: ts.URL}
	for _, path := range []string{"/panic", "/fail"} {
		t.Run(path, func(t *testing.T) {
			r := e.do(t, http.MethodGet, path, nil)
			if r.status != http.StatusInternalServerError {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			msg := r.errorMessage(t)
			if strings.Contains(msg, "secret") || strings.Contains(msg, "goroutine") || strings.Contains(msg, ".go:") {
				t.Fatalf("500 leaks internals: %q", msg)
			}
			if rid := r.header.Get("X-Request-ID"); rid == "" || !strings.Contains(msg, rid) {
				t.Fatalf("message %q does not carry the request id %q", msg, rid)
			}
		})
	}
	// The server lives on.
	if r := e.do(t, http.MethodGet, "/health", nil); r.status != http.StatusOK {
		t.Fatalf("health after panic: %d", r.status)
	}
}

// repeatReader yields n bytes of b without allocating them.
type repeatReader struct {
	b     byte
	n     int64
	block []byte // 32 KiB of b, copied out
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n {
		p = p[:r.n]
	}
	if len(r.block) == 0 {
		r.block = bytes.Repeat([]byte{r.b}, 32<<10)
	}
	n := 0
	for n < len(p) {
		n += copy(p[n:], r.block)
	}
	r.n -= int64(n)
	return n, nil
}

// bodyOfSize returns a valid start body of exactly size bytes (a task
// padded with 'a'), streamed. With chunked set, the reader hides its
// length so the client sends it chunked and the limit must apply while
// reading.
func bodyOfSize(size int64, chunked bool) (io.Reader, int64) {
	const head, tail = `{"workflow":"test.log","task":"`, `"}`
	pad := size - int64(len(head)+len(tail))
	r := io.MultiReader(strings.NewReader(head), &repeatReader{b: 'a', n: pad}, strings.NewReader(tail))
	if chunked {
		return struct{ io.Reader }{r}, -1
	}
	return r, size
}

// postSized posts body with the given Content-Length (-1: chunked).
func (e *env) postSized(tb testing.TB, body io.Reader, length int64) response {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, e.base+"/start_workflow", body)
	if err != nil {
		tb.Fatal(err)
	}
	req.ContentLength = length
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("post %d bytes: %v", length, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

func TestBodyLimit(t *testing.T) {
	const limit = 4096
	e := newEnv(t, func(c *configs.Server) { c.MaxBodyBytes = limit })
	tests := []struct {
		name    string
		size    int64
		chunked bool
		status  int
	}{
		{"at the limit", limit, false, http.StatusCreated},
		{"at the limit, chunked", limit, true, http.StatusCreated},
		{"one byte over", limit + 1, false, http.StatusRequestEntityTooLarge},
		{"one byte over, chunked", limit + 1, true, http.StatusRequestEntityTooLarge},
		{"far over, chunked", 64 * limit, true, http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, n := bodyOfSize(tt.size, tt.chunked)
			r := e.postSized(t, body, n)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %.200s", r.status, tt.status, r.body)
			}
			if tt.status == http.StatusRequestEntityTooLarge {
				if msg := r.errorMessage(t); msg != "request body too large: the limit is 4096 bytes" {
					t.Fatalf("error %q", msg)
				}
			}
		})
	}
}

// TestBodyLimitDefault sends 16 MiB + 1 byte, streamed, to a server with
// the default limit.
func TestBodyLimitDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 16 MiB twice")
	}
	e := newEnv(t)
	if e.srv.cfg.MaxBodyBytes != configs.DefaultMaxBodyBytes {
		t.Fatalf("default limit %d", e.srv.cfg.MaxBodyBytes)
	}
	tests := []struct {
		name    string
		chunked bool
	}{
		{"content-length", false},
		{"chunked", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, n := bodyOfSize(configs.DefaultMaxBodyBytes+1, tt.chunked)
			r := e.postSized(t, body, n)
			if r.status != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d: %.200s", r.status, r.body)
			}
			if msg := r.errorMessage(t); !strings.Contains(msg, fmt.Sprintf("the limit is %d bytes", configs.DefaultMaxBodyBytes)) {
				t.Fatalf("error %q", msg)
			}
		})
	}
}
