package jetstream

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/flockrun/flock/state"
)

// Defaults of Options.
const (
	DefaultPrefix        = "flock"
	DefaultReplicas      = 1
	DefaultBlobThreshold = 256 << 10
	DefaultWriteTimeout  = 10 * time.Second
	DefaultOrphanWait    = 500 * time.Millisecond
)

// MaxShards bounds the shards of the runs stream and of the heads bucket:
// a run lives in shard fnv32a(key) % n, n = ShardsFor(replicas).
const MaxShards = 4

// ShardsFor returns the number of shards of a store with the given
// replicas. A stream applies its writes one at a time, each synced on its
// own on a single server, so at R1 the shards are what lets commits of
// many runs be synced in parallel (1.5x the transitions/s of one shard
// through the engine). A replicated stream groups what its Raft log
// appends, and every shard is another Raft group for the servers to run:
// at R3, four shards halved the transitions/s on a loaded 2-core machine
// (docs/benchmarks.md), so a replicated store has one.
func ShardsFor(replicas int) int {
	if replicas <= 1 {
		return MaxShards
	}
	return 1
}

// Options configures Open. The zero value gives the defaults.
type Options struct {
	// Prefix names everything the store creates: subjects start with
	// "<prefix>." and the streams, buckets and object store are
	// "<PREFIX>_RUNS", "<PREFIX>_HEADS", "<PREFIX>_LEASES" and
	// "<PREFIX>_BLOBS" (upper case). Letters, digits, '-' and '_' only.
	// Default "flock". Two stores with different prefixes share a server
	// without seeing each other.
	Prefix string
	// Replicas is the replication factor of every stream, bucket and
	// object store: 1 on a single server, 3 in a cluster of three or
	// more. Default 1. Existing streams are updated to it on Open.
	Replicas int
	// BlobThreshold is the payload size above which a record batch or a
	// chunk goes to the object store instead of a stream message.
	// Default 256 KiB; it must stay below the server's max_payload.
	BlobThreshold int
	// WriteTimeout bounds a commit once its first write is sent: from
	// then on the caller's context is no longer honoured, so that the
	// caller always learns whether the commit applied. Default 10s.
	WriteTimeout time.Duration
	// OrphanWait is how long a commit waits for another commit of the
	// same run that appended to a log but has not yet written the head,
	// before presuming it dead and fencing it off. Default 500ms.
	OrphanWait time.Duration
	// Now is the lease clock. Default time.Now. Leases compare stamps
	// written by different nodes, so the nodes' clocks must agree to well
	// within a lease's duration.
	Now func() time.Time
	// FailoverAfter is how long a read of FailoverReads waits for a
	// stream's leader before it asks any current replica instead.
	// Default DefaultFailoverAfter.
	FailoverAfter time.Duration
	// BindOnly makes Open bind to the streams as they are, creating or
	// changing nothing: it fails with ErrNotProvisioned while one is
	// missing or configured otherwise. Nodes of a cluster that did not
	// create the streams (Provision elsewhere) open with it.
	BindOnly bool
	// BindLater makes Open return at once and bind to the streams in the
	// background, asking again every 250 ms until their leaders answer;
	// until then every call waits for it up to BindWait and fails with
	// state.ErrUnavailable (a failed bind that asking again cannot mend,
	// such as ErrNotProvisioned, is every call's error). A node restarted
	// after a kill -9 opens with it: the streams it led answer only once
	// the other servers have elected new leaders (4-9 s), and the node
	// serves, and its starts wait, meanwhile.
	BindLater bool
}

// BindWait is how long a call of a store opened with Options.BindLater
// waits for its streams to be bound before it fails with
// state.ErrUnavailable.
const BindWait = time.Second

var prefixRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

