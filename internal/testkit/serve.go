package testkit

import (
	"context"
	"net"
	"testing"
	"time"
)

// ShutdownTimeout bounds a served server's Shutdown at the end of a test.
const ShutdownTimeout = 10 * time.Second

// Server is what Serve starts: flock's API server, or the sandbox's
// (both *server.Server), bound to the address of their settings.
type Server interface {
	Start() (net.Addr, error)
	Shutdown(ctx context.Context) error
}

// Serve starts srv, failing tb if it cannot, and shuts it down when the
// test ends, reporting an error of Shutdown as a test error; it returns
// the server's base URL, http://host:port. A test that shuts the server
// down itself (to start another on its address) starts it directly.
func Serve(tb testing.TB, srv Server) string {
	tb.Helper()
	addr, err := srv.Start()
	if err != nil {
		tb.Fatalf("start server: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			tb.Errorf("shut down the server at %s: %v", addr, err)
		}
	})
	return "http://" + addr.String()
}
