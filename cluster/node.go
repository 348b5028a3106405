package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/flockrun/flock/configs"
)

// DefaultClusterName is NodeConfig.ClusterName's default.
const DefaultClusterName = "flock"

// NodeConfig configures an embedded NATS server.
type NodeConfig struct {
	// Name names the node in the cluster; it must be unique in it
	// (required).
	Name string
	// ClusterName names the cluster; every node of one cluster uses the
	// same (default DefaultClusterName).
	ClusterName string
	// Listen is the host:port NATS clients (the nats CLI, other tools)
	// connect to (default 127.0.0.1:4222; port 0 picks a free one). The
	// node's own flock process connects in process (Connect).
	Listen string
	// ClusterListen is the host:port the other nodes' routes connect to.
	// Empty: a single node, not clustered (JetStream streams R1).
	ClusterListen string
	// Routes are the other nodes' cluster addresses, nats://host:port
	// (their ClusterListen). A node may list itself; it is ignored.
	Routes []string
	// StoreDir is where JetStream keeps its files (required).
	StoreDir string
	// Secret is the password of the node's only NATS user (UserName) and
	// of its routes: every node of a cluster has the same one, at least
	// MinSecretLen bytes (required). A client or a route without it is
	// refused before it can subscribe or publish anything.
	Secret string
	// TLS, unless zero, makes the client and cluster ports TLS only,
	// verified both ways against its CA (TLSFiles). Required, with
	// Secret, when Listen, ClusterListen or a route is not a loopback
	// address.
	TLS TLSFiles
}

// Node is an embedded NATS server with JetStream. Its JetStream fsyncs
// every write before acknowledging it (sync_interval: always; Jepsen's
// NATS 2.12.1 analysis found acknowledged writes lost under the default
// 2-minute interval).
type Node struct {
	cfg  NodeConfig
	opts *server.Options
	srv  *server.Server
	// gathering: the server runs without JetStream until routes to its
	// peers are up (a node of a cluster that has never started; see
	// WaitJetStream), then starts again with it.
	gathering bool
	// peers counts the other nodes named in the routes.
	peers int
}

// StartNode starts an embedded NATS server and waits until it accepts
// connections. A node of a new cluster (no JetStream state yet) starts
// without JetStream; WaitJetStream starts it once the other nodes are
// reachable. Use the node (Connect) only after WaitJetStream.
func StartNode(cfg NodeConfig) (*Node, error) {
	opts, err := cfg.options()
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, opts: opts}
	if len(opts.Routes) > 0 {
		n.peers = peersOf(opts)
		if _, err := os.Stat(filepath.Join(opts.StoreDir, server.JetStreamStoreDir)); os.IsNotExist(err) {
			n.gathering = true
		}
	}
	first := opts
	if n.gathering {
		first = opts.Clone()
		first.JetStream = false
	}
	if n.srv, err = startServer(cfg.Name, first); err != nil {
		return nil, err
	}
	return n, nil
}

// startServer starts a NATS server with opts and waits until it accepts
// connections.
func startServer(name string, opts *server.Options) (*server.Server, error) {
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNode, err)
	}
	go srv.Start() // owned by srv: Shutdown stops it
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("%w: node %s not ready after 30 s", ErrNode, name)
	}
	return srv, nil
}

// peersOf counts the routes of opts that are not the node's own cluster
// address.
func peersOf(opts *server.Options) int {
	n := 0
	for _, r := range opts.Routes {
		own := r.Port() == strconv.Itoa(opts.Cluster.Port) &&
			(r.Hostname() == opts.Cluster.Host || configs.IsLoopback(r.Hostname()) && configs.IsLoopback(opts.Cluster.Host) ||
				opts.Cluster.Host == "0.0.0.0" || opts.Cluster.Host == "::")
		if !own {
			n++
		}
	}
	return n
}

