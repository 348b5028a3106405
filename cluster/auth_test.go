package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/state"
	jsstore "github.com/flockrun/flock/state/jetstream"
	"github.com/flockrun/flock/workflows"
)

// TestNodeConfigRefusesInsecure: a node refuses to start without the
// cluster secret, and with an address that is not loopback unless it has
// TLS and the secret; each error names the flag to set.
func TestNodeConfigRefusesInsecure(t *testing.T) {
	dir := t.TempDir()
	tlsFiles := TLSFiles{Cert: "cert.pem", Key: "key.pem", CA: "ca.pem"}
	base := func(f func(*NodeConfig)) NodeConfig {
		c := NodeConfig{Name: "n1", StoreDir: dir, Listen: "127.0.0.1:0", Secret: testSecret}
		f(&c)
		return c
	}
	tests := []struct {
		name string
		cfg  NodeConfig
		err  error
		want string // in the error
	}{
		{name: "no secret", cfg: base(func(c *NodeConfig) { c.Secret = "" }), err: ErrConfig, want: "--nats-secret-file"},
		{name: "short secret", cfg: base(func(c *NodeConfig) { c.Secret = "short" }), err: ErrConfig, want: "shorter than 16 bytes"},
		{name: "all interfaces", cfg: base(func(c *NodeConfig) { c.Listen = ":4222" }), err: ErrInsecure, want: "--nats-listen"},
		{name: "public listen", cfg: base(func(c *NodeConfig) { c.Listen = "0.0.0.0:4222" }), err: ErrInsecure, want: "--nats-tls-cert"},
		{name: "public cluster listen", cfg: base(func(c *NodeConfig) { c.ClusterListen = "192.0.2.1:6222" }), err: ErrInsecure, want: "--cluster-listen"},
		{name: "public route", cfg: base(func(c *NodeConfig) {
			c.ClusterListen, c.Routes = "127.0.0.1:6222", []string{"nats://192.0.2.2:6222"}
		}), err: ErrInsecure, want: "--routes"},
		{name: "credentials in a route", cfg: base(func(c *NodeConfig) {
			c.ClusterListen, c.Routes = "127.0.0.1:6222", []string{"nats://flock:" + testSecret + "@127.0.0.1:6223"}
		}), err: ErrConfig, want: "command line"},
		{name: "half of TLS", cfg: base(func(c *NodeConfig) { c.TLS = TLSFiles{Cert: "cert.pem"} }), err: ErrConfig, want: "--nats-tls-ca"},
		{name: "loopback", cfg: base(func(c *NodeConfig) {
			c.ClusterListen, c.Routes = "127.0.0.1:6222", []string{"nats://127.0.0.1:6223", "nats://localhost:6224"}
		})},
		{name: "public with TLS and secret: the TLS files are read", cfg: base(func(c *NodeConfig) {
			c.Listen, c.ClusterListen, c.TLS = "0.0.0.0:4222", "0.0.0.0:6222", tlsFiles
		}), err: ErrConfig, want: "cert.pem"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := tt.cfg.options()
			if tt.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				if opts.Cluster.Username != UserName || opts.Cluster.Password != testSecret || len(opts.Users) != 1 {
					t.Fatalf("routes or clients not authenticated: %+v", opts.Cluster)
				}
				for _, r := range opts.Routes {
					if p, _ := r.User.Password(); p != testSecret {
						t.Fatalf("route %s dials without the secret", r.Redacted())
					}
				}
				return
			}
			if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %v naming %q", err, tt.err, tt.want)
			}
			if strings.Contains(err.Error(), testSecret) {
				t.Fatalf("the error quotes the secret: %v", err)
			}
		})
	}
	// With real TLS files, a public node's options build.
	ca := testkit.NewCA(t)
	cert, key := ca.Issue(t, "n1", "127.0.0.1")
	opts, err := base(func(c *NodeConfig) {
		c.Listen, c.ClusterListen, c.TLS = "0.0.0.0:4222", "0.0.0.0:6222", TLSFiles{Cert: cert, Key: key, CA: ca.CertFile}
	}).options()
	if err != nil {
		t.Fatal(err)
	}
	if !opts.TLSVerify || opts.TLSConfig == nil || opts.Cluster.TLSConfig == nil || opts.Cluster.TLSConfig.RootCAs == nil {
		t.Fatalf("client or route TLS not required and verified: %+v", opts)
	}
}

