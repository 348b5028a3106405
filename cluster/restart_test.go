package cluster

import (
	"testing"
	"time"
)

// TestClusterRestartBindsLater: a node restarted on its NATS store
// directory finds the claim stream and its consumer on its own server and
// joins without waiting for their leaders (Restarted; issue 28.3: after a kill -9 the
// streams it led answer only once new leaders are elected); its store and
// its claim consumer bind in the background, and a run started on it at
// once is accepted and finishes. The nodes of a new cluster hold nothing
// yet and provision as before.
func TestClusterRestartBindsLater(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	for _, n := range c.nodes {
		if n.m.Provisioned == Restarted {
			t.Fatalf("%s of a new cluster %s", n.name, n.m.Provisioned)
		}
	}
	c.kill(1)
	c.restart(1)
	n := c.nodes[1]
	if n.m.Provisioned != Restarted {
		t.Fatalf("restarted %s %s; want it to bind in the background to the streams its server holds", n.name, n.m.Provisioned)
	}
	t.Logf("%s restarted, joined after %v", n.name, n.m.Ready.Round(time.Millisecond))
	id := startScript(t, n, t.TempDir(), 0, 2)
	waitEnded(t, n.store, []string{id}, 60*time.Second)
}