func (o Options) withDefaults() (Options, error) {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if !prefixRE.MatchString(o.Prefix) {
		return o, fmt.Errorf("%w: prefix %q: want 1-32 letters, digits, '-' or '_'", ErrOptions, o.Prefix)
	}
	if o.Replicas == 0 {
		o.Replicas = DefaultReplicas
	}
	if o.Replicas < 0 || o.Replicas > 5 {
		return o, fmt.Errorf("%w: replicas %d: want 1 to 5", ErrOptions, o.Replicas)
	}
	if o.BlobThreshold <= 0 {
		o.BlobThreshold = DefaultBlobThreshold
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.OrphanWait <= 0 {
		o.OrphanWait = DefaultOrphanWait
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.FailoverAfter <= 0 {
		o.FailoverAfter = DefaultFailoverAfter
	}
	return o, nil
}

// Store is a state.Store on NATS JetStream. It is safe for concurrent use
// by many goroutines, and many Stores (on many nodes) may share the same
// streams: every write is fenced (see the package doc).
type Store struct {
	js   jetstream.JetStream
	opts Options

	shards []shard // the runs' logs and heads: ShardsFor(Replicas)
	leases jetstream.KeyValue
	blobs  jetstream.ObjectStore
	index  jetstream.Stream // see index.go

	subjIdx   string // "<prefix>.idx."
	indexName string // "<PREFIX>_INDEX"

	// cache holds the envelope this store last read or wrote per run, so
	// that a run's owner commits without reading its head first. A stale
	// entry is detected by the fences and re-read; errors are never
	// decided on a cached envelope.
	cacheMu sync.Mutex
	cache   map[string]cached // guarded by cacheMu

	// leaseRevs remembers, per run, the lease this store last wrote (see
	// leaseMemo); bounded like cache.
	leaseMu   sync.Mutex
	leaseRevs map[string]leaseMemo // guarded by leaseMu

	// mu guards closed; Commit holds it for reading while it runs so that
	// Close waits for commits in flight.
	mu     sync.RWMutex
	closed bool // guarded by mu

	isClosed atomic.Bool

	// bound is closed once the streams are bound (by Open, or by the
	// binder of Options.BindLater); bindErr, set before, is a bind's
	// lasting failure. stopBind stops the binder; binder is done when it
	// has returned.
	bound    chan struct{}
	bindErr  error
	stopBind context.CancelFunc
	binder   sync.WaitGroup

	leaders leaderless // streams whose leader a failover read found silent

	commits  atomic.Uint64
	rejected atomic.Uint64
	txs      atomic.Uint64
	bytes    atomic.Uint64
}

// shard is one shard of the runs stream and the heads bucket.
type shard struct {
	runs       jetstream.Stream // the shard's runs stream: logs, specs, chunks
	heads      jetstream.KeyValue
	runsName   string // "<PREFIX>_RUNS_<i>"
	headsName  string // "<PREFIX>_HEADS_<i>", the bucket
	headsSubj  string // "$KV.<PREFIX>_HEADS_<i>.", the bucket's subject root
	subjRun    string // "<prefix>.run.<i>."
	subjChunk  string // "<prefix>.chunk.<i>."
	headStream string // "KV_<PREFIX>_HEADS_<i>", the bucket's stream
}

// shardOf returns the shard of run key.
func (s *Store) shardOf(key string) *shard {
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return &s.shards[h%uint32(len(s.shards))]
}

// maxCached bounds the envelope cache (a few KiB each); past it an
// arbitrary entry is dropped: a miss costs one read of the head.
const maxCached = 8192

// Open binds to the streams, buckets and object store named by
// opts.Prefix on js's server or cluster, creating (or updating) those that
// are missing or configured otherwise, unless opts.BindOnly, and returns a
// Store on them (at once, binding in the background, with
// opts.BindLater). The streams are checked and made in parallel. The caller
// keeps ownership of js and its connection: Close does not close them.
//
// The server must have JetStream enabled. Durability depends on it: an
// acknowledged write is on disk only with `sync_interval: always` in the
// server's jetstream block (the default flushes every two minutes), and
// survives the loss of a node only with Replicas 3 in a cluster.
func Open(ctx context.Context, js jetstream.JetStream, opts Options) (*Store, error) {
	if js == nil {
		return nil, fmt.Errorf("%w: nil JetStream", ErrOptions)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	up := strings.ToUpper(opts.Prefix)
	s := &Store{
		js:        js,
		opts:      opts,
		subjIdx:   opts.Prefix + ".idx.",
		indexName: up + "_INDEX",
		cache:     make(map[string]cached),
		leaseRevs: make(map[string]leaseMemo),
		bound:     make(chan struct{}),
		stopBind:  func() {},
	}
	s.shards = make([]shard, ShardsFor(opts.Replicas))
	var assets []asset
	for i := range s.shards {
		sh := &s.shards[i]
		n := strconv.Itoa(i)
		sh.runsName, sh.headsName = up+"_RUNS_"+n, up+"_HEADS_"+n
		sh.headStream, sh.headsSubj = "KV_"+sh.headsName, "$KV."+sh.headsName+"."
		sh.subjRun, sh.subjChunk = opts.Prefix+".run."+n+".", opts.Prefix+".chunk."+n+"."
		assets = append(assets, asset{stream: &jetstream.StreamConfig{
			Name:        sh.runsName,
			Description: "flock run logs (shard " + n + "): entries, op requests and results, events, specs, chunks",
			Subjects:    []string{sh.subjRun + ">", sh.subjChunk + ">"},
			Storage:     jetstream.FileStorage,
			Replicas:    opts.Replicas,
			Retention:   jetstream.LimitsPolicy,
			Discard:     jetstream.DiscardNew,
			MaxMsgs:     -1,
			MaxBytes:    -1,
			Duplicates:  2 * time.Minute,
			// Strict reads go to the stream leader (see the package
			// doc); direct gets let a failover read ask a replica.
			AllowDirect: true,
		}}, asset{stream: bucketStream(sh.headsName, "flock run heads (shard "+n+")", opts.Replicas, true)})
	}
	assets = append(assets,
		asset{stream: &jetstream.StreamConfig{
			Name:              s.indexName,
			Description:       "flock run indexes: unfinished runs, children",
			Subjects:          []string{opts.Prefix + ".idx.>"},
			Storage:           jetstream.FileStorage,
			Replicas:          opts.Replicas,
			MaxMsgsPerSubject: 1,
			MaxMsgs:           -1,
			MaxBytes:          -1,
			// Listed from the leader; a failover reader asks a replica.
			AllowDirect: true,
		}},
		// Leases are read from the leader only (the KV client's Get asks
		// the leader when direct gets are off).
		asset{stream: bucketStream(up+"_LEASES", "flock run leases", opts.Replicas, false)},
		asset{stream: objectStream(up+"_BLOBS", "flock blobs over the blob threshold", opts.Replicas)},
	)
	if opts.BindLater {
		bctx, cancel := context.WithCancel(context.Background())
		s.stopBind = cancel
		s.binder.Add(1)
		go func() { // owned by s: Close stops it and waits
			defer s.binder.Done()
			s.bindLater(bctx, assets)
		}()
		return s, nil
	}
	h, err := s.bind(ctx, assets)
	if err != nil {
		return nil, err
	}
	s.use(h)
	close(s.bound)
	return s, nil
}

// bindReask is how often the binder of Options.BindLater sends another
// try while the earlier ones are unanswered: a request sent while a
// stream has no leader is never answered, not even once one is elected,
// so a new leader is found within bindReask instead of a try's whole
// BindWait.
const bindReask = 250 * time.Millisecond

// bindLater binds to the streams (bind) for Options.BindLater: a try
// every bindReask (at most BindWait/bindReask in flight, each bounded by
// BindWait) until one succeeds or fails for good, or ctx ends.
func (s *Store) bindLater(ctx context.Context, assets []asset) {
	type result struct {
		h   handles
		err error
	}
	var tries sync.WaitGroup
	defer tries.Wait()
	tctx, cancel := context.WithCancel(ctx)
	defer cancel() // before tries.Wait: ends the tries in flight
	results := make(chan result)
	inFlight := 0
	try := func() {
		inFlight++
		tries.Add(1)
		go func() {
			defer tries.Done()
			c, cancel := context.WithTimeout(tctx, BindWait)
			defer cancel()
			h, err := s.bind(c, assets)
			select {
			case results <- result{h, err}:
			case <-tctx.Done():
			}
		}()
	}
	try()
	t := time.NewTicker(bindReask)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if inFlight < int(BindWait/bindReask) {
				try()
			}
		case r := <-results:
			inFlight--
			if !transient(r.err) {
				if r.err == nil {
					s.use(r.h)
				}
				s.bindErr = r.err
				close(s.bound)
				return
			}
		}
	}
}

// handles are the store's bindings to its streams.
type handles struct {
	runs   []jetstream.Stream   // per shard
	heads  []jetstream.KeyValue // per shard
	index  jetstream.Stream
	leases jetstream.KeyValue
	blobs  jetstream.ObjectStore
}

// use makes h the store's handles.
func (s *Store) use(h handles) {
	for i := range s.shards {
		s.shards[i].runs, s.shards[i].heads = h.runs[i], h.heads[i]
	}
	s.index, s.leases, s.blobs = h.index, h.leases, h.blobs
}

// bind checks the streams' layout, creates or updates the streams that
// are missing or configured otherwise (unless Options.BindOnly), and
// returns the handles bound to them.
func (s *Store) bind(ctx context.Context, assets []asset) (handles, error) {
	var h handles
	js, up := s.js, strings.ToUpper(s.opts.Prefix)
	if _, err := js.Stream(ctx, up+"_RUNS"); err == nil {
		return h, fmt.Errorf("%w: stream %s holds runs in the layout of an earlier flock (one stream, not shards): "+
			"remove it with its buckets (nats stream rm %s; nats kv rm %s_HEADS) or give this store another prefix",
			ErrOptions, up+"_RUNS", up+"_RUNS", up)
	} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return h, fmt.Errorf("open jetstream store: %w", unavailable(err))
	}
	// A store made with another number of shards (another replication)
	// would lose track of its runs.
	var have []bool
	for i := range MaxShards {
		_, err := js.Stream(ctx, up+"_RUNS_"+strconv.Itoa(i))
		if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return h, fmt.Errorf("open jetstream store: %w", unavailable(err))
		}
		have = append(have, err == nil)
	}
	if made := slices.Index(have, false); have[0] && (made == -1 && len(s.shards) != MaxShards || made != -1 && made != len(s.shards)) {
		return h, fmt.Errorf("%w: the store's runs were made in other shards than the %d of %d replicas: open it with the replicas it was made with",
			ErrOptions, len(s.shards), s.opts.Replicas)
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, a := range assets {
		g.Go(func() error { return s.ensure(gctx, a) })
	}
	if err := g.Wait(); err != nil {
		return h, err
	}
	h.runs, h.heads = make([]jetstream.Stream, len(s.shards)), make([]jetstream.KeyValue, len(s.shards))
	var err error
	for i := range s.shards {
		sh := &s.shards[i]
		if h.runs[i], err = js.Stream(ctx, sh.runsName); err != nil {
			return h, fmt.Errorf("open jetstream store: stream %s: %w", sh.runsName, unavailable(err))
		}
		if h.heads[i], err = js.KeyValue(ctx, sh.headsName); err != nil {
			return h, fmt.Errorf("open jetstream store: bucket %s: %w", sh.headsName, unavailable(err))
		}
	}
	if h.index, err = js.Stream(ctx, s.indexName); err != nil {
		return h, fmt.Errorf("open jetstream store: stream %s: %w", s.indexName, unavailable(err))
	}
	if h.leases, err = js.KeyValue(ctx, up+"_LEASES"); err != nil {
		return h, fmt.Errorf("open jetstream store: bucket %s: %w", up+"_LEASES", unavailable(err))
	}
	if h.blobs, err = js.ObjectStore(ctx, up+"_BLOBS"); err != nil {
		return h, fmt.Errorf("open jetstream store: object store %s: %w", up+"_BLOBS", unavailable(err))
	}
	return h, nil
}

