package e2e

import (
	"context"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/internal/testkit"
)

// readyLine is the line `flock serve --cluster` writes on stderr once the
// node serves.
var readyLine = regexp.MustCompile(`flock: cluster node (\S+) ready after ([0-9.]+) s \(([^)]*)\)`)

// restartedHow is how the ready line says a restarted node found the
// streams: on its own NATS server, binding as their leaders answer.
const restartedHow = "restarted on the streams its NATS server holds"

// readyOf waits for p's ready line on stderr and returns how long the
// node took, by its own account, and how it found the streams.
func readyOf(t testing.TB, p *proc) (float64, string) {
	t.Helper()
	var m []string
	testkit.WaitFor(t, "the ready line on stderr", func() bool {
		m = readyLine.FindStringSubmatch(p.stderr.String())
		return m != nil
	})
	s, err := strconv.ParseFloat(m[2], 64)
	if err != nil {
		t.Fatal(err)
	}
	return s, m[3]
}

// TestClusterStartsAtOnce starts three `flock serve --cluster` nodes at
// once on a fresh cluster (issue 28.3): one creates the streams, buckets
// and the consumer, the others wait for them; each says on stderr when it
// is ready (the times are logged: the target is 2 s on one machine); a
// start sent to each node as soon as it passes /health is accepted. A
// node restarted after SIGTERM restarts on the streams its NATS server
// holds, accepts a start as soon as it passes /health, and the run
// finishes.
func TestClusterStartsAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	nodes, routes := newClusterNodes(t, 3)
	procs := make([]*proc, 3)
	for i, n := range nodes {
		procs[i] = startClusterProc(t, n, routes)
	}
	hows := map[string]int{}
	for i, p := range procs {
		waitHealthy(t, p, 60*time.Second)
		// Passing /health, it accepts a start at once.
		if _, err := p.c.Start(context.Background(), api.StartRequest{Workflow: "script",
			Settings: []byte(`{"commands": ["true"]}`)}); err != nil {
			t.Fatalf("%s passes /health, but its first start: %v\n%s", nodes[i].name, err, p.out.String())
		}
		s, how := readyOf(t, p)
		hows[how]++
		t.Logf("%s ready after %.2f s (%s)", nodes[i].name, s, how)
	}
	if hows["created the streams"] != 1 || hows["waited for another node to create the streams"]+hows["bound to the streams"] != 2 {
		t.Fatalf("how the nodes found the streams: %v; want one creator", hows)
	}
	p := procs[1]
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Logf("%s after SIGTERM: %v", nodes[1].name, err)
	}
	procs[1] = startClusterProc(t, nodes[1], routes)
	waitHealthy(t, procs[1], 60*time.Second)
	s, how := readyOf(t, procs[1])
	t.Logf("%s restarted, ready after %.2f s (%s)", nodes[1].name, s, how)
	if how != restartedHow {
		t.Fatalf("a restarted node %s, want it %s", how, restartedHow)
	}
	started, err := procs[1].c.Start(context.Background(), api.StartRequest{Workflow: "script",
		Settings: []byte(`{"commands": ["true"]}`)})
	if err != nil {
		t.Fatalf("the restarted node's first start: %v", err)
	}
	if h := waitEnded(t, procs[1], started.RunID, 60*time.Second); h.Status != "succeeded" {
		t.Fatalf("the run started on the restarted node: %s", h.Status)
	}
}
