package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/flockrun/flock/app"
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/internal/testkit"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/bolt"
	jsstore "github.com/flockrun/flock/state/jetstream"
)

// sleeperWorkflow waits for the duration given as the run's task on its
// first phase call (Output.Delay) and ends the run on its second.
func sleeperWorkflow() phases.Workflow {
	p := func(in phases.Input) (phases.Output, error) {
		if in.Run.Step == 1 {
			d, err := time.ParseDuration(in.Run.Task)
			if err != nil {
				return phases.Output{}, err
			}
			return phases.Output{Next: "p", Delay: d}, nil
		}
		return phases.Output{}, nil
	}
	return phases.Workflow{Name: "test.sleeper", Start: "p",
		Phases: []phases.PhaseSpec{{Name: "p", Run: p, Next: []string{"p"}}}}
}

func init() { phases.Default.MustRegister(sleeperWorkflow()) }

// errKilled is the error of every write of a killed node's store.
var errKilled = errors.New("node killed")

// gateStore is a node's view of the shared store: killing the node makes
// every write fail at once (a dead process writes nothing more), and
// freezing it holds every write until thawed (a paused process).
type gateStore struct {
	state.Store
	own bool // Close closes the inner store

	mu     sync.Mutex
	dead   bool          // guarded by mu
	frozen chan struct{} // non-nil while frozen; guarded by mu

	fenced atomic.Int64 // commits refused with state.ErrFenced
}

func (g *gateStore) enter(ctx context.Context) error {
	g.mu.Lock()
	dead, frozen := g.dead, g.frozen
	g.mu.Unlock()
	if dead {
		return errKilled
	}
	if frozen != nil {
		select {
		case <-frozen:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (g *gateStore) kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.dead = true
	if g.frozen != nil {
		close(g.frozen)
		g.frozen = nil
	}
}

func (g *gateStore) freeze() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.frozen == nil {
		g.frozen = make(chan struct{})
	}
}

func (g *gateStore) thaw() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.frozen != nil {
		close(g.frozen)
		g.frozen = nil
	}
}

func (g *gateStore) Commit(ctx context.Context, c *state.Commit) error {
	if err := g.enter(ctx); err != nil {
		return err
	}
	err := g.Store.Commit(ctx, c)
	if errors.Is(err, state.ErrFenced) {
		g.fenced.Add(1)
	}
	return err
}

func (g *gateStore) Claim(ctx context.Context, id, owner string, ttl time.Duration) (state.Lease, error) {
	if err := g.enter(ctx); err != nil {
		return state.Lease{}, err
	}
	return g.Store.Claim(ctx, id, owner, ttl)
}

func (g *gateStore) Renew(ctx context.Context, id, owner string, ttl time.Duration) (state.Lease, error) {
	if err := g.enter(ctx); err != nil {
		return state.Lease{}, err
	}
	return g.Store.Renew(ctx, id, owner, ttl)
}

func (g *gateStore) Release(ctx context.Context, id, owner string) error {
	if err := g.enter(ctx); err != nil {
		return err
	}
	return g.Store.Release(ctx, id, owner)
}

// Check passes the store's health check on (Engine.Health).
func (g *gateStore) Check(ctx context.Context) error {
	if c, ok := g.Store.(StoreChecker); ok {
		return c.Check(ctx)
	}
	return nil
}

func (g *gateStore) Close() error {
	if g.own {
		return g.Store.Close()
	}
	return nil
}

// testNode is one flock node of a test cluster.
type testNode struct {
	name  string
	dir   string
	m     *Member
	a     *app.App
	store *gateStore
	// dispatch is the dispatcher's own connection (apart from the
	// store's), so that a test can cut a node off dispatch alone.
	dispatch *nats.Conn
	killed   bool
	// start starts (or restarts, after kill) the node.
	start func() error
}

// testCluster is n flock nodes, each with an embedded NATS node, in this
// process.
type testCluster struct {
	t     testing.TB
	nodes []*testNode
	// stopping counts killed nodes whose executor is still stopping.
	stopping sync.WaitGroup
	// denied records the permission violations NATS reported to the
	// nodes' connections: flock's user must be allowed all flock does.
	denied natsWatch
}

// natsWatch records the permission violations NATS reports.
type natsWatch struct {
	mu     sync.Mutex
	denied []string // guarded by mu
}

func (w *natsWatch) record(err error) {
	if errors.Is(err, nats.ErrPermissionViolation) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.denied = append(w.denied, err.Error())
	}
}

// check fails tb if any permission was denied.
func (w *natsWatch) check(tb testing.TB) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.denied) > 0 {
		tb.Errorf("NATS denied flock's user %d times: %q", len(w.denied), w.denied)
	}
}

// watchHandler passes a node's log on to its handler and records the
// NATS errors of the member's connection (asyncErrors) in w.
type watchHandler struct {
	slog.Handler
	w *natsWatch
}

func (h watchHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelError || h.Handler.Enabled(ctx, l)
}