// awaitBound waits, for a store opened with Options.BindLater, until its
// streams are bound, for at most BindWait: state.ErrUnavailable if they
// are not bound by then, the bind's error if it failed for good.
func (s *Store) awaitBound(ctx context.Context) error {
	return s.boundWithin(ctx, BindWait)
}

// boundWithin is awaitBound waiting at most d.
func (s *Store) boundWithin(ctx context.Context, d time.Duration) error {
	select {
	case <-s.bound:
		return s.bindErr
	default:
	}
	if d <= 0 {
		return fmt.Errorf("%w: the store's streams have not answered since it opened (electing leaders?)", state.ErrUnavailable)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.bound:
		return s.bindErr
	case <-ctx.Done():
		return fmt.Errorf("%w: the store's streams have not answered since it opened (electing leaders?): %w", state.ErrUnavailable, ctx.Err())
	case <-t.C:
		return fmt.Errorf("%w: the store's streams have not answered since it opened (electing leaders?)", state.ErrUnavailable)
	}
}

// asset is one stream of the store (a bucket's and the object store's
// included), as Open declares it.
type asset struct {
	stream *jetstream.StreamConfig
}

// bucketStream is the stream of KV bucket name as nats.go's CreateKeyValue
// makes it ($KV.<bucket>.> subjects, one value per key, rollups, no
// deletes, new writes refused when full), but with direct gets as given
// from the start: nats.go's own create turns them on even on a bucket
// that has them off, and a client that binds a bucket while its stream
// allows them reads with direct gets for good ("no responders" once they
// are off). The heads allow them (failover reads ask a replica; strict
// reads ask the leader with the message-get API, never the KV client's
// Get); the leases do not.
func bucketStream(name, desc string, replicas int, direct bool) *jetstream.StreamConfig {
	return &jetstream.StreamConfig{
		Name:              "KV_" + name,
		Description:       desc,
		Subjects:          []string{"$KV." + name + ".>"},
		MaxMsgsPerSubject: 1,
		MaxMsgs:           -1,
		MaxBytes:          -1,
		MaxMsgSize:        -1,
		MaxConsumers:      -1,
		Storage:           jetstream.FileStorage,
		Replicas:          replicas,
		Discard:           jetstream.DiscardNew,
		Duplicates:        2 * time.Minute,
		AllowRollup:       true,
		DenyDelete:        true,
		AllowDirect:       direct,
	}
}

