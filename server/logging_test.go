package server

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/labstack/echo/v5"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit"
)

// TestDebugLogCarriesNoToken serves with a token and a debug-level logger,
// which logs every request, and sends the right token, a wrong one, and
// tokens in the places a careless log line would copy them from (the
// Authorization header of an answered, a refused and an unrouted request,
// a panicking handler). No log line may contain either token; the request
// lines and the panic must be there, through the server's logger.
func TestDebugLogCarriesNoToken(t *testing.T) {
	const token = "canary-token-7f3a9c2e41d8b605"
	const wrong = "canary-wrong-0b5d8e3f92a7c614"
	base := newEnv(t)
	var logs testkit.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := New(configs.Server{Addr: "127.0.0.1:0", AuthToken: token}, base.ex, base.store, logger)
	if err != nil {
		t.Fatal(err)
	}
	if srv.e.Logger != logger {
		t.Fatal("echo does not log through the server's logger")
	}
	srv.e.GET("/panic", func(*echo.Context) error { panic("boom") })
	e := &env{base: testkit.Serve(t, srv), token: token}
	id := e.start(t, "test.log", "")
	requests := []struct {
		method, path, auth string
		status             int
	}{
		{"GET", "/runs/" + id, "Bearer " + token, 200},
		{"GET", "/runs?limit=1", "Bearer " + token, 200},
		{"GET", "/runs/" + id, "Bearer " + wrong, 401},
		{"GET", "/runs", wrong, 401},
		{"GET", "/nope", "Bearer " + token, 404},
		{"GET", "/nope", "Bearer " + wrong, 401},
		{"GET", "/panic", "Bearer " + token, 500},
	}
	noToken := *e
	noToken.token = ""
	for _, r := range requests {
		res := noToken.do(t, r.method, r.path, nil, "Authorization", r.auth)
		if res.status != r.status {
			t.Fatalf("%s %s: status %d, want %d: %s", r.method, r.path, res.status, r.status, res.body)
		}
	}
	out := logs.String()
	for _, want := range []string{"http request", "status=401", "status=404", "status=500", "http handler panic", "boom"} {
		if !strings.Contains(out, want) {
			t.Fatalf("log lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "msg=\"http handler panic\""); n != 1 {
		t.Fatalf("the panic is logged %d times, want once:\n%s", n, out)
	}
	for _, secret := range []string{token, wrong, "canary-"} {
		if strings.Contains(out, secret) {
			t.Fatalf("log contains %q:\n%s", secret, out)
		}
	}
}

// TestServerLogsAtItsLevel checks that request lines follow the logger's
// level: none at info.
func TestServerLogsAtItsLevel(t *testing.T) {
	base := newEnv(t)
	var logs testkit.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv, err := New(configs.Server{Addr: "127.0.0.1:0"}, base.ex, base.store, logger)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{base: testkit.Serve(t, srv)}
	if r := e.do(t, http.MethodGet, "/health", nil); r.status != http.StatusOK {
		t.Fatalf("health: %d", r.status)
	}
	out := logs.String()
	if !strings.Contains(out, "http server listening") {
		t.Fatalf("no info line from the server:\n%s", out)
	}
	if strings.Contains(out, "http request") {
		t.Fatalf("request line logged at info level:\n%s", out)
	}
}