func (h watchHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "nats" {
		r.Attrs(func(a slog.Attr) bool {
			if err, ok := a.Value.Any().(error); ok {
				h.w.record(err)
			}
			return true
		})
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h watchHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return watchHandler{h.Handler.WithAttrs(as), h.w}
}

func (h watchHandler) WithGroup(name string) slog.Handler {
	return watchHandler{h.Handler.WithGroup(name), h.w}
}

// clusterOpts configure startCluster.
type clusterOpts struct {
	n            int
	ackWait      time.Duration
	handoffDelay time.Duration
	sweep        time.Duration
	// open opens a node's store; nil: the JetStream store (state/jetstream)
	// on the node's connection.
	open StoreOpener
	// bolt: every node shares one bbolt file instead (one process), to
	// tell dispatch faults from store faults.
	bolt bool
	// tls, if set, gives node i TLS files tls[i] (see testPKI).
	tls []TLSFiles
}

// testSecret is the cluster secret of the test clusters.
const testSecret = "test-cluster-secret-not-for-production"

// freePorts returns n distinct free loopback ports.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	ls := make([]net.Listener, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls[i] = l
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

func startCluster(t testing.TB, o clusterOpts) *testCluster {
	t.Helper()
	if testing.Short() {
		t.Skip("cluster tests (embedded NATS nodes) skipped in -short mode; scripts/test.sh runs them")
	}
	if o.n == 0 {
		o.n = 3
	}
	if o.ackWait == 0 {
		o.ackWait = time.Second
	}
	if o.sweep == 0 {
		o.sweep = time.Second
	}
	base := t.TempDir()
	if o.open == nil && !o.bolt {
		o.open = func(ctx context.Context, js jetstream.JetStream, so StoreOptions) (state.Store, error) {
			return jsstore.Open(ctx, js, jsstore.Options{Replicas: so.Replicas, BindOnly: so.BindOnly, BindLater: so.BindLater, WriteTimeout: 3 * time.Second})
		}
	}
	own := !o.bolt
	if o.bolt {
		shared, err := bolt.Open(filepath.Join(base, "shared.db"), bolt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { shared.Close() })
		o.open = func(context.Context, jetstream.JetStream, StoreOptions) (state.Store, error) { return shared, nil }
	}
	if o.tls == nil {
		o.tls = make([]TLSFiles, o.n)
	}
	ports := freePorts(t, o.n)
	routes := make([]string, o.n)
	for i, p := range ports {
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", p)
	}
	c := &testCluster{t: t, nodes: make([]*testNode, o.n)}
	began := time.Now()
	var g errgroup.Group
	for i := range c.nodes {
		n := &testNode{name: fmt.Sprintf("n%d", i+1), dir: filepath.Join(base, fmt.Sprintf("n%d", i+1))}
		c.nodes[i] = n
		clustered := o.n > 1
		n.start = func() error {
			cfg := Config{Name: n.name, AckWait: o.ackWait, SweepInterval: o.sweep, ReadyTimeout: 30 * time.Second,
				Logger: slog.New(watchHandler{testLogger(n.name).Handler(), &c.denied}), Secret: testSecret, TLS: o.tls[i],
				Node: NodeConfig{Name: n.name, Listen: "127.0.0.1:0", StoreDir: filepath.Join(n.dir, "jetstream")}}
			if clustered {
				cfg.Node.ClusterListen = fmt.Sprintf("127.0.0.1:%d", ports[i])
				cfg.Node.Routes = routes
			}
			m, err := Join(context.Background(), cfg, func(ctx context.Context, js jetstream.JetStream, so StoreOptions) (state.Store, error) {
				st, err := o.open(ctx, js, so)
				if err != nil {
					return nil, err
				}
				n.store = &gateStore{Store: st, own: own}
				return n.store, nil
			})
			if err != nil {
				return fmt.Errorf("node %s: %w", n.name, err)
			}
			n.m = m
			// The dispatcher on a connection of its own.
			if n.dispatch, err = m.Node.Connect("dispatch "+n.name,
				nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { c.denied.record(err) })); err != nil {
				return err
			}
			d, err := NewDispatcher(DispatchConfig{Conn: n.dispatch, Store: n.store, Node: n.name, Replicas: m.Replicas,
				AckWait: o.ackWait, SweepInterval: o.sweep, Logger: testLogger(n.name)})
			if err != nil {
				return err
			}
			m.Dispatcher.Close()
			m.Dispatcher = d
			n.a, err = app.OpenCluster(context.Background(), configs.Server{DataDir: n.dir}, testLogger(n.name),
				app.Cluster{Store: n.store, Dispatcher: d, LeaseTTL: o.ackWait, HandoffDelay: o.handoffDelay, Node: n.name})
			if err != nil {
				return err
			}
			n.killed = false
			return d.Start(n.a.Executor)
		}
		g.Go(n.start)
	}
	if err := g.Wait(); err != nil {
		c.close()
		t.Fatal(err)
	}
	t.Logf("%d-node cluster up in %v", o.n, time.Since(began).Round(time.Millisecond))
	t.Cleanup(func() { c.denied.check(t) }) // after close
	t.Cleanup(c.close)
	return c
}