// objectStream is the object store bucket's stream as nats.go's
// CreateObjectStore makes it ($O.<bucket>.C.> chunks, $O.<bucket>.M.>
// metadata, rollups), with direct gets off from the start (see
// bucketStream).
func objectStream(bucket, desc string, replicas int) *jetstream.StreamConfig {
	return &jetstream.StreamConfig{
		Name:        "OBJ_" + bucket,
		Description: desc,
		Subjects:    []string{"$O." + bucket + ".C.>", "$O." + bucket + ".M.>"},
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		MaxBytes:    -1,
		Discard:     jetstream.DiscardNew,
		AllowRollup: true,
		AllowDirect: false,
	}
}

// wants reports whether a stream configured as cfg is as a wants it (the
// settings the store relies on: replicas, direct gets, subjects).
func (a asset) wants(cfg jetstream.StreamConfig) bool {
	return cfg.Replicas == a.stream.Replicas && cfg.AllowDirect == a.stream.AllowDirect &&
		slices.Equal(cfg.Subjects, a.stream.Subjects)
}

// ensure checks that a's stream exists as wanted and, unless
// Options.BindOnly, creates or updates it otherwise (ErrNotProvisioned
// with BindOnly).
func (s *Store) ensure(ctx context.Context, a asset) error {
	name := a.stream.Name
	st, err := s.js.Stream(ctx, name)
	if err == nil && a.wants(st.CachedInfo().Config) {
		return nil
	}
	if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("open jetstream store: stream %s: %w", name, unavailable(err))
	}
	if s.opts.BindOnly {
		if err != nil {
			return fmt.Errorf("%w: stream %s does not exist", ErrNotProvisioned, name)
		}
		return fmt.Errorf("%w: stream %s is configured otherwise", ErrNotProvisioned, name)
	}
	if _, err := s.js.CreateOrUpdateStream(ctx, *a.stream); err != nil {
		return fmt.Errorf("open jetstream store: stream %s: %w", name, unavailable(err))
	}
	return nil
}

