package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/testkit"
)

// natsServerBinary builds nats-server from the module flock embeds (the
// version go.mod names) once per test binary.
var natsServerBinary = sync.OnceValues(func() (string, error) {
	out := filepath.Join(filepath.Dir(binary), "nats-server")
	build := exec.Command("go", "build", "-o", out, "github.com/nats-io/nats-server/v2")
	if b, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build nats-server: %w\n%s", err, b)
	}
	return out, nil
})

// natsServer is one nats-server process of a three-server cluster.
type natsServer struct {
	name, conf, clientAddr string
	cmd                    *exec.Cmd
	out                    *testkit.Buffer
}

// startNATSCluster starts three nats-server processes routed to each
// other on loopback, with flock's account and user (password secret) and
// JetStream syncing every write, as the README's "Running a cluster"
// shows, and returns them with the --nats URL list.
func startNATSCluster(t testing.TB, secret string) ([]*natsServer, string) {
	t.Helper()
	dir := t.TempDir()
	var routes, urls []string
	servers := make([]*natsServer, 3)
	clusterAddrs := make([]string, 3)
	for i := range servers {
		servers[i] = &natsServer{name: fmt.Sprintf("s%d", i+1), clientAddr: freePort(t)}
		clusterAddrs[i] = freePort(t)
		routes = append(routes, "nats-route://"+clusterAddrs[i])
		urls = append(urls, "nats://"+servers[i].clientAddr)
	}
	for i, s := range servers {
		s.conf = filepath.Join(dir, s.name+".conf")
		conf := fmt.Sprintf(`server_name: %s
listen: %s
jetstream { store_dir: %q, sync_interval: always }
cluster { name: flock-nats, listen: %s, routes: [%s] }
accounts {
  FLOCK {
    jetstream: enabled
    users: [{user: flock, password: %q}]
  }
}
`, s.name, s.clientAddr, filepath.Join(dir, s.name), clusterAddrs[i], strings.Join(routes, ", "), secret)
		if err := os.WriteFile(s.conf, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		s.start(t)
	}
	for _, s := range servers {
		s.waitListening(t)
	}
	return servers, strings.Join(urls, ",")
}

// waitListening waits until s accepts connections.
func (s *natsServer) waitListening(t testing.TB) {
	t.Helper()
	testkit.CheckFor(t, 30*time.Second, func() error {
		c, err := net.Dial("tcp", s.clientAddr)
		if err != nil {
			return fmt.Errorf("nats-server %s: %w\n%s", s.name, err, s.out.String())
		}
		return c.Close()
	})
}

// start starts (or restarts) s.
func (s *natsServer) start(t testing.TB) {
	t.Helper()
	bin, err := natsServerBinary()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd = exec.Command(bin, "-c", s.conf)
	s.out = &testkit.Buffer{}
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd := s.cmd
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
}

// kill9 kills s with SIGKILL.
func (s *natsServer) kill9() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	_ = s.cmd.Wait()
}

// takeover is how long after a kill a moved run's first operation began
// on another node.
func (c *tickCluster) takeovers(tags []string, victim string, killed time.Time) (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	for _, tag := range tags {
		var first time.Time
		for _, mk := range c.opMarks(tag) {
			if mk.what == "begin" && mk.node != victim && mk.at.After(killed) && (first.IsZero() || mk.at.Before(first)) {
				first = mk.at
			}
		}
		if first.IsZero() {
			return nil, fmt.Errorf("run %s has begun no operation since the kill", tag)
		}
		out[tag] = first.Sub(killed)
	}
	return out, nil
}

