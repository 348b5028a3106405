package jetstream

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/flockrun/flock/internal/testkit"
)

// startServer starts an in-process JetStream server (fsync on every write,
// as production must run) with its store in a temp dir, stopped at cleanup.
func startServer(tb testing.TB) *server.Server {
	tb.Helper()
	return runServer(tb, soloOptions(tb))
}

// soloOptions are startServer's server options.
func soloOptions(tb testing.TB) *server.Options {
	return &server.Options{
		ServerName: "solo",
		Host:       "127.0.0.1",
		Port:       -1,
		JetStream:  true,
		StoreDir:   tb.TempDir(),
		SyncAlways: true,
		NoLog:      true,
		NoSigs:     true,
	}
}

func runServer(tb testing.TB, opts *server.Options) *server.Server {
	tb.Helper()
	s, err := server.NewServer(opts)
	if err != nil {
		tb.Fatalf("nats server: %v", err)
	}
	go s.Start()
	tb.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	if !s.ReadyForConnections(10 * time.Second) {
		tb.Fatalf("nats server %s not ready", opts.ServerName)
	}
	return s
}

// freePorts returns n loopback ports free at the time of the call.
func freePorts(tb testing.TB, n int) []int {
	tb.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}

// startCluster starts a JetStream cluster of n in-process servers routed to
// each other on loopback, and waits until it can place R-n streams.
func startCluster(tb testing.TB, n int) []*server.Server {
	tb.Helper()
	ports := freePorts(tb, n)
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	var servers []*server.Server
	for i := range n {
		opts := &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1",
			Port:       -1,
			JetStream:  true,
			StoreDir:   filepath.Join(tb.TempDir(), fmt.Sprint("n", i+1)),
			SyncAlways: true,
			NoLog:      true,
			NoSigs:     true,
			Cluster:    server.ClusterOpts{Name: "flock-test", Host: "127.0.0.1", Port: ports[i]},
			Routes:     server.RoutesFromStr(strings.Join(routes, ",")),
		}
		servers = append(servers, runServer(tb, opts))
	}
	nc := connect(tb, servers...)
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
	// The cluster is usable once its meta group has a leader and every
	// peer: an R-n stream can then be placed.
	testkit.WaitWithin(tb, 20*time.Second, "the cluster to place a replicated stream", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "PROBE", Subjects: []string{"probe"}, Replicas: n})
		return err == nil
	})
	if err := js.DeleteStream(context.Background(), "PROBE"); err != nil {
		tb.Fatal(err)
	}
	return servers
}

// connect connects a client to the servers, closed at cleanup.
func connect(tb testing.TB, servers ...*server.Server) *nats.Conn {
	tb.Helper()
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.ClientURL())
	}
	nc, err := nats.Connect(strings.Join(urls, ","), nats.MaxReconnects(-1))
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

var prefixes atomic.Int64

// openStore opens a Store under a fresh prefix on the servers, closed at
// cleanup.
func openStore(tb testing.TB, servers []*server.Server, opts Options) *Store {
	tb.Helper()
	nc := connect(tb, servers...)
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
	if opts.Prefix == "" {
		opts.Prefix = fmt.Sprintf("t%d", prefixes.Add(1))
	}
	if opts.Replicas == 0 {
		opts.Replicas = len(servers)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, js, opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}
