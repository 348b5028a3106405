// Package testapp opens a real App (bbolt store, executor, handlers,
// gateway) for a test and closes it when the test ends, in place of the
// open-and-clean-up lines the tests of several packages wrote each for
// themselves. It is apart from package testkit because it imports app,
// which links everything; a test that closes its App itself (to reopen the
// data directory, as a restarted server would) calls app.Open directly.
package testapp

import (
	"context"
	"testing"
	"time"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
)

// CloseTimeout bounds the App's Close at the end of a test: the executor
// waits this long for its runs to stop. Generous, so that a loaded machine
// does not fail a test that is merely slow to shut down.
const CloseTimeout = 30 * time.Second

// Open opens an App with cfg and opts, failing tb if it cannot, and closes
// it when the test ends, reporting an error of Close as a test error.
// Cleanups run last-registered first, so a server a test starts on the App
// after Open is shut down before the App is closed.
func Open(tb testing.TB, cfg configs.Server, opts ...app.Option) *app.App {
	tb.Helper()
	a, err := app.Open(context.Background(), cfg, nil, opts...)
	if err != nil {
		tb.Fatalf("open app in %s: %v", cfg.DataDir, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), CloseTimeout)
		defer cancel()
		if err := a.Close(ctx); err != nil {
			tb.Errorf("close app in %s: %v", cfg.DataDir, err)
		}
	})
	return a
}
