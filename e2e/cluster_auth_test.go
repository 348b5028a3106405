package e2e

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/internal/testkit"
)

// refusedStart runs flock with args and env, which must exit at once with
// a failure; it returns what it printed.
func refusedStart(t *testing.T, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ctx.Err() != nil {
		t.Fatalf("flock %s: %v, want a refusal; output:\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestClusterRefusesInsecureFlags: `flock serve --cluster` refuses to put
// NATS on an address that is not loopback without TLS and the secret, to
// run a cluster without the secret, a secret file other users may read,
// and credentials on the command line; each error names the flag.
func TestClusterRefusesInsecureFlags(t *testing.T) {
	nodes, routes := newClusterNodes(t, 1)
	n := nodes[0]
	open := filepath.Join(t.TempDir(), "open.secret")
	if err := os.WriteFile(open, []byte("e2e-cluster-secret-0123456789abcdef"), 0o644); err != nil {
		t.Fatal(err)
	}
	withSecret := func(args ...string) []string {
		return append([]string{"serve", "--cluster", "--node", "n1", "--addr", n.addr, "--data", n.data,
			"--nats-secret-file", n.secretFile}, args...)
	}
	tests := []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{name: "public NATS listen without TLS", args: withSecret("--nats-listen", "0.0.0.0:0"),
			want: []string{"--nats-listen", "not a loopback address", "--nats-tls-cert"}},
		{name: "all interfaces without TLS", args: withSecret("--nats-listen", ":0"),
			want: []string{"--nats-listen", "--nats-tls-ca"}},
		{name: "public cluster listen without TLS", args: withSecret("--nats-listen", n.natsAddr, "--cluster-listen", "0.0.0.0:6222", "--routes", routes),
			want: []string{"--cluster-listen", "--nats-tls-key"}},
		{name: "a cluster without the secret", args: []string{"serve", "--cluster", "--node", "n1", "--addr", n.addr, "--data", n.data,
			"--nats-listen", n.natsAddr, "--cluster-listen", n.routeAddr, "--routes", routes},
			want: []string{"--nats-secret-file", "FLOCK_NATS_SECRET"}},
		{name: "a secret file others read", args: []string{"serve", "--cluster", "--node", "n1", "--addr", n.addr, "--data", n.data,
			"--nats-listen", n.natsAddr, "--nats-secret-file", open},
			want: []string{"chmod 600"}},
		{name: "the secret twice", env: []string{"FLOCK_NATS_SECRET=e2e-cluster-secret-0123456789abcdef"},
			args: withSecret("--nats-listen", n.natsAddr), want: []string{"give one"}},
		{name: "credentials in the --nats URL", args: []string{"serve", "--nats", "nats://flock:hunter2hunter2hunter2@127.0.0.1:4222",
			"--node", "n1", "--addr", n.addr, "--data", n.data, "--nats-secret-file", n.secretFile},
			want: []string{"command line", "--nats-secret-file"}},
		{name: "external NATS in clear", args: []string{"serve", "--nats", "nats://192.0.2.1:4222",
			"--node", "n1", "--addr", n.addr, "--data", n.data, "--nats-secret-file", n.secretFile},
			want: []string{"not a loopback address", "tls://"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := refusedStart(t, tt.env, tt.args...)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Fatalf("output does not name %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "e2e-cluster-secret") || strings.Contains(out, "hunter2") {
				t.Fatalf("output quotes the secret:\n%s", out)
			}
		})
	}
}

// TestClusterTLSProcesses: three real `flock serve --cluster` processes
// with the secret and TLS on every NATS port work end to end (a run
// started on one node is read, with its entries, from the others), and
// their NATS ports refuse a client without credentials, one with a
// certificate but a wrong secret, and one with the secret but no
// certificate. Every node counts the runs (GET /stats/runs) and, once the
// runs stream is deleted, says on /health that its store is unusable.
func TestClusterTLSProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	ca := testkit.NewCA(t)
	nodes, routes := newClusterNodes(t, 3)
	for i := range nodes {
		cert, key := ca.Issue(t, nodes[i].name, "127.0.0.1")
		nodes[i].extra = []string{"--nats-tls-cert", cert, "--nats-tls-key", key, "--nats-tls-ca", ca.CertFile}
	}
	procs := make([]*proc, 3)
	for i, n := range nodes {
		procs[i] = startClusterProc(t, n, routes)
	}
	for _, p := range procs {
		waitHealthy(t, p, 60*time.Second)
	}
	marks := t.TempDir()
	id := procs[0].start("script", map[string]any{"commands": markerCommands(marks, 0, 3)})
	h := waitEnded(t, procs[1], id, 60*time.Second)
	if h.Status != "succeeded" {
		t.Fatalf("run ended %s: %s", h.Status, h.Error)
	}
	for _, p := range procs[1:] {
		checkEntries(t, p, id, 0, 3)
	}
	checkRanOnce(t, procs[2], id, 0, marks, 3)
	// Every node counts the runs (the viewer's runs list polls this),
	// without an error in its log.
	for _, p := range procs {
		var counts api.RunCounts
		if code := p.do("GET", "/stats/runs", nil, &counts); code != 200 || counts.Total != 1 || counts.Succeeded != 1 {
			t.Fatalf("GET /stats/runs on %s: %d %+v", p.base, code, counts)
		}
		if strings.Contains(p.out.String(), "level=ERROR") {
			t.Fatalf("%s logged an error:\n%s", p.base, p.out.String())
		}
	}

	url := "tls://" + nodes[0].natsAddr
	cert, key := ca.Issue(t, "intruder", "127.0.0.1")
	for _, tt := range []struct {
		name string
		opts []nats.Option
	}{
		{"no credentials", []nats.Option{nats.RootCAs(ca.CertFile)}},
		{"a certificate of the CA, a wrong secret", []nats.Option{nats.RootCAs(ca.CertFile), nats.ClientCert(cert, key),
			nats.UserInfo("flock", "not-the-cluster-secret")}},
		{"the secret, no certificate", []nats.Option{nats.RootCAs(ca.CertFile),
			nats.UserInfo("flock", "e2e-cluster-secret-0123456789abcdef")}},
	} {
		nc, err := nats.Connect(url, append(tt.opts, nats.MaxReconnects(0))...)
		if err == nil {
			nc.Close()
			t.Fatalf("%s: connected to a node's NATS port", tt.name)
		}
		t.Logf("%s: refused: %v", tt.name, err)
	}
	// The node's certificate and the secret get in: the refusals above
	// are the credentials' doing.
	nc, err := nats.Connect(url, nats.RootCAs(ca.CertFile), nats.ClientCert(cert, key),
		nats.UserInfo("flock", "e2e-cluster-secret-0123456789abcdef"), nats.MaxReconnects(0))
	if err != nil {
		t.Fatalf("flock's user: %v", err)
	}
	defer nc.Close()
	// With the secret, the runs can be deleted (which is why it must be
	// kept secret): every node's /health then says the store is unusable.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(context.Background(), "FLOCK_RUNS_0"); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		var h api.Health
		testkit.WaitFor(t, p.base+"/health to say unavailable", func() bool {
			return p.do("GET", "/health", nil, &h) == http.StatusServiceUnavailable
		})
		if h.Status != "unavailable" || !strings.Contains(h.Reason, "FLOCK_RUNS_0") {
			t.Fatalf("%s/health after the runs stream was deleted: %+v", p.base, h)
		}
	}
}
