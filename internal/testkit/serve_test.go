package testkit

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
)

// httpServer is a Server over net/http, as flock's servers are.
type httpServer struct {
	srv  http.Server
	down bool
}

func (s *httpServer) Start() (net.Addr, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go s.srv.Serve(l)
	return l.Addr(), nil
}

func (s *httpServer) Shutdown(ctx context.Context) error {
	s.down = true
	return s.srv.Shutdown(ctx)
}

// TestServeShutsDownAtEnd: the server Serve starts answers at the URL it
// returns, and is shut down when the (sub)test ends.
func TestServeShutsDownAtEnd(t *testing.T) {
	s := &httpServer{srv: http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })}}
	var base string
	t.Run("serve", func(t *testing.T) {
		base = Serve(t, s)
		resp, err := http.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTeapot {
			t.Fatalf("GET %s/: %d, want 418", base, resp.StatusCode)
		}
	})
	if !s.down {
		t.Fatal("the server was not shut down at the end of the test")
	}
	if _, err := http.Get(base + "/"); err == nil {
		t.Fatal("the server still answers after the test ended")
	}
	if r := run(t, func(tb testing.TB) { Serve(tb, failing{}) }); r != "start server: no port" {
		t.Fatalf("a server that cannot start: %q", r)
	}
}

type failing struct{}

func (failing) Start() (net.Addr, error)       { return nil, errors.New("no port") }
func (failing) Shutdown(context.Context) error { return nil }
