package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// startClusterProcs starts every node's process (startClusterProc).
func startClusterProcs(t testing.TB, nodes []clusterNode, routes string) []*proc {
	t.Helper()
	procs := make([]*proc, len(nodes))
	for i, n := range nodes {
		procs[i] = startClusterProc(t, n, routes)
	}
	return procs
}

// BenchmarkClusterRestartAfterKill9 kills a node of a three-node embedded
// cluster with SIGKILL while script runs go on, restarts it at once,
// waits for its /health and sends it a start as soon as it passes,
// $FLOCK_E2E_RESTARTS times (default 20), each node in turn; it reports
// the p50 and max of the restarts until /health passes and until that
// start is accepted (it waits out the election of new leaders for the
// streams the killed node led), and fails when a restarted node does not
// pass /health within 60 s (issue 28.3: it once did not in the benchmark
// of restarts), refuses the start, or does not finish its run. Run with
// -benchtime 1x.
func BenchmarkClusterRestartAfterKill9(b *testing.B) {
	restarts := 20
	if v := os.Getenv("FLOCK_E2E_RESTARTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("FLOCK_E2E_RESTARTS=%q: want a positive number", v)
		}
		restarts = n
	}
	for range b.N {
		marks := b.TempDir()
		nodes, rs := newClusterNodes(b, 3)
		procs := startClusterProcs(b, nodes, rs)
		waitAllHealthy(b, procs, 60*time.Second)
		var ds, starts []time.Duration
		for k := range restarts {
			// Runs on every node, so that the killed one holds claims
			// and leases and leads some of the streams' work.
			for i, p := range procs {
				cmds := make([]string, 20)
				for j := range cmds {
					cmds[j] = fmt.Sprintf("echo ran >> %s; sleep 0.05", filepath.Join(marks, fmt.Sprintf("k%d_%d", k, i)))
				}
				p.start("script", map[string]any{"commands": cmds})
			}
			victim := k % 3
			time.Sleep(300 * time.Millisecond) // let the runs get under way
			procs[victim].kill()
			began := time.Now()
			procs[victim] = startClusterProc(b, nodes[victim], rs)
			waitHealthy(b, procs[victim], 60*time.Second)
			d := time.Since(began)
			ds = append(ds, d)
			id := procs[victim].start("script", map[string]any{"commands": []string{"true"}})
			st := time.Since(began)
			starts = append(starts, st)
			s, how := readyOf(b, procs[victim])
			b.Logf("restart %d (%s): /health after %v, a start accepted after %v (ready after %.2f s, %s)", k+1, nodes[victim].name,
				d.Round(time.Millisecond), st.Round(time.Millisecond), s, how)
			if h := waitEnded(b, procs[victim], id, 60*time.Second); h.Status != "succeeded" {
				b.Fatalf("the run started on the restarted %s: %s", nodes[victim].name, h.Status)
			}
		}
		slices.Sort(ds)
		slices.Sort(starts)
		b.ReportMetric(ds[len(ds)/2].Seconds(), "p50-s")
		b.ReportMetric(ds[len(ds)-1].Seconds(), "max-s")
		b.ReportMetric(starts[len(starts)/2].Seconds(), "start-p50-s")
		b.ReportMetric(starts[len(starts)-1].Seconds(), "start-max-s")
	}
}

// TestClusterCreatorRestartedAfterKill9 kills the node that created a
// three-node embedded cluster's streams with SIGKILL and restarts it at
// once: it restarts on the streams its NATS server holds, as any
// restarted node does (JetStream answers its identical create of the
// claim stream as a success, and it once took that for a first start and
// provisioned every stream again), passes /health, reads a run at once,
// accepts a start sent as soon as it does (issue 28.3: a restarted node
// is ready before the streams it led have new leaders; the start waits
// for them), and the run finishes. The times are logged.
func TestClusterCreatorRestartedAfterKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	nodes, rs := newClusterNodes(t, 3)
	procs := startClusterProcs(t, nodes, rs)
	waitAllHealthy(t, procs, 60*time.Second)
	creator := -1
	for i, p := range procs {
		if _, how := readyOf(t, p); how == "created the streams" {
			creator = i
		}
	}
	if creator < 0 {
		t.Fatal("no node created the streams")
	}
	before := procs[creator].start("script", map[string]any{"commands": []string{"true"}})
	procs[creator].kill()
	began := time.Now()
	procs[creator] = startClusterProc(t, nodes[creator], rs)
	waitHealthy(t, procs[creator], 60*time.Second)
	s, how := readyOf(t, procs[creator])
	t.Logf("%s, which created the streams, restarted after kill -9: /health after %v (ready after %.2f s, %s)",
		nodes[creator].name, time.Since(began).Round(time.Millisecond), s, how)
	// It reads runs at once too: from a replica while the leaders are
	// elected.
	procs[creator].run(before)
	id := procs[creator].start("script", map[string]any{"commands": []string{"true"}})
	t.Logf("its first start accepted after %v", time.Since(began).Round(time.Millisecond))
	if how != restartedHow {
		t.Fatalf("the restarted creator %s, want it %s", how, restartedHow)
	}
	if h := waitEnded(t, procs[creator], id, 60*time.Second); h.Status != "succeeded" {
		t.Fatalf("the run started on the restarted creator: %s", h.Status)
	}
}
