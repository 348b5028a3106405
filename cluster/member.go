package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/flockrun/flock/state"
)

// Config configures a node's membership of a cluster: the NATS it uses
// (an embedded node, or an external cluster at NATSURL) and dispatch.
type Config struct {
	// Node configures the embedded NATS server; unused with NATSURL. Its
	// Secret and TLS are set from Secret and TLS.
	Node NodeConfig
	// NATSURL, if set, connects to an external NATS cluster (comma
	// separated nats:// or tls:// URLs, without credentials) instead of
	// embedding a node. Its JetStream must be configured with
	// sync_interval: always, and it must require authentication.
	NATSURL string
	// Secret is the cluster secret: on embedded nodes, the password of
	// flock's NATS user and of the routes (NodeConfig.Secret); with
	// NATSURL, the password of User. Required, except on a single
	// embedded node (no ClusterListen), which makes a random one for its
	// own process when it is empty.
	Secret string
	// User is flock's user on an external NATS cluster (default
	// UserName); embedded nodes always use UserName.
	User string
	// TLS names the TLS files (TLSFiles): of the embedded node, or to
	// verify and authenticate to the external cluster.
	TLS TLSFiles
	// Name names this flock node (dispatch logs, the connection's name);
	// default Node.Name.
	Name string
	// Replicas of every stream: default 3 when the embedded node has routes
	// or with NATSURL, else 1.
	Replicas int
	// AckWait, MaxDeliver, MaxAckPending and SweepInterval configure
	// dispatch (DispatchConfig).
	AckWait       time.Duration
	MaxDeliver    int
	MaxAckPending int
	SweepInterval time.Duration
	// ReadyTimeout bounds the wait for JetStream (a cluster needs a
	// majority of its nodes up). Default 60 s.
	ReadyTimeout time.Duration
	Logger       *slog.Logger
}

// FailoverReader is implemented by stores whose reads can answer while a
// stream has no leader (state/jetstream's Store).
type FailoverReader interface {
	FailoverReads() state.Reader
}

// StoreOpener opens the shared run store on a JetStream context (the CLI
// opens state/jetstream's store).
type StoreOpener func(ctx context.Context, js jetstream.JetStream, o StoreOptions) (state.Store, error)

// Member is one node's part of a cluster: its embedded NATS server (nil
// with an external NATS), its connection, the shared store and the
// dispatcher. Close it after the App that uses them.
type Member struct {
	Node  *Node
	Conn  *nats.Conn
	JS    jetstream.JetStream
	Store state.Store
	// Reads is what the node's HTTP API reads runs with: the store's
	// failover reads (FailoverReader) when it has them, which answer
	// from a replica while a stream elects a new leader, else Store.
	Reads      state.Reader
	Dispatcher *Dispatcher
	// Replicas is the replication of the streams (1 or 3).
	Replicas int
	// AckWait is the claims' AckWait, the executor's lease TTL.
	AckWait time.Duration
	// Provisioned says whether this node created the cluster's streams
	// or found them; Ready is how long Join took.
	Provisioned Provisioned
	Ready       time.Duration
}

