// Package servertest starts real flock servers for the tests of other
// packages: the listeners, addresses and middleware they get are the ones
// a user's flock has.
package servertest

import (
	"context"
	"net"
	"testing"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/sandbox"
	"github.com/flockrun/flock/server/sandboxapi"
)

// StartSandbox starts what `flock sandbox` serves (a sandbox service with
// no backends, its /health and /api/v1 routes) on a real listener on
// 127.0.0.1, stopped at the end of the test, and returns its address: one
// of flock's own listen addresses, for the tests that must not reach it.
func StartSandbox(tb testing.TB) net.Addr {
	tb.Helper()
	cfg, err := sandbox.ParseConfig([]byte(`{}`), func(string) (string, bool) { return "", false })
	if err != nil {
		tb.Fatal(err)
	}
	svc, err := sandbox.New(context.Background(), cfg, sandbox.Options{DataDir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { svc.Close(context.Background()) })
	srv, err := sandboxapi.NewServer(configs.Server{Addr: "127.0.0.1:0"}, svc, nil, nil)
	if err != nil {
		tb.Fatal(err)
	}
	addr, err := srv.Start()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { srv.Shutdown(context.Background()) })
	return addr
}