// TestClusterExternalNATSKill9 runs three flock nodes as clients of a
// separate cluster of three real nats-server processes (--nats), the
// topology the README recommends for production (issue 28.2):
//
//   - kill -9 of a flock node that drives runs: every run it drove begins
//     operations on the other nodes within AckWait + 1 s (the claim's
//     redelivery, with no JetStream election, since no flock node is a
//     NATS server; checked with slack for a loaded machine, and logged);
//   - kill -9 of a nats-server: every run goes on after the election,
//     reads of every run from every node keep answering meanwhile, and
//     no command that ended on a living node began again (its commit was
//     retried, not the command).
func TestClusterExternalNATSKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	secret, err := os.ReadFile(clusterSecretFile(t))
	if err != nil {
		t.Fatal(err)
	}
	servers, urls := startNATSCluster(t, strings.TrimSpace(string(secret)))
	c := startTickClusterOn(t, urls)
	const steps = 400
	var ids, tags []string
	for k := range 6 {
		tag := fmt.Sprintf("ext%d", k)
		ids = append(ids, c.start(k%3, "bash", tag, steps, 1))
		tags = append(tags, tag)
	}
	drivers := map[string]string{}
	testkit.CheckFor(t, 60*time.Second, func() error {
		for i, id := range ids {
			d := c.driver(0, id)
			if d == "" {
				return fmt.Errorf("run %s not driven yet", id)
			}
			drivers[tags[i]] = d
			if len(c.opMarks(tags[i])) == 0 {
				return fmt.Errorf("run %s has begun no operation", id)
			}
		}
		return nil
	})
	victim := drivers[tags[0]]
	var moved []string
	for _, tag := range tags {
		if drivers[tag] == victim {
			moved = append(moved, tag)
		}
	}
	vi := slices.IndexFunc(c.nodes, func(n clusterNode) bool { return n.name == victim })
	c.procs[vi].kill()
	killed := time.Now()
	var took map[string]time.Duration
	testkit.CheckFor(t, 60*time.Second, func() error {
		var err error
		took, err = c.takeovers(moved, victim, killed)
		return err
	})
	var ds []time.Duration
	for _, d := range took {
		ds = append(ds, d)
	}
	slices.Sort(ds)
	t.Logf("kill -9 of flock node %s (AckWait 1 s): its %d runs resumed elsewhere after p50 %v, max %v",
		victim, len(ds), ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
	// The promise of issue 28.2 for this topology: within AckWait + 1 s
	// (measured: max 1.7 s at load 25), with 2 s more for a loaded
	// machine. A takeover that waited for a JetStream election (4–9 s,
	// the embedded topology) or for the lease sweep fails here.
	if worst := ds[len(ds)-1]; worst > 4*time.Second {
		t.Errorf("slowest takeover %v, want within AckWait + 1 s = 2 s (4 s with slack)", worst.Round(time.Millisecond))
	}
	c.procs[vi] = c.startNode(vi)
	waitHealthy(t, c.procs[vi], 60*time.Second)

	// kill -9 of a NATS server: reads keep answering from every node,
	// and the runs go on.
	servers[0].kill9()
	killed = time.Now()
	var slowest time.Duration
	testkit.CheckFor(t, 90*time.Second, func() error {
		for _, p := range c.procs {
			for _, id := range ids {
				began := time.Now()
				if _, err := p.c.Run(context.Background(), id); err != nil {
					t.Fatalf("read run %s from %s during the NATS failover: %v", id, p.base, err)
				}
				slowest = max(slowest, time.Since(began))
			}
		}
		_, err := c.takeovers(tags, "", killed)
		return err
	})
	t.Logf("kill -9 of nats-server %s: every run began an operation again within %v; slowest read %v",
		servers[0].name, time.Since(killed).Round(time.Millisecond), slowest.Round(time.Millisecond))
	servers[0].start(t)
	servers[0].waitListening(t)
	for i, id := range ids {
		// The restarted NATS server rejoins and may move a leader again:
		// the node waits out that election, and the cancel is answered
		// once, with no "try again".
		if _, err := c.procs[(i+1)%3].c.Cancel(context.Background(), id); err != nil {
			t.Fatalf("cancel %s right after nats-server %s rejoined: %v", id, servers[0].name, err)
		}
		waitEnded(t, c.procs[(i+1)%3], id, time.Minute)
		// No command began again after it ended on a node that lived on
		// (its result was journaled, its commit retried through the
		// NATS election if need be); one that ended on the killed node
		// may have ended before its result was journaled.
		ended := map[string]time.Time{}
		for _, mk := range c.opMarks(tags[i]) {
			if mk.what == "end" && mk.node != victim {
				if _, ok := ended[mk.step]; !ok || mk.at.Before(ended[mk.step]) {
					ended[mk.step] = mk.at
				}
			}
		}
		for _, mk := range c.opMarks(tags[i]) {
			if e, ok := ended[mk.step]; ok && mk.what == "begin" && mk.at.After(e) {
				t.Errorf("run %s: step %s began again on %s after it had ended", id, mk.step, mk.node)
			}
		}
	}
}