// options turns cfg into the server's options, checking every field.
func (cfg NodeConfig) options() (*server.Options, error) {
	if cfg.Name == "" {
		return nil, fmt.Errorf("%w: node name: required", ErrConfig)
	}
	if strings.ContainsAny(cfg.Name, " \t\r\n.*>") {
		return nil, fmt.Errorf("%w: node name %q: no spaces, dots, * or >", ErrConfig, cfg.Name)
	}
	if cfg.StoreDir == "" {
		return nil, fmt.Errorf("%w: JetStream store directory: required", ErrConfig)
	}
	if cfg.ClusterName == "" {
		cfg.ClusterName = DefaultClusterName
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:4222"
	}
	host, port, err := splitHostPort("nats listen address", cfg.Listen)
	if err != nil {
		return nil, err
	}
	if err := checkSecret(cfg.Secret); err != nil {
		return nil, err
	}
	if !configs.IsLoopback(host) && cfg.TLS.IsZero() {
		return nil, insecure("NATS listen address (--nats-listen)", cfg.Listen)
	}
	opts := &server.Options{
		ServerName: cfg.Name,
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		// As `sync_interval: always` in a config file: every write is
		// fsynced before it is acknowledged (the interval keeps its
		// default; it only paces the background flush).
		SyncAlways: true,
		NoSigs:     true,
		NoLog:      true,
		// flock's user is the only one: a connection without the secret
		// (or, with TLS, without a certificate of the CA) gets nothing.
		Users: []*server.User{{Username: UserName, Password: cfg.Secret, Permissions: natsPermissions()}},
	}
	if port == 0 {
		opts.Port = server.RANDOM_PORT
	}
	var tc *tls.Config
	if !cfg.TLS.IsZero() {
		if tc, err = cfg.TLS.serverConfig(); err != nil {
			return nil, err
		}
		opts.TLS, opts.TLSVerify, opts.TLSConfig = true, true, tc
	}
	if cfg.ClusterListen == "" {
		if len(cfg.Routes) > 0 {
			return nil, fmt.Errorf("%w: routes given but no cluster listen address for the other nodes to connect to", ErrConfig)
		}
		return opts, nil
	}
	chost, cport, err := splitHostPort("cluster listen address", cfg.ClusterListen)
	if err != nil {
		return nil, err
	}
	if cport == 0 {
		return nil, fmt.Errorf("%w: cluster listen address %q: needs a fixed port, which the other nodes' routes name", ErrConfig, cfg.ClusterListen)
	}
	if !configs.IsLoopback(chost) && cfg.TLS.IsZero() {
		return nil, insecure("cluster listen address (--cluster-listen)", cfg.ClusterListen)
	}
	// Routes authenticate with flock's user and the secret, both ways: a
	// server that dials a node without them is refused.
	opts.Cluster = server.ClusterOpts{Name: cfg.ClusterName, Host: chost, Port: cport,
		Username: UserName, Password: cfg.Secret}
	if tc != nil {
		opts.Cluster.TLSConfig = tc.Clone()
	}
	for _, r := range cfg.Routes {
		u, err := url.Parse(strings.TrimSpace(r))
		if err != nil || u.Scheme != "nats" || u.Host == "" || u.Port() == "" {
			return nil, fmt.Errorf("%w: route %q: want nats://host:port", ErrConfig, redact(r))
		}
		if u.User != nil {
			return nil, fmt.Errorf("%w: route %s: holds credentials, which every local user sees on the command line; routes authenticate with the cluster secret", ErrConfig, u.Redacted())
		}
		if !configs.IsLoopback(u.Hostname()) && cfg.TLS.IsZero() {
			return nil, insecure("route (--routes)", u.String())
		}
		u.User = url.UserPassword(UserName, cfg.Secret)
		opts.Routes = append(opts.Routes, u)
	}
	return opts, nil
}

func splitHostPort(what, addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %s %q: want host:port", ErrConfig, what, addr)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("%w: %s %q: bad port", ErrConfig, what, addr)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	return host, port, nil
}

// Name returns the node's name.
func (n *Node) Name() string { return n.cfg.Name }

// ClientURL returns the URL clients of this node connect to.
func (n *Node) ClientURL() string { return n.srv.ClientURL() }