// Join starts (or connects to) NATS, opens the store with open, and
// provisions dispatch. The dispatcher is started later, on the executor
// (Dispatcher.Start). A restarted embedded node whose own server holds
// the streams returns at once, its store and claim consumer binding in the
// background (provision).
func Join(ctx context.Context, cfg Config, open StoreOpener) (_ *Member, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 60 * time.Second
	}
	if cfg.Name == "" {
		cfg.Name = cfg.Node.Name
	}
	if cfg.Name == "" {
		return nil, fmt.Errorf("%w: node name: required", ErrConfig)
	}
	if cfg.AckWait == 0 {
		cfg.AckWait = DefaultAckWait
	}
	m := &Member{AckWait: cfg.AckWait}
	began := time.Now()
	defer func() {
		if err != nil {
			if m.Store != nil {
				_ = m.Store.Close()
			}
			m.Close()
		}
	}()
	url := cfg.NATSURL
	replicas := cfg.Replicas
	rctx, cancel := context.WithTimeout(ctx, cfg.ReadyTimeout)
	defer cancel()
	if url == "" {
		cfg.Node.Secret, cfg.Node.TLS = cfg.Secret, cfg.TLS
		if cfg.Node.Secret == "" && cfg.Node.ClusterListen == "" {
			if cfg.Node.Secret, err = newSecret(); err != nil {
				return nil, err
			}
			cfg.Logger.Info("no NATS secret given: this single node made one for its own process; its NATS port admits no other client",
				"node", cfg.Name)
		}
		if m.Node, err = StartNode(cfg.Node); err != nil {
			return nil, err
		}
		// JetStream answers once the cluster has elected its meta leader
		// (a majority of the nodes is up); requests sent before are lost
		// and time out.
		if err := m.Node.WaitJetStream(rctx); err != nil {
			return nil, err
		}
		cfg.Logger.Debug("jetstream ready", "node", cfg.Name, "after", time.Since(began))
		url = m.Node.ClientURL()
		if replicas == 0 && !m.Node.Clustered() {
			replicas = 1
		}
		if m.Conn, err = m.Node.Connect("flock "+cfg.Name, nats.MaxReconnects(-1), asyncErrors(cfg)); err != nil {
			return nil, err
		}
	} else if m.Conn, err = connectExternal(cfg, asyncErrors(cfg)); err != nil {
		return nil, err
	}
	if replicas == 0 {
		replicas = 3
	}
	m.Replicas = replicas
	if m.JS, err = jetstream.New(m.Conn); err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	cfg.Logger.Debug("nats connected", "node", cfg.Name, "url", url, "after", time.Since(began))
	if m.Provisioned, err = m.provision(rctx, cfg, open, replicas, began); err != nil {
		return nil, fmt.Errorf("open the cluster store (%d replicas; a cluster needs a majority of its nodes up): %w", replicas, err)
	}
	cfg.Logger.Debug("store open", "node", cfg.Name, "replicas", replicas, "how", m.Provisioned, "after", time.Since(began))
	m.Reads = m.Store
	if fr, ok := m.Store.(FailoverReader); ok {
		m.Reads = fr.FailoverReads()
	}
	m.Dispatcher, err = NewDispatcher(DispatchConfig{Conn: m.Conn, Store: m.Store, Node: cfg.Name, Replicas: replicas,
		AckWait: cfg.AckWait, MaxDeliver: cfg.MaxDeliver, MaxAckPending: cfg.MaxAckPending,
		SweepInterval: cfg.SweepInterval, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	if m.Provisioned == Restarted {
		// Nothing to wait for: the store and the consumer bind as their
		// leaders answer, and calls wait for them (provision).
		m.Ready = time.Since(began)
		cfg.Logger.Info("joined the cluster; the store binds as its streams' leaders answer", "node", cfg.Name,
			"replicas", replicas, "how", m.Provisioned, "after", m.Ready)
		return m, nil
	}
	if err := m.Dispatcher.Provision(rctx); err != nil {
		return nil, err
	}
	// Wait until a read and a lease round trip answer here: new streams
	// elect their leaders after they are made.
	probe := "flock-ready-probe-" + cfg.Name
	if err := retryEvery(rctx, time.Second, 20*time.Millisecond, func(ctx context.Context) error {
		err := probeStore(ctx, m.Store, probe, cfg.Name)
		if err != nil {
			cfg.Logger.Debug("store not ready", "node", cfg.Name, "err", err)
		}
		return err
	}); err != nil {
		return nil, fmt.Errorf("the cluster store does not answer: %w", err)
	}
	m.Ready = time.Since(began)
	cfg.Logger.Info("joined the cluster", "node", cfg.Name, "replicas", replicas, "how", m.Provisioned, "after", m.Ready)
	return m, nil
}

// asyncErrors logs the errors NATS reports apart from any call: a
// permission the user lacks, a subscriber too slow for its messages.
func asyncErrors(cfg Config) nats.Option {
	return nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
		subject := ""
		if sub != nil {
			subject = sub.Subject
		}
		cfg.Logger.Error("nats", "node", cfg.Name, "subscription", subject, "err", err)
	})
}

// connectExternal connects to the external NATS cluster at cfg.NATSURL as
// flock's user, refusing a cluster that does not require authentication.
func connectExternal(cfg Config, extra ...nats.Option) (*nats.Conn, error) {
	urls, tlsURL, err := natsURLs(cfg.NATSURL, cfg.TLS)
	if err != nil {
		return nil, err
	}
	if err := checkSecret(cfg.Secret); err != nil {
		return nil, err
	}
	user := cfg.User
	if user == "" {
		user = UserName
	}
	opts := append([]nats.Option{nats.Name("flock " + cfg.Name), nats.UserInfo(user, cfg.Secret),
		nats.MaxReconnects(-1), nats.RetryOnFailedConnect(false)}, cfg.TLS.clientOptions(tlsURL)...)
	opts = append(opts, extra...)
	nc, err := nats.Connect(strings.Join(urls, ","), opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s as %s: %w", strings.Join(urls, ","), user, err)
	}
	if !nc.AuthRequired() {
		at := nc.ConnectedUrlRedacted()
		nc.Close()
		return nil, fmt.Errorf("%w: the NATS server at %s does not require authentication: anyone who reaches it reads and forges flock's runs; give flock a user of its own there (README, \"Running a cluster\")", ErrInsecure, at)
	}
	return nc, nil
}

// Close stops dispatch, closes the connection and shuts the embedded
// node down. The store is the App's to close. It tolerates a partly
// joined member.
func (m *Member) Close() {
	if m.Dispatcher != nil {
		m.Dispatcher.Close()
	}
	if m.Conn != nil {
		_ = m.Conn.FlushTimeout(2 * time.Second) // the acks and naks of the runs let go
		m.Conn.Close()
	}
	if m.Node != nil {
		m.Node.Shutdown()
	}
}
