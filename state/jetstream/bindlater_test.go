package jetstream

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/state"
)

// TestBindLater opens a store with Options.BindLater while its server's
// JetStream does not answer (the server runs without it, as the streams a
// restarted node led answer nothing until new leaders are elected): Open
// returns at once, calls, Check and the failover reads (which do not
// wait for the bind) fail with state.ErrUnavailable, and
// once JetStream answers (the server restarted with it) the store binds by
// itself and serves the run written before. A store that binds for good
// to streams that are not there fails every call with ErrNotProvisioned;
// one closed while it binds stops binding.
func TestBindLater(t *testing.T) {
	port := freePorts(t, 1)[0]
	dir := t.TempDir()
	opts := func(js bool) *server.Options {
		o := soloOptions(t)
		o.Port, o.StoreDir, o.JetStream = port, dir, js
		return o
	}
	ctx := context.Background()

	// A store made while JetStream answers, with a run in it.
	srv := runServer(t, opts(true))
	made := openStore(t, []*server.Server{srv}, Options{Prefix: "later", Replicas: 1})
	if err := made.Commit(ctx, step("r1", 1, 0, state.StatusRunning)); err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	srv.WaitForShutdown()

	// The server back without JetStream: nothing answers.
	srv = runServer(t, opts(false))
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, js, Options{Prefix: "later", Replicas: 1, BindOnly: true, BindLater: true})
	if err != nil {
		t.Fatalf("Open with BindLater: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.Run(ctx, "r1"); !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("Run before the streams answer: %v, want state.ErrUnavailable", err)
	}
	if err := s.Check(ctx); !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("Check before the streams answer: %v, want state.ErrUnavailable", err)
	}
	if err := s.Release(ctx, "r1", "n1"); !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("Release before the streams answer: %v, want state.ErrUnavailable", err)
	}
	// The failover reads do not wait for the bind: they ask the leader,
	// then a replica, with requests of their own (none answers here).
	fr := s.FailoverReads()
	short := func() context.Context {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		t.Cleanup(cancel)
		return c
	}
	if _, err := fr.Run(short(), "r1"); !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("failover Run before the streams answer: %v, want state.ErrUnavailable", err)
	}
	if _, _, err := fr.Runs(short(), state.RunFilter{}); !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("failover Runs before the streams answer: %v, want state.ErrUnavailable", err)
	}
	if _, err := fr.Unfinished(short()); !errors.Is(err, state.ErrUnavailable) {
		t.Fatalf("failover Unfinished before the streams answer: %v, want state.ErrUnavailable", err)
	}
	// Closed while binding: it stops.
	closed, err := Open(ctx, js, Options{Prefix: "later", Replicas: 1, BindOnly: true, BindLater: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := closed.Run(ctx, "r1"); !errors.Is(err, state.ErrClosed) {
		t.Fatalf("Run of a store closed while binding: %v, want state.ErrClosed", err)
	}

	// JetStream answers again: the store binds and serves.
	srv.Shutdown()
	srv.WaitForShutdown()
	runServer(t, opts(true))
	testkit.CheckFor(t, 30*time.Second, func() error {
		_, err := s.Run(ctx, "r1")
		return err
	})
	if err := s.Check(ctx); err != nil {
		t.Fatalf("Check once bound: %v", err)
	}
	if _, err := s.Claim(ctx, "r1", "n1", time.Second); err != nil {
		t.Fatalf("Claim once bound: %v", err)
	}
	if runs, _, err := fr.Runs(ctx, state.RunFilter{}); err != nil || len(runs) != 1 {
		t.Fatalf("failover Runs once bound: %v, %v", runs, err)
	}

	// Streams that are not there: every call says so.
	missing, err := Open(ctx, js, Options{Prefix: "nothing", Replicas: 1, BindOnly: true, BindLater: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = missing.Close() })
	testkit.CheckFor(t, 30*time.Second, func() error {
		if _, err := missing.Run(ctx, "r1"); !errors.Is(err, ErrNotProvisioned) {
			return err
		}
		return nil
	})
}