// TestJoinExternalRefusesInsecure: --nats refuses credentials in its
// URL, a host that is not loopback without TLS, and a missing secret,
// before connecting.
func TestJoinExternalRefusesInsecure(t *testing.T) {
	tests := []struct {
		name, url, secret string
		tls               TLSFiles
		err               error
		want              string
	}{
		{name: "credentials in the URL", url: "nats://flock:" + testSecret + "@127.0.0.1:4222", secret: testSecret, err: ErrConfig, want: "--nats-secret-file"},
		{name: "public without TLS", url: "nats://192.0.2.1:4222", secret: testSecret, err: ErrInsecure, want: "tls://"},
		{name: "no secret", url: "tls://192.0.2.1:4222", err: ErrConfig, want: "FLOCK_NATS_SECRET"},
		{name: "not a NATS URL", url: "http://127.0.0.1:4222", secret: testSecret, err: ErrConfig, want: "nats://host:port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Join(context.Background(), Config{Name: "n1", NATSURL: tt.url, Secret: tt.secret, TLS: tt.tls}, nil)
			if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %v naming %q", err, tt.err, tt.want)
			}
			if strings.Contains(err.Error(), testSecret) {
				t.Fatalf("the error quotes the secret: %v", err)
			}
		})
	}
}

// runNATS starts a NATS server standing for an external cluster, shut
// down at cleanup.
func runNATS(t *testing.T, opts *server.Options) *server.Server {
	t.Helper()
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	return srv
}

// TestJoinExternalRefusesOpenServer: flock will not keep its runs on a
// NATS server that lets anyone in.
func TestJoinExternalRefusesOpenServer(t *testing.T) {
	srv := runNATS(t, &server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true})
	_, err := Join(context.Background(), Config{Name: "n1", NATSURL: srv.ClientURL(), Secret: testSecret}, nil)
	if !errors.Is(err, ErrInsecure) || !strings.Contains(err.Error(), "does not require authentication") {
		t.Fatalf("err = %v, want ErrInsecure", err)
	}
}

// drivenRun starts a run on node 0 whose first command sleeps, and waits
// until a node drives it.
func drivenRun(t *testing.T, c *testCluster) string {
	t.Helper()
	settings, _ := json.Marshal(map[string]any{"commands": []string{"sleep 30", "true"}})
	h, err := c.nodes[0].a.Executor.StartRun(context.Background(), workflows.StartRequest{Workflow: "script", Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the run driven", func() bool { return c.driver(h.ID) >= 0 })
	return h.ID
}

// rawSession speaks the NATS protocol to addr as an attacker would: it
// reads the server's INFO, sends lines, and returns all the server said
// until it closed the connection.
func rawSession(t *testing.T, addr string, lines ...string) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A bound on a connection the server should close at once, not a
	// synchronisation.
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	r := bufio.NewReader(conn)
	info, err := r.ReadString('\n')
	if err == io.EOF {
		return info // closed at once (a TLS port after its handshake timeout)
	}
	if err != nil || !strings.HasPrefix(info, "INFO ") {
		t.Fatalf("no INFO from %s: %q, %v", addr, info, err)
	}
	go func() { // owned: ends when conn is closed
		for _, l := range lines {
			if _, err := io.WriteString(conn, l+"\r\n"); err != nil {
				return
			}
		}
	}()
	rest, err := io.ReadAll(r)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("%s kept the connection open: %q", addr, rest)
	}
	return info + string(rest)
}