// Close makes later calls fail with state.ErrClosed and waits for commits
// in flight. It does not close the JetStream connection, which the caller
// owns. Calling Close twice is harmless.
func (s *Store) Close() error {
	s.stopBind()
	s.binder.Wait()
	s.mu.Lock()
	s.closed = true
	s.isClosed.Store(true)
	s.mu.Unlock()
	return nil
}

// Stats returns the store's counters; Txs counts head writes (one per
// applied commit), Bytes the payload bytes appended and written.
func (s *Store) Stats() state.Stats {
	return state.Stats{
		Commits:  s.commits.Load(),
		Rejected: s.rejected.Load(),
		Txs:      s.txs.Load(),
		Bytes:    s.bytes.Load(),
	}
}

// check fails with ctx's error or state.ErrClosed.
func (s *Store) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.isClosed.Load() {
		return state.ErrClosed
	}
	return s.awaitBound(ctx)
}

// isWrongLast reports whether err is JetStream's "wrong last sequence"
// (10071, or 10164 on replicated streams): an expected-sequence fence
// failed.
func isWrongLast(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists)
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

var (
	_ state.Store         = (*Store)(nil)
	_ state.StatsReporter = (*Store)(nil)
	_ state.RunCounter    = (*Store)(nil)
)

// Check reports whether every stream of the store (the runs and index
// streams, the heads and leases buckets, the object store) still exists
// and answers, asking each for its info; the error names the first that
// does not. A store whose streams were deleted under it refuses every
// commit and finds no run: Check is how a node's /health learns it.
func (s *Store) Check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.isClosed.Load() {
		return state.ErrClosed
	}
	// Not bound yet (Options.BindLater): say so at once.
	if err := s.boundWithin(ctx, 0); err != nil {
		return err
	}
	up := strings.ToUpper(s.opts.Prefix)
	type check struct {
		name string
		info func(context.Context) error
	}
	checks := []check{
		{up + "_INDEX", func(ctx context.Context) error { _, err := s.index.Info(ctx); return err }},
		{"KV_" + up + "_LEASES", func(ctx context.Context) error { _, err := s.leases.Status(ctx); return err }},
		{"OBJ_" + up + "_BLOBS", func(ctx context.Context) error { _, err := s.blobs.Status(ctx); return err }},
	}
	for i := range s.shards {
		sh := &s.shards[i]
		checks = append(checks,
			check{sh.runsName, func(ctx context.Context) error { _, err := sh.runs.Info(ctx); return err }},
			check{sh.headStream, func(ctx context.Context) error { _, err := sh.heads.Status(ctx); return err }})
	}
	for _, c := range checks {
		if err := c.info(ctx); err != nil {
			return fmt.Errorf("stream %s: %w", c.name, unavailable(err))
		}
	}
	return nil
}
