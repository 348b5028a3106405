package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/flockrun/flock/cluster"
	"github.com/flockrun/flock/state"
	jsstore "github.com/flockrun/flock/state/jetstream"
)

// clusterFlags are serve's cluster flags (see the README, "Running a
// cluster").
type clusterFlags struct {
	on            bool
	nats          string
	node          string
	natsListen    string
	clusterListen string
	routes        string
	jetstreamDir  string
	replicas      int
	ackWait       time.Duration
	secretFile    string
	user          string
	tls           cluster.TLSFiles
}

func (c *clusterFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&c.on, "cluster", false, "run as a cluster node: embed a NATS server with JetStream and keep runs in it instead of flock.db")
	fs.StringVar(&c.nats, "nats", "", "run as a cluster node on an external NATS cluster at this URL (comma-separated URLs) instead of embedding one")
	fs.StringVar(&c.node, "node", "", "this node's name, unique in the cluster (default: the host name)")
	fs.StringVar(&c.natsListen, "nats-listen", "127.0.0.1:4222", "with --cluster: the embedded NATS server's client address")
	fs.StringVar(&c.clusterListen, "cluster-listen", "", "with --cluster: the address the other nodes' routes connect to (host:port); empty: a single node")
	fs.StringVar(&c.routes, "routes", "", "with --cluster: the nodes' cluster addresses, comma-separated nats://host:port (this node's may be listed too)")
	fs.StringVar(&c.jetstreamDir, "jetstream-dir", "", "with --cluster: JetStream's store directory (default DATA/jetstream)")
	fs.IntVar(&c.replicas, "replicas", 0, "replicas of every stream (default 3 in a cluster or with --nats, 1 on a single embedded node)")
	fs.DurationVar(&c.ackWait, "ack-wait", cluster.DefaultAckWait, "how long a silent node keeps its runs before another node takes them over")
	fs.StringVar(&c.secretFile, "nats-secret-file", "", "file holding the cluster secret (mode 0600), the password of flock's NATS user and of the routes; required for a cluster (or env FLOCK_NATS_SECRET)")
	fs.StringVar(&c.user, "nats-user", cluster.UserName, "with --nats: flock's user on the external NATS cluster")
	fs.StringVar(&c.tls.Cert, "nats-tls-cert", "", "this node's TLS certificate (PEM): served on the NATS ports with --cluster, the client certificate with --nats")
	fs.StringVar(&c.tls.Key, "nats-tls-key", "", "the private key of --nats-tls-cert (PEM)")
	fs.StringVar(&c.tls.CA, "nats-tls-ca", "", "the CA certificate (PEM) that signed the nodes' certificates (--cluster) or the NATS servers' (--nats)")
}

// enabled reports whether serve runs as a cluster node.
func (c *clusterFlags) enabled() bool { return c != nil && (c.on || c.nats != "") }

// config turns the flags into a cluster.Config for the data directory.
func (c *clusterFlags) config(dataDir string, log *slog.Logger) (cluster.Config, error) {
	if c.on && c.nats != "" {
		return cluster.Config{}, fmt.Errorf("%w: --cluster embeds a NATS server and --nats uses an external one: give one of them", errUsage)
	}
	name := c.node
	if name == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			return cluster.Config{}, fmt.Errorf("%w: --node: required (no host name to default to)", errUsage)
		}
		name = strings.NewReplacer(".", "-", " ", "-").Replace(h)
	}
	dir := c.jetstreamDir
	if dir == "" {
		dir = filepath.Join(dataDir, "jetstream")
	}
	var routes []string
	for _, r := range strings.Split(c.routes, ",") {
		if r = strings.TrimSpace(r); r != "" {
			routes = append(routes, r)
		}
	}
	secret, err := c.secret()
	if err != nil {
		return cluster.Config{}, err
	}
	return cluster.Config{
		Name:     name,
		NATSURL:  c.nats,
		Secret:   secret,
		User:     c.user,
		TLS:      c.tls,
		Replicas: c.replicas,
		AckWait:  c.ackWait,
		Logger:   log,
		Node: cluster.NodeConfig{Name: name, Listen: c.natsListen, ClusterListen: c.clusterListen,
			Routes: routes, StoreDir: dir},
	}, nil
}

// secretFiles lists the files of the cluster's secrets: the secret file
// and this node's TLS key.
func (c *clusterFlags) secretFiles() []string {
	return []string{c.secretFile, c.tls.Key}
}

// secret returns the cluster secret: from --nats-secret-file, or from
// FLOCK_NATS_SECRET ("" if neither is given). It is never taken from the
// command line, where every local user sees it.
func (c *clusterFlags) secret() (string, error) {
	env := os.Getenv("FLOCK_NATS_SECRET")
	if c.secretFile == "" {
		return env, nil
	}
	if env != "" {
		return "", fmt.Errorf("%w: both --nats-secret-file and FLOCK_NATS_SECRET are set: give one", errUsage)
	}
	return readSecretFile("--nats-secret-file", c.secretFile)
}

// readSecretFile reads a secret from path, which only its owner may read
// or write; surrounding white space is dropped. flag names the setting in
// errors, which never quote the secret.
func readSecretFile(flag, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", errUsage, flag, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", errUsage, flag, err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%w: %s %s: not a regular file", errUsage, flag, path)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("%w: %s %s: other users may read or change it (mode %04o): chmod 600 %s", errUsage, flag, path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return "", fmt.Errorf("%w: %s %s: %w", errUsage, flag, path, err)
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" {
		return "", fmt.Errorf("%w: %s %s: empty", errUsage, flag, path)
	}
	return secret, nil
}

// clusterWriteTimeout bounds a commit of a cluster node. A write sent to
// a stream leader that just died is never answered; the run is then
// interrupted after this long and its claim retried, instead of waiting
// out the store's 10 s default while the cluster elects a new leader.
const clusterWriteTimeout = 3 * time.Second

// openClusterStore opens the shared run store on JetStream.
func openClusterStore(ctx context.Context, js jetstream.JetStream, o cluster.StoreOptions) (state.Store, error) {
	return jsstore.Open(ctx, js, jsstore.Options{Replicas: o.Replicas, BindOnly: o.BindOnly, BindLater: o.BindLater, WriteTimeout: clusterWriteTimeout})
}