// connectLine is a client's (or a route's) CONNECT with user and pass.
func connectLine(user, pass string, route bool) string {
	m := map[string]any{"verbose": false, "pedantic": false, "protocol": 1, "headers": true}
	if user != "" {
		m["user"], m["pass"] = user, pass
	}
	if route {
		m["name"], m["cluster"] = "rogue", DefaultClusterName
	}
	b, _ := json.Marshal(m)
	return "CONNECT " + string(b)
}

// attacks is what an attacker sends once connected: read every flock
// subject, cancel the run, delete the runs stream and forge a run.
func attacks(id string) []string {
	cancel := `{"action":"cancel"}`
	forged := `{"id":"forged","workflow":"script"}`
	return []string{
		"SUB flock.> 1",
		"SUB _INBOX.> 2",
		fmt.Sprintf("PUB %s%s _INBOX.a %d", controlPrefix, token(id), len(cancel)), cancel,
		"PUB $JS.API.STREAM.DELETE.FLOCK_RUNS_0 _INBOX.b 0", "",
		"PUB $JS.API.STREAM.PURGE.FLOCK_CLAIMS _INBOX.c 0", "",
		fmt.Sprintf("PUB flock.run.0.forged.spec _INBOX.d %d", len(forged)), forged,
		fmt.Sprintf("PUB %sforged _INBOX.e 6", claimPrefix), "forged",
		"PING",
	}
}

// checkRefused fails unless the server answered an authorization
// violation and nothing else: no message, no reply, no PONG.
func checkRefused(t *testing.T, what, out string) {
	t.Helper()
	if !strings.Contains(out, "Authorization Violation") {
		t.Fatalf("%s: not refused: %q", what, out)
	}
	for _, l := range strings.Split(out, "\r\n") {
		if strings.HasPrefix(l, "MSG ") || strings.HasPrefix(l, "HMSG ") || l == "PONG" || l == "+OK" {
			t.Fatalf("%s: the server answered %q: %q", what, l, out)
		}
	}
}

// checkUnharmed fails unless run id is still running and driven, every
// stream is there, and nothing forged reached the store or the claims.
func checkUnharmed(t *testing.T, c *testCluster, id string) {
	t.Helper()
	ctx := context.Background()
	n := c.nodes[0]
	h, err := n.store.Run(ctx, id)
	if err != nil || h.Status != state.StatusRunning || c.driver(id) < 0 {
		t.Fatalf("run %s after the attacks: %s, driven by %d, %v", id, h.Status, c.driver(id), err)
	}
	for _, name := range raftGroups(n.m.Replicas) {
		if _, err := n.m.JS.Stream(ctx, name); err != nil {
			t.Fatalf("stream %s after the attacks: %v", name, err)
		}
	}
	if _, err := n.store.Run(ctx, "forged"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("forged run: %v", err)
	}
	st, err := n.m.JS.Stream(ctx, ClaimStream)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetLastMsgForSubject(ctx, claimPrefix+"forged"); err == nil {
		t.Fatal("a forged claim was queued")
	}
}

