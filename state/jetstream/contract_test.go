package jetstream

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/storetest"
)

// TestContractR1 runs the Store contract suite on one in-process server,
// each subtest on streams of its own.
func TestContractR1(t *testing.T) {
	servers := []*server.Server{startServer(t)}
	storetest.Run(t, func(t *testing.T) state.Store { return openStore(t, servers, Options{}) })
}

// TestContractR3 runs the suite on a three-node cluster in this process,
// streams and buckets replicated three times, the client connected to
// every node.
func TestContractR3(t *testing.T) {
	start := time.Now()
	servers := startCluster(t, 3)
	t.Logf("3-node cluster ready in %v", time.Since(start).Round(time.Millisecond))
	storetest.Run(t, func(t *testing.T) state.Store { return openStore(t, servers, Options{Replicas: 3}) })
}