func testLogger(node string) *slog.Logger {
	if os.Getenv("FLOCK_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", node)
}

// close stops every node still alive, gracefully.
func (c *testCluster) close() {
	defer c.stopping.Wait()
	for _, n := range c.nodes {
		if n == nil || n.killed {
			continue
		}
		n.killed = true
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if n.a != nil {
			_ = n.a.Close(ctx)
		}
		cancel()
		if n.m != nil {
			n.m.Close()
		}
		if n.dispatch != nil {
			n.dispatch.Close()
		}
	}
}

// kill crashes node i: its store refuses every write from now on, its
// NATS connections and server go away without a goodbye, and its executor
// is stopped (its commits fail: nothing it does reaches the store).
func (c *testCluster) kill(i int) {
	n := c.nodes[i]
	n.killed = true
	began := time.Now()
	c.stopping.Wait() // an earlier kill of the same node
	n.store.kill()
	n.dispatch.Close()
	n.m.Conn.Close()
	n.m.Node.Shutdown()
	// What is left of the process stops on its own time (a commit in
	// flight when the connection closed may wait out its write
	// timeout); the test goes on at once, as the cluster would.
	c.stopping.Add(1)
	go func() {
		defer c.stopping.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = n.a.Close(ctx)
		n.m.Dispatcher.Close()
		if d := time.Since(began); d > 2*time.Second {
			c.t.Logf("kill %s: its executor stopped after %v", n.name, d.Round(time.Millisecond))
		}
	}()
}

// restart starts killed node i again on its data and addresses.
func (c *testCluster) restart(i int) {
	c.t.Helper()
	c.stopping.Wait()
	if err := c.nodes[i].start(); err != nil {
		c.t.Fatal(err)
	}
}

// driver returns the index of the live node that drives run id, or -1.
func (c *testCluster) driver(id string) int {
	for i, n := range c.nodes {
		if n.killed {
			continue
		}
		for _, a := range n.a.Executor.Active() {
			if a == id {
				return i
			}
		}
	}
	return -1
}

// alive returns a live node.
func (c *testCluster) alive() *testNode {
	for _, n := range c.nodes {
		if !n.killed {
			return n
		}
	}
	c.t.Fatal("no node alive")
	return nil
}

// raftGroups returns the streams whose leaders a run's takeover needs in
// a store of the given replicas (every shard of the runs stream and heads
// bucket).
func raftGroups(replicas int) []string {
	g := []string{ClaimStream, "FLOCK_INDEX", "KV_FLOCK_LEASES", "OBJ_FLOCK_BLOBS"}
	for i := range jsstore.ShardsFor(replicas) {
		g = append(g, fmt.Sprintf("FLOCK_RUNS_%d", i), fmt.Sprintf("KV_FLOCK_HEADS_%d", i))
	}
	return g
}

// leadsAny reports which of the raft groups on a run's data path node i
// leads: the streams and the claim consumer. (The meta group only assigns
// streams and consumers; runs do not wait for it.)
func (c *testCluster) leadsAny(i int) []string {
	n := c.nodes[i]
	var led []string
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, name := range raftGroups(n.m.Replicas) {
		st, err := n.m.JS.Stream(ctx, name)
		if err != nil {
			continue
		}
		if info, err := st.Info(ctx); err == nil && info.Cluster != nil && info.Cluster.Leader == n.name {
			led = append(led, name)
		}
	}
	if cons, err := n.m.JS.Consumer(ctx, ClaimStream, ClaimConsumer); err == nil {
		if info, err := cons.Info(ctx); err == nil && info.Cluster != nil && info.Cluster.Leader == n.name {
			led = append(led, "consumer")
		}
	}
	return led
}

// moveLeadersOff asks node i's raft leaders to step down, as before a
// planned restart, and waits until it leads none: a kill of the node then
// measures dispatch takeover alone, not JetStream's leader election
// (4–9 s, fixed in nats-server).
func (c *testCluster) moveLeadersOff(i int) {
	c.t.Helper()
	n := c.nodes[i]
	deadline := time.Now().Add(30 * time.Second)
	for {
		led := c.leadsAny(i)
		if len(led) == 0 {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s still leads %v", n.name, led)
		}
		for _, g := range led {
			subj := "$JS.API.STREAM.LEADER.STEPDOWN." + g
			if g == "consumer" {
				subj = "$JS.API.CONSUMER.LEADER.STEPDOWN." + ClaimStream + "." + ClaimConsumer
			}
			_, _ = n.m.Conn.Request(subj, nil, 2*time.Second)
		}
		// Let the elections the step-downs started finish before
		// asking again.
		testkit.WaitWithin(c.t, 5*time.Second, "leaders elected", func() bool {
			return len(c.leadsAny(i)) < len(led)
		})
	}
}