// TestClusterRefusesUnauthenticated: on every node of a cluster, a NATS
// client without the secret, or with a wrong one, is refused on the
// client port and on the route port: it reads nothing of flock.>, cannot
// cancel a run through flock.ctl.<id>, cannot delete or purge a stream
// through the JetStream API and cannot queue a forged run; a rogue NATS
// server cannot join the cluster by a route.
func TestClusterRefusesUnauthenticated(t *testing.T) {
	c := startCluster(t, clusterOpts{})
	id := drivenRun(t, c)
	for _, n := range c.nodes {
		u, err := url.Parse(n.m.Node.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		client := u.Host
		route := n.m.Node.srv.ClusterAddr().String()

		// nats.go, as a 40-line attacker would use it.
		for _, tt := range []struct {
			name string
			opts []nats.Option
		}{
			{"no credentials", nil},
			{"wrong secret", []nats.Option{nats.UserInfo(UserName, "not-the-cluster-secret")}},
			{"another user with the secret", []nats.Option{nats.UserInfo("admin", testSecret)}},
			{"a token", []nats.Option{nats.Token(testSecret)}},
		} {
			nc, err := nats.Connect(n.m.Node.ClientURL(), append(tt.opts, nats.MaxReconnects(0))...)
			if err == nil {
				nc.Close()
				t.Fatalf("%s: %s connected to the client port", n.name, tt.name)
			}
			if !errors.Is(err, nats.ErrAuthorization) {
				t.Fatalf("%s: %s: %v, want an authorization violation", n.name, tt.name, err)
			}
		}
		// The protocol by hand: no CONNECT, an empty one, a wrong one;
		// each followed by every attack.
		for _, tt := range []struct {
			name, addr string
			connect    []string
		}{
			{"client port, no CONNECT", client, nil},
			{"client port, no credentials", client, []string{connectLine("", "", false)}},
			{"client port, wrong secret", client, []string{connectLine(UserName, "not-the-cluster-secret", false)}},
			{"route port, no credentials", route, []string{connectLine("", "", true)}},
			{"route port, wrong secret", route, []string{connectLine(UserName, "not-the-cluster-secret", true)}},
		} {
			checkRefused(t, n.name+": "+tt.name, rawSession(t, tt.addr, append(tt.connect, attacks(id)...)...))
		}
	}
	// Controls: with the secret, the same tools get in (so the refusals
	// above are the secret's doing); an unknown operation ends the raw
	// session.
	n := c.nodes[0]
	nc, err := nats.Connect(n.m.Node.ClientURL(), nats.UserInfo(UserName, testSecret), nats.MaxReconnects(0))
	if err != nil {
		t.Fatalf("flock's user: %v", err)
	}
	nc.Close()
	u, _ := url.Parse(n.m.Node.ClientURL())
	if out := rawSession(t, u.Host, connectLine(UserName, testSecret, false), "PING", "BYE"); !strings.Contains(out, "PONG") {
		t.Fatalf("flock's user by hand: %q", out)
	}
	// A NATS server of the attacker's, routed to the cluster.
	for _, creds := range []*url.Userinfo{nil, url.UserPassword(UserName, "not-the-cluster-secret")} {
		rogueRoute(t, c, c.nodes[1].m.Node.srv.ClusterAddr().String(), creds, TLSFiles{}, "Authorization Violation")
	}
	checkUnharmed(t, c, id)
}

// rogueRoute starts a NATS server that dials addr as a route of cluster
// "flock" with creds (and tlsFiles' certificate, if any), waits until it
// logs refusal (the error it got), and checks that no node of c routes
// to it.
func rogueRoute(t *testing.T, c *testCluster, addr string, creds *url.Userinfo, tlsFiles TLSFiles, refusal string) {
	t.Helper()
	ru := &url.URL{Scheme: "nats", Host: addr, User: creds}
	opts := &server.Options{ServerName: "rogue", Host: "127.0.0.1", Port: server.RANDOM_PORT, NoSigs: true,
		Cluster: server.ClusterOpts{Name: DefaultClusterName, Host: "127.0.0.1", Port: server.RANDOM_PORT},
		Routes:  []*url.URL{ru}}
	if !tlsFiles.IsZero() {
		tc, err := tlsFiles.serverConfig()
		if err != nil {
			t.Fatal(err)
		}
		opts.Cluster.TLSConfig = tc
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	log := &logLines{}
	srv.SetLogger(log, false, false)
	go srv.Start()
	defer srv.Shutdown()
	testkit.WaitWithin(t, 20*time.Second, "the rogue server refused", func() bool { return log.has(refusal) })
	// No node of the cluster ever took it for a route: a node registers
	// a route only once its CONNECT passed.
	for _, n := range c.nodes {
		rz, err := n.m.Node.srv.Routez(&server.RoutezOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rz.Routes {
			if r.RemoteName == "rogue" || r.RemoteID == srv.ID() {
				t.Fatalf("%s routes to the rogue server (creds %v)", n.name, creds != nil)
			}
		}
	}
}

// logLines keeps what a NATS server logs.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, v...))
}

func (l *logLines) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

func (l *logLines) Noticef(format string, v ...any) { l.add(format, v...) }
func (l *logLines) Warnf(format string, v ...any)   { l.add(format, v...) }
func (l *logLines) Fatalf(format string, v ...any)  { l.add(format, v...) }
func (l *logLines) Errorf(format string, v ...any)  { l.add(format, v...) }
func (l *logLines) Debugf(format string, v ...any)  { l.add(format, v...) }
func (l *logLines) Tracef(format string, v ...any)  { l.add(format, v...) }

// testPKI returns TLS files for n nodes on loopback, signed by one test
// CA, and the CA.
func testPKI(t testing.TB, n int) ([]TLSFiles, *testkit.CA) {
	ca := testkit.NewCA(t)
	files := make([]TLSFiles, n)
	for i := range files {
		cert, key := ca.Issue(t, fmt.Sprintf("n%d", i+1), "127.0.0.1", "localhost")
		files[i] = TLSFiles{Cert: cert, Key: key, CA: ca.CertFile}
	}
	return files, ca
}

// TestClusterTLS: a 3-node cluster whose NATS ports speak TLS only,
// verified both ways, works end to end (a run started on one node is read
// from another), and refuses a client without TLS, a client with the
// secret but no certificate, a raw connection, and a route whose
// certificate another CA signed even with the right secret.
func TestClusterTLS(t *testing.T) {
	files, ca := testPKI(t, 3)
	c := startCluster(t, clusterOpts{tls: files})
	ctx := context.Background()
	marks := t.TempDir()
	id := startScript(t, c.nodes[0], marks, 0, 3)
	waitEnded(t, c.nodes[1].store, []string{id}, 30*time.Second)
	checkScriptRuns(t, c.nodes[2].store, marks, []string{id}, 3)
	entries, err := c.nodes[2].store.Entries(ctx, id, 0, 100)
	if err != nil || len(entries) == 0 {
		t.Fatalf("entries from another node: %d, %v", len(entries), err)
	}

	running := drivenRun(t, c)
	n := c.nodes[0]
	strange, _ := testPKI(t, 1) // a certificate of another CA
	for _, tt := range []struct {
		name string
		opts []nats.Option
	}{
		{"TLS without a client certificate, the secret", []nats.Option{nats.RootCAs(ca.CertFile), nats.UserInfo(UserName, testSecret)}},
		{"TLS not verifying the server, without a client certificate, the secret", []nats.Option{
			nats.Secure(&tls.Config{InsecureSkipVerify: true}), nats.UserInfo(UserName, testSecret)}},
		{"TLS with a certificate of another CA, the secret", []nats.Option{
			nats.Secure(&tls.Config{InsecureSkipVerify: true}), nats.ClientCert(strange[0].Cert, strange[0].Key),
			nats.UserInfo(UserName, testSecret)}},
	} {
		nc, err := nats.Connect(n.m.Node.ClientURL(), append(tt.opts, nats.MaxReconnects(0))...)
		if err == nil {
			nc.Close()
			t.Fatalf("%s: connected", tt.name)
		}
		t.Logf("%s: refused: %v", tt.name, err)
	}
	// With a node's certificate but no secret: the TLS handshake passes,
	// the user does not.
	nc, err := nats.Connect(n.m.Node.ClientURL(), nats.RootCAs(ca.CertFile), nats.ClientCert(files[1].Cert, files[1].Key),
		nats.UserInfo(UserName, "not-the-cluster-secret"), nats.MaxReconnects(0))
	if err == nil {
		nc.Close()
		t.Fatal("a wrong secret connected over TLS")
	}
	if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("wrong secret over TLS: %v, want an authorization violation", err)
	}
	// The right certificate and secret: a control that the port works.
	nc, err = nats.Connect(n.m.Node.ClientURL(), nats.RootCAs(ca.CertFile), nats.ClientCert(files[1].Cert, files[1].Key),
		nats.UserInfo(UserName, testSecret), nats.MaxReconnects(0))
	if err != nil {
		t.Fatalf("flock's user over TLS: %v", err)
	}
	nc.Close()
	// Plain text on TLS ports.
	u, _ := url.Parse(n.m.Node.ClientURL())
	for _, addr := range []string{u.Host, n.m.Node.srv.ClusterAddr().String()} {
		out := rawSession(t, addr, append([]string{connectLine(UserName, testSecret, addr != u.Host)}, attacks(running)...)...)
		for _, l := range strings.Split(out, "\r\n") {
			if strings.HasPrefix(l, "MSG ") || l == "PONG" || l == "+OK" {
				t.Fatalf("%s answered plain text: %q", addr, out)
			}
		}
	}
	// A rogue route with the secret, but a certificate of its own CA.
	rogue := url.UserPassword(UserName, testSecret)
	rogueRoute(t, c, n.m.Node.srv.ClusterAddr().String(), rogue, strange[0], "TLS route handshake error")
	checkUnharmed(t, c, running)
}

// readmeNATSConfig returns the NATS configuration the README gives for an
// external cluster.
func readmeNATSConfig(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const start = "```\njetstream { sync_interval: always }"
	i := strings.Index(string(b), start)
	if i < 0 {
		t.Fatal("README: no NATS configuration for an external cluster")
	}
	conf := string(b[i+4:])
	return conf[:strings.Index(conf, "```")]
}

// TestJoinExternalREADMEConfig: a node joins an external NATS server
// configured as the README says (an account of flock's own), with the
// secret, in clear on loopback and over TLS with a client certificate;
// the store and dispatch work there, and a wrong secret is refused.
func TestJoinExternalREADMEConfig(t *testing.T) {
	t.Setenv("FLOCK_NATS_SECRET", testSecret)
	files, _ := testPKI(t, 2)
	for _, tlsOn := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", tlsOn), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "nats.conf")
			if err := os.WriteFile(path, []byte(readmeNATSConfig(t)+"\nlisten: 127.0.0.1:-1\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			opts, err := server.ProcessConfigFile(path)
			if err != nil {
				t.Fatal(err)
			}
			opts.StoreDir, opts.NoLog, opts.NoSigs = t.TempDir(), true, true
			var client TLSFiles
			if tlsOn {
				tc, err := files[0].serverConfig()
				if err != nil {
					t.Fatal(err)
				}
				opts.TLS, opts.TLSVerify, opts.TLSConfig = true, true, tc
				client = files[1]
			}
			srv := runNATS(t, opts)
			open := func(ctx context.Context, js jetstream.JetStream, so StoreOptions) (state.Store, error) {
				return jsstore.Open(ctx, js, jsstore.Options{Replicas: so.Replicas, BindOnly: so.BindOnly, BindLater: so.BindLater})
			}
			cfg := Config{Name: "n1", NATSURL: srv.ClientURL(), Secret: "not-the-cluster-secret", TLS: client,
				Replicas: 1, ReadyTimeout: 10 * time.Second}
			if _, err := Join(context.Background(), cfg, open); !errors.Is(err, nats.ErrAuthorization) {
				t.Fatalf("a wrong secret: %v, want an authorization violation", err)
			}
			cfg.Secret = testSecret
			m, err := Join(context.Background(), cfg, open)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			defer m.Store.Close()
			if err := m.Dispatcher.Enqueue(context.Background(), "r1", time.Time{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