// Connect opens a connection to the node from within its process (no
// socket, no TLS), authenticated as flock's user. name names the
// connection; opts add to the defaults.
func (n *Node) Connect(name string, opts ...nats.Option) (*nats.Conn, error) {
	all := append([]nats.Option{nats.InProcessServer(n.srv), nats.UserInfo(UserName, n.cfg.Secret), nats.Name(name)}, opts...)
	// The URL only names the server: the connection is a pipe into it,
	// which needs no TLS (a tls:// URL would ask for it).
	nc, err := nats.Connect("nats://in-process", all...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS node %s: %w", n.cfg.Name, err)
	}
	return nc, nil
}

// Clustered reports whether the node has routes to other nodes configured.
func (n *Node) Clustered() bool { return n.cfg.ClusterListen != "" }

// peerGrace is how long a node of a new cluster that reaches a majority of
// its peers waits for the others before it starts JetStream.
const peerGrace = time.Second

// WaitJetStream waits until the node's JetStream is current with the
// cluster's meta leader (a majority of the nodes is up and has elected
// one), or ctx ends.
//
// A node of a new cluster first waits, without JetStream, until it has had
// routes to all its peers (or to a majority, and peerGrace has passed),
// then starts its server again with JetStream. NATS elects the first meta
// leader of a cluster at once (a campaign within 100-800 ms) only among
// the nodes whose JetStream runs by then; a node whose vote requests found
// no one waits out the election timeout (4-9 s, not configurable). The
// nodes of a new cluster, each waiting for the others, start JetStream
// within moments of each other, so that the first campaign finds them.
func (n *Node) WaitJetStream(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	if n.gathering {
		majority := (n.peers + 1) / 2 // other nodes that make a majority with this one
		seen := map[string]bool{}
		var grace time.Time // when it stops waiting for the rest
		for len(seen) < n.peers && (grace.IsZero() || time.Now().Before(grace)) {
			if rz, err := n.srv.Routez(nil); err == nil {
				for _, r := range rz.Routes {
					seen[r.RemoteName] = true
				}
			}
			if len(seen) >= majority && grace.IsZero() {
				grace = time.Now().Add(peerGrace)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w: node %s reaches %d of its %d peers (is a majority of the nodes up?)", ErrNotReady, n.cfg.Name, len(seen), n.peers)
			case <-t.C:
			}
		}
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
		srv, err := startServer(n.cfg.Name, n.opts)
		if err != nil {
			return err
		}
		n.srv, n.gathering = srv, false
	}
	for !n.srv.JetStreamIsCurrent() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: node %s has no JetStream meta leader (is a majority of the nodes up?)", ErrNotReady, n.cfg.Name)
		case <-t.C:
		}
	}
	return nil
}

// restoreWait bounds how long a restarted node looks for the claim
// stream among the streams its own server restores (Node.holds).
const restoreWait = 3 * time.Second

// holds reports whether the node's own JetStream holds stream, with
// replicas, and its consumer (as their leader or a replica), looking for
// at most within while the server restores its streams from its store
// directory. It reads the server's memory, so it answers at once after a
// restart, while the stream's group has no leader yet (its info is then
// not answered). A node that had no JetStream state (a new cluster's)
// holds nothing.
func (n *Node) holds(ctx context.Context, stream, consumer string, replicas int, within time.Duration) bool {
	if n.gathering {
		return false
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	until := time.Now().Add(within)
	for !n.holdsNow(stream, consumer, replicas) {
		if time.Now().After(until) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// holdsNow is one look of holds.
func (n *Node) holdsNow(stream, consumer string, replicas int) bool {
	d, err := n.srv.JszAccount(&server.JSzOptions{Account: n.srv.GlobalAccount().GetName(),
		Streams: true, Consumer: true, Config: true})
	if err != nil {
		return false
	}
	for _, st := range d.Streams {
		if st.Name != stream || st.Config == nil || st.Config.Replicas != replicas {
			continue
		}
		for _, c := range st.Consumer {
			if c != nil && c.Name == consumer {
				return true
			}
		}
	}
	return false
}

// Shutdown stops the server and waits for it. It is idempotent.
func (n *Node) Shutdown() {
	n.srv.Shutdown()
	n.srv.WaitForShutdown()
}
