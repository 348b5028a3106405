package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/flockrun/flock/configs"
)

func TestNonLoopbackNeedsToken(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name    string
		addr    string
		token   string
		wantErr bool
	}{
		{"all interfaces v4", "0.0.0.0:46397", "", true},
		{"all interfaces, empty host", ":46397", "", true},
		{"all interfaces v6", "[::]:46397", "", true},
		{"public address", "192.0.2.10:46397", "", true},
		{"public with token", "0.0.0.0:46397", "0123456789abcdef", false},
		{"loopback v4", "127.0.0.1:0", "", false},
		{"loopback v6", "[::1]:0", "", false},
		{"localhost", "localhost:0", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(configs.Server{Addr: tt.addr, AuthToken: tt.token}, e.ex, e.store, nil)
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("New accepted a non-loopback address without a token")
			}
			if msg := err.Error(); !strings.Contains(msg, tt.addr) || !strings.Contains(msg, "auth token") {
				t.Fatalf("error %q does not name the address and the token setting", msg)
			}
		})
	}
}

func TestBearerAuth(t *testing.T) {
	const token = "correct horse battery staple"
	e := newEnv(t, func(c *configs.Server) { c.AuthToken = token })
	id := e.start(t, "test.log", "") // with the token
	tests := []struct {
		name   string
		method string
		path   string
		auth   string // Authorization header; "" sends none
		status int
	}{
		{"health without token", "GET", "/health", "", 200},
		{"health with wrong token", "GET", "/health", "Bearer nope", 200},
		{"runs without token", "GET", "/runs", "", 401},
		{"runs with wrong token", "GET", "/runs", "Bearer nope", 401},
		{"runs with token prefix", "GET", "/runs", "Bearer correct horse", 401},
		{"runs with basic scheme", "GET", "/runs", "Basic " + token, 401},
		{"runs with raw token", "GET", "/runs", token, 401},
		{"runs with token", "GET", "/runs", "Bearer " + token, 200},
		{"run with token", "GET", "/runs/" + id, "Bearer " + token, 200},
		{"start without token", "POST", "/start_workflow", "", 401},
		{"events without token", "GET", "/runs/" + id + "/events", "", 401},
		{"workflows with token", "GET", "/workflows", "Bearer " + token, 200},
		{"unknown route without token", "GET", "/nope", "", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, e.base+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tt.status)
			}
			if tt.status == 401 && !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate = %q", res.Header.Get("WWW-Authenticate"))
			}
		})
	}
	// The 401 body is a JSON error like every other.
	noToken := *e
	noToken.token = ""
	r := noToken.do(t, http.MethodGet, "/runs", nil)
	if msg := r.errorMessage(t); !strings.Contains(msg, "bearer token") {
		t.Fatalf("401 error %q", msg)
	}
}

func TestStartTwiceAndShutdownIdempotent(t *testing.T) {
	e := newEnv(t)
	if _, err := e.srv.Start(); err == nil {
		t.Fatal("second Start succeeded")
	}
	s, err := New(configs.Server{Addr: "127.0.0.1:0"}, e.ex, e.store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(t.Context()); err != nil {
		t.Fatalf("Shutdown before Start: %v", err)
	}
	if _, err := s.Start(); err == nil {
		t.Fatal("Start after Shutdown succeeded")
	}
	if _, err := New(configs.Server{}, nil, nil, nil); err == nil {
		t.Fatal("New accepted a nil executor")
	}
}
