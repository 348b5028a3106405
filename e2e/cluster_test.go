package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flockrun/flock/client"
	"github.com/flockrun/flock/internal/testkit"
)

// clusterNode is one `flock serve --cluster` process's fixed addresses,
// its secret file and its extra flags (TLS).
type clusterNode struct {
	name, data, addr, natsAddr, routeAddr string
	secretFile                            string
	extra                                 []string
	env                                   []string // added to the process's environment
	// args, if set, replace the flags clusterArgs gives (before extra).
	args []string
}

// clusterSecretFile writes a cluster secret into a file only its owner
// reads, as the README says to make one.
func clusterSecretFile(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nats.secret")
	if err := os.WriteFile(path, []byte("e2e-cluster-secret-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// newClusterNodes returns n nodes' addresses on loopback, sharing one
// secret file, and their routes flag.
func newClusterNodes(t testing.TB, n int) ([]clusterNode, string) {
	t.Helper()
	base, secret := t.TempDir(), clusterSecretFile(t)
	nodes := make([]clusterNode, n)
	var routes []string
	addrs := distinctPorts(t, 3*n)
	for i := range nodes {
		nodes[i] = clusterNode{name: fmt.Sprintf("n%d", i+1), data: filepath.Join(base, fmt.Sprintf("n%d", i+1)),
			addr: addrs[3*i], natsAddr: addrs[3*i+1], routeAddr: addrs[3*i+2], secretFile: secret}
		routes = append(routes, "nats://"+nodes[i].routeAddr)
	}
	return nodes, strings.Join(routes, ",")
}

// distinctPorts returns n free loopback addresses, all different: each
// is held open until all are picked (freePort, called n times, may hand
// out the port it just closed again, and one node's HTTP port was then
// another's NATS port).
func distinctPorts(t testing.TB, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		addrs[i] = l.Addr().String()
	}
	return addrs
}

// clusterArgs are the flags of node n's `flock serve --cluster`.
func clusterArgs(n clusterNode, routes string) []string {
	if n.args != nil {
		return append(slices.Clone(n.args), n.extra...)
	}
	args := []string{"serve", "--cluster", "--node", n.name, "--addr", n.addr, "--data", n.data,
		"--nats-listen", n.natsAddr, "--cluster-listen", n.routeAddr, "--routes", routes,
		"--nats-secret-file", n.secretFile, "--ack-wait", "1s", "--log-level", "warn"}
	return append(args, n.extra...)
}

// startClusterProc starts the node's process without waiting for it: a
// node is healthy only once a majority of the cluster is up.
func startClusterProc(t testing.TB, n clusterNode, routes string) *proc {
	t.Helper()
	cmd := exec.Command(binary, clusterArgs(n, routes)...)
	if len(n.env) > 0 {
		cmd.Env = append(os.Environ(), n.env...)
	}
	out, stderr := &testkit.Buffer{}, &testkit.Buffer{}
	cmd.Stdout, cmd.Stderr = out, io.MultiWriter(out, stderr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, cmd: cmd, base: "http://" + n.addr, out: out, stderr: stderr}
	c, err := client.New(p.base)
	if err != nil {
		t.Fatal(err)
	}
	p.c = c
	t.Cleanup(func() { p.kill() })
	return p
}

// natsArgs are the flags of node n as a client of the NATS cluster at
// urls (--nats).
func natsArgs(n clusterNode, urls string) []string {
	return []string{"serve", "--nats", urls, "--node", n.name, "--addr", n.addr, "--data", n.data,
		"--nats-secret-file", n.secretFile, "--ack-wait", "1s", "--log-level", "warn"}
}

// waitHealthy waits for p's /health.
func waitHealthy(t testing.TB, p *proc, d time.Duration) {
	t.Helper()
	waitAllHealthy(t, []*proc{p}, d)
}

// waitAllHealthy waits until every node of ps passes /health; if one does
// not within d, it fails with the tail of every node's output (a node
// waits for the others).
func waitAllHealthy(t testing.TB, ps []*proc, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for i := 0; i < len(ps); {
		resp, err := http.Get(ps[i].base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				i++
				continue
			}
		}
		if time.Now().After(deadline) {
			var all strings.Builder
			for j, p := range ps {
				out := p.out.String()
				fmt.Fprintf(&all, "--- node %d:\n%s\n", j+1, out[max(0, len(out)-6000):])
			}
			t.Fatalf("node %d did not come up: %v\n%s", i+1, err, all.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClusterCrashResume is TestCrashResume against a cluster of three
// real `flock serve --cluster` processes on loopback: script runs started
// on every node append to marker files while nodes are killed with
// SIGKILL one at a time (twice: each kill of a node that led a stream
// costs a JetStream election, 4–9 s) and restarted; every run finishes, journaled
// commands ran exactly once, interrupted ones at most twice, no entry is
// lost, and every node serves every run over HTTP.
func TestClusterCrashResume(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster crash test skipped in -short mode")
	}
	began := time.Now()
	marks := t.TempDir()
	nodes, rs := newClusterNodes(t, 3)
	procs := make([]*proc, 3)
	for i, n := range nodes {
		procs[i] = startClusterProc(t, n, rs)
	}
	for _, p := range procs {
		waitHealthy(t, p, 30*time.Second)
	}
	t.Logf("cluster of 3 processes up in %v", time.Since(began).Round(time.Millisecond))

	const runs, commands = 6, 12
	ids := make([]string, runs)
	for k := range ids {
		ids[k] = procs[k%3].start("script", map[string]any{"commands": markerCommands(marks, k, commands)})
	}
	// Kill one node at a time (two stay up: a majority), at varied
	// moments; restart it, and wait until every unfinished run has
	// journaled a new result before the next kill.
	for j, d := range []time.Duration{150, 300} {
		time.Sleep(d * time.Millisecond)
		victim := j % 3
		live := procs[(victim+1)%3]
		procs[victim].kill()
		killed := time.Now()
		// While the cluster elects new leaders for what the dead node
		// led, reads may fail for a few seconds.
		before := tryDoneOps(t, live, ids, 20*time.Second)
		deadline := time.Now().Add(20 * time.Second)
		for !progressed(before, tryDoneOps(t, live, ids, 20*time.Second)) {
			if time.Now().After(deadline) {
				t.Fatalf("no progress after killing %s\n%s", nodes[victim].name, live.out.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("kill %d (%s): every unfinished run progressed %v later", j+1, nodes[victim].name, time.Since(killed).Round(time.Millisecond))
		procs[victim] = startClusterProc(t, nodes[victim], rs)
		waitHealthy(t, procs[victim], 30*time.Second)
	}
	p := procs[0]
	for k, id := range ids {
		h := waitEnded(t, p, id, 60*time.Second)
		if h.Status != "succeeded" {
			t.Fatalf("run %d ended %s (%s): %s", k, h.Status, h.EndReason, h.Error)
		}
		interrupted := checkRanOnce(t, p, id, k, marks, commands)
		// Every node serves the run's head, entries and ops.
		for _, q := range procs {
			checkEntries(t, q, id, k, commands)
			if h := q.run(id); h.Status != "succeeded" {
				t.Fatalf("run %d on %s: %s", k, q.base, h.Status)
			}
		}
		t.Logf("run %d: %d of %d commands re-dispatched after a crash", k, interrupted, commands)
	}
	t.Logf("whole test %v", time.Since(began).Round(time.Millisecond))
}

// tryDoneOps is doneOps, read again until every read succeeds or d has
// passed.
func tryDoneOps(t testing.TB, p *proc, ids []string, d time.Duration) []int {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		out, err := readDoneOps(p, ids)
		if err == nil {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("read runs: %v\n%s", err, p.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readDoneOps counts journaled results per run; -1 marks an ended run.
func readDoneOps(p *proc, ids []string) ([]int, error) {
	ctx := context.Background()
	out := make([]int, len(ids))
	for i, id := range ids {
		h, err := p.c.Run(ctx, id)
		if err != nil {
			return nil, err
		}
		if h.Status != "running" {
			out[i] = -1
			continue
		}
		page, err := p.c.Ops(ctx, id, "", 1000)
		if err != nil {
			return nil, err
		}
		for _, op := range page.Ops {
			if op.Status == "done" {
				out[i]++
			}
		}
	}
	return out, nil
}

// BenchmarkClusterKill9Takeover kills a random node of a cluster of three
// real flock processes with SIGKILL 10 times (restarting it each time)
// while runs of short commands go on, and reports, per kill, the time
// until every unfinished run has journaled a new result: the takeover of
// the dead node's runs. "embedded": the nodes embed NATS (a killed node
// that led a stream costs JetStream's leader election); "nats": the nodes
// are clients of three separate nats-server processes (--nats). Run with
// -benchtime 1x (a few minutes each).
func BenchmarkClusterKill9Takeover(b *testing.B) {
	b.Run("embedded", func(b *testing.B) { benchKill9(b, false) })
	b.Run("nats", func(b *testing.B) { benchKill9(b, true) })
}

// benchKill9 is BenchmarkClusterKill9Takeover on one topology.
func benchKill9(b *testing.B, external bool) {
	const kills = 10
	for range b.N {
		marks := b.TempDir()
		nodes, rs := newClusterNodes(b, 3)
		if external {
			secret, err := os.ReadFile(nodes[0].secretFile)
			if err != nil {
				b.Fatal(err)
			}
			_, urls := startNATSCluster(b, strings.TrimSpace(string(secret)))
			for i := range nodes {
				n := &nodes[i]
				n.args = natsArgs(*n, urls)
			}
		}
		procs := make([]*proc, 3)
		for i, n := range nodes {
			procs[i] = startClusterProc(b, n, rs)
		}
		for _, p := range procs {
			waitHealthy(b, p, 60*time.Second)
		}
		var ds []time.Duration
		for k := range kills {
			ids := make([]string, 3)
			for i := range ids {
				cmds := make([]string, 40)
				for j := range cmds {
					cmds[j] = fmt.Sprintf("echo ran >> %s/k%d_r%d; sleep 0.1", marks, k, i)
				}
				ids[i] = procs[i].start("script", map[string]any{"commands": cmds})
			}
			victim := k % 3
			live := procs[(victim+1)%3]
			time.Sleep(500 * time.Millisecond)
			procs[victim].kill()
			killed := time.Now()
			before := tryDoneOps(b, live, ids, 30*time.Second)
			deadline := time.Now().Add(60 * time.Second)
			for !progressed(before, tryDoneOps(b, live, ids, 30*time.Second)) {
				if time.Now().After(deadline) {
					b.Fatalf("no progress after killing %s", nodes[victim].name)
				}
				time.Sleep(10 * time.Millisecond)
			}
			d := time.Since(killed)
			ds = append(ds, d)
			b.Logf("kill %d (%s): every unfinished run progressed %v later", k+1, nodes[victim].name, d.Round(time.Millisecond))
			for _, id := range ids {
				_, _ = live.c.Cancel(context.Background(), id)
			}
			procs[victim] = startClusterProc(b, nodes[victim], rs)
			waitHealthy(b, procs[victim], 60*time.Second)
		}
		slices.Sort(ds)
		q := func(p float64) float64 { return ds[int(p*float64(len(ds)-1))].Seconds() }
		b.ReportMetric(ds[0].Seconds(), "min-s")
		b.ReportMetric(q(0.5), "p50-s")
		b.ReportMetric(q(0.9), "p90-s")
		b.ReportMetric(ds[len(ds)-1].Seconds(), "max-s")
	}
}
