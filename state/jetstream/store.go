package jetstream

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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
}

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
	return o, nil
}

// Store is a state.Store on NATS JetStream. It is safe for concurrent use
// by many goroutines, and many Stores (on many nodes) may share the same
// streams: every write is fenced (see the package doc).
type Store struct {
	js   jetstream.JetStream
	opts Options

	runs   jetstream.Stream // the runs stream: logs, specs, chunks
	heads  jetstream.KeyValue
	leases jetstream.KeyValue
	blobs  jetstream.ObjectStore
	index  jetstream.Stream // see index.go

	runsName string // stream names and subject roots, from the prefix
	subjRun  string // "<prefix>.run."
	subjBlob string // "<prefix>.chunk."
	subjIdx  string // "<prefix>.idx."

	// cache holds the envelope this store last read or wrote per run, so
	// that a run's owner commits without reading its head first. A stale
	// entry is detected by the fences and re-read; errors are never
	// decided on a cached envelope.
	cacheMu sync.Mutex
	cache   map[string]cached // guarded by cacheMu

	// mu guards closed; Commit holds it for reading while it runs so that
	// Close waits for commits in flight.
	mu     sync.RWMutex
	closed bool // guarded by mu

	isClosed atomic.Bool

	commits  atomic.Uint64
	rejected atomic.Uint64
	txs      atomic.Uint64
	bytes    atomic.Uint64
}

// maxCached bounds the envelope cache (a few KiB each); past it an
// arbitrary entry is dropped: a miss costs one read of the head.
const maxCached = 8192

// Open creates (or binds to, and updates) the streams, buckets and object
// store named by opts.Prefix on js's server or cluster and returns a
// Store on them. The caller keeps ownership of js and its connection:
// Close does not close them.
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
		js:       js,
		opts:     opts,
		runsName: up + "_RUNS",
		subjRun:  opts.Prefix + ".run.",
		subjBlob: opts.Prefix + ".chunk.",
		subjIdx:  opts.Prefix + ".idx.",
		cache:    make(map[string]cached),
	}
	runsCfg := jetstream.StreamConfig{
		Name:        s.runsName,
		Description: "flock run logs: entries, op requests and results, events, specs, chunks",
		Subjects:    []string{opts.Prefix + ".run.>", opts.Prefix + ".chunk.>"},
		Storage:     jetstream.FileStorage,
		Replicas:    opts.Replicas,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardNew,
		MaxMsgs:     -1,
		MaxBytes:    -1,
		Duplicates:  2 * time.Minute,
		// Reads go to the stream leader (see the package doc).
		AllowDirect: false,
	}
	if s.runs, err = js.CreateOrUpdateStream(ctx, runsCfg); err != nil {
		return nil, fmt.Errorf("open jetstream store: stream %s: %w", s.runsName, err)
	}
	idxCfg := jetstream.StreamConfig{
		Name:              up + "_INDEX",
		Description:       "flock run indexes: unfinished runs, children",
		Subjects:          []string{opts.Prefix + ".idx.>"},
		Storage:           jetstream.FileStorage,
		Replicas:          opts.Replicas,
		MaxMsgsPerSubject: 1,
		MaxMsgs:           -1,
		MaxBytes:          -1,
		AllowDirect:       false,
	}
	if s.index, err = js.CreateOrUpdateStream(ctx, idxCfg); err != nil {
		return nil, fmt.Errorf("open jetstream store: stream %s: %w", idxCfg.Name, err)
	}
	if s.heads, err = s.bucket(ctx, up+"_HEADS", "flock run heads", 1); err != nil {
		return nil, err
	}
	if s.leases, err = s.bucket(ctx, up+"_LEASES", "flock run leases", 1); err != nil {
		return nil, err
	}
	// The object store's stream as nats.go's CreateObjectStore makes it
	// ($O.<bucket>.C.> chunks, $O.<bucket>.M.> metadata, rollups), but with
	// direct gets off from the start: see bucket.
	blobs := up + "_BLOBS"
	obsCfg := jetstream.StreamConfig{
		Name:        "OBJ_" + blobs,
		Description: "flock blobs over the blob threshold",
		Subjects:    []string{"$O." + blobs + ".C.>", "$O." + blobs + ".M.>"},
		Storage:     jetstream.FileStorage,
		Replicas:    opts.Replicas,
		MaxBytes:    -1,
		Discard:     jetstream.DiscardNew,
		AllowRollup: true,
		AllowDirect: false,
	}
	if _, err := js.CreateOrUpdateStream(ctx, obsCfg); err != nil {
		return nil, fmt.Errorf("open jetstream store: object store %s: %w", blobs, err)
	}
	if s.blobs, err = js.ObjectStore(ctx, blobs); err != nil {
		return nil, fmt.Errorf("open jetstream store: object store %s: %w", blobs, err)
	}
	return s, nil
}

// bucket creates or updates KV bucket name and binds to it. Its stream is
// the one nats.go's CreateKeyValue makes ($KV.<bucket>.> subjects, history
// as the messages kept per key, rollups, no deletes, new writes refused
// when full), but with direct gets off from the start, so that its reads
// go to the stream leader (the last acknowledged write), not to whichever
// replica answers first. nats.go's own create turns direct gets on, even
// on a bucket that has them off: while one node opened the store, another
// binding the bucket would read with direct gets, and fail with "no
// responders" on every read once they were off again.
func (s *Store) bucket(ctx context.Context, name, desc string, history int64) (jetstream.KeyValue, error) {
	cfg := jetstream.StreamConfig{
		Name:              "KV_" + name,
		Description:       desc,
		Subjects:          []string{"$KV." + name + ".>"},
		MaxMsgsPerSubject: history,
		MaxMsgs:           -1,
		MaxBytes:          -1,
		MaxMsgSize:        -1,
		MaxConsumers:      -1,
		Storage:           jetstream.FileStorage,
		Replicas:          s.opts.Replicas,
		Discard:           jetstream.DiscardNew,
		Duplicates:        2 * time.Minute,
		AllowRollup:       true,
		DenyDelete:        true,
		AllowDirect:       false,
	}
	if _, err := s.js.CreateOrUpdateStream(ctx, cfg); err != nil {
		return nil, fmt.Errorf("open jetstream store: bucket %s: %w", name, err)
	}
	kv, err := s.js.KeyValue(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("open jetstream store: bucket %s: %w", name, err)
	}
	return kv, nil
}

// Close makes later calls fail with state.ErrClosed and waits for commits
// in flight. It does not close the JetStream connection, which the caller
// owns. Calling Close twice is harmless.
func (s *Store) Close() error {
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
	return nil
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
	if err := s.check(ctx); err != nil {
		return err
	}
	up := strings.ToUpper(s.opts.Prefix)
	checks := []struct {
		name string
		info func(context.Context) error
	}{
		{s.runsName, func(ctx context.Context) error { _, err := s.runs.Info(ctx); return err }},
		{up + "_INDEX", func(ctx context.Context) error { _, err := s.index.Info(ctx); return err }},
		{"KV_" + up + "_HEADS", func(ctx context.Context) error { _, err := s.heads.Status(ctx); return err }},
		{"KV_" + up + "_LEASES", func(ctx context.Context) error { _, err := s.leases.Status(ctx); return err }},
		{"OBJ_" + up + "_BLOBS", func(ctx context.Context) error { _, err := s.blobs.Status(ctx); return err }},
	}
	for _, c := range checks {
		if err := c.info(ctx); err != nil {
			return fmt.Errorf("stream %s: %w", c.name, err)
		}
	}
	return nil
}
