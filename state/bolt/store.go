package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/flockrun/flock/state"
)

// Bucket names of the bbolt layout. Keys of the per-run logs start with the
// run ID and a 0x00 byte, so one run's records are contiguous and ordered.
var (
	bucketMeta       = []byte("meta")       // "schema" -> big-endian uint64
	bucketRuns       = []byte("runs")       // run id -> Run JSON
	bucketSpecs      = []byte("specs")      // run id -> Spec JSON
	bucketEntries    = []byte("entries")    // run \x00 be64(seq) -> record.Entry JSON
	bucketOps        = []byte("ops")        // run \x00 be64(step) be32(index) -> request record (see opcodec.go)
	bucketEvents     = []byte("events")     // run \x00 be64(seq) -> Event JSON
	bucketUnfinished = []byte("unfinished") // run id -> empty, for running and paused runs
	bucketChildren   = []byte("children")   // parent \x00 child -> empty
	bucketBlobs      = []byte("blobs")      // Chunk.Key -> Chunk.Val (see opcodec.go)
	bucketResults    = []byte("results")    // op key -> result record (see opcodec.go)

	allBuckets = [][]byte{bucketMeta, bucketRuns, bucketSpecs, bucketEntries, bucketOps,
		bucketEvents, bucketUnfinished, bucketChildren, bucketBlobs, bucketResults}

	keySchema = []byte("schema")
)

// Defaults of Options.
const (
	DefaultTimeout         = 2 * time.Second
	DefaultMaxBatchCommits = 1000
	DefaultMaxBatchBytes   = 8 << 20
)

// Options configures Open. The zero value gives the defaults.
type Options struct {
	// Timeout bounds the wait for the file lock when another process holds
	// the data file. Default DefaultTimeout (2s); it is never infinite.
	Timeout time.Duration
	// MaxBatchCommits caps how many queued commits share one transaction.
	// Default DefaultMaxBatchCommits (1000).
	MaxBatchCommits int
	// MaxBatchBytes caps the encoded bytes of one transaction's commits; the
	// commit that crosses the cap is still included. Default
	// DefaultMaxBatchBytes (8 MiB).
	MaxBatchBytes int
	// InitialMmapSize is passed to bbolt (0 = bbolt's default). A large value
	// avoids remapping, which blocks writers while readers are open.
	InitialMmapSize int
	// PageSize is the page size of a new file (0 = the OS page size).
	// An existing file keeps the page size it was created with. Small pages
	// cut the bytes written by commits that touch many runs' scattered
	// records; values larger than a page spill into overflow pages.
	PageSize int
	// NoSync skips the fsync of every commit, as bbolt's Options.NoSync.
	// THIS IS UNSAFE: a crash or power loss can lose or corrupt what was
	// committed. Only for bulk loads of data that can be rebuilt (seeding
	// benchmark stores); Close still syncs the file.
	NoSync bool
	// ReadOnly opens an existing file for reading only, under a shared
	// lock: any number of read-only opens may hold the file at once, none
	// while a process has it open for writing (that one's lock makes the
	// open fail with ErrInUse after Timeout). Commits fail with
	// ErrReadOnly. A missing file is an error wrapping fs.ErrNotExist.
	ReadOnly bool
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBatchCommits <= 0 {
		o.MaxBatchCommits = DefaultMaxBatchCommits
	}
	if o.MaxBatchBytes <= 0 {
		o.MaxBatchBytes = DefaultMaxBatchBytes
	}
	return o
}

// Store is the embedded Store on a bbolt file.
//
// Writes go through one committer goroutine owned by the store: it takes
// the first queued commit, adds whatever else is already queued without
// waiting, applies them all in one bbolt transaction (one fsync) and then
// answers every caller. A lone commit therefore costs one transaction and
// never waits for a timer; under load, many runs share each fsync.
//
// Reads use bbolt read transactions and may run concurrently with the
// committer. All methods are safe for concurrent use.
type Store struct {
	db   *bbolt.DB
	path string
	opts Options

	// mu guards closed and the send side of reqs: Commit holds it for
	// reading while it enqueues, Close for writing while it closes reqs.
	mu     sync.RWMutex
	closed bool // guarded by mu

	isClosed atomic.Bool // mirrors closed for lock-free checks by readers

	reqs chan *commitReq // owned by the committer
	done chan struct{}   // closed when the committer has exited

	// leases are the runs' leases, kept in memory: the file is locked by
	// one process, so every owner is in this process, and after a crash
	// no one holds a lease.
	leaseMu sync.Mutex
	leases  map[string]state.Lease // by run id; guarded by leaseMu
	now     func() time.Time       // the lease clock

	commits  atomic.Uint64
	rejected atomic.Uint64
	txs      atomic.Uint64
	bytes    atomic.Uint64
}

// Stats are the counters of a Store (Stats); PageBytes counts
// the pages bbolt allocated to write transactions (copy-on-write: every
// modified leaf and its branch path), the physical write volume except
// meta pages.
type Stats = state.Stats

// Open opens or creates the bbolt file at path (creating its parent
// directory) and starts the store's committer. If another process holds
// the file, it fails after opts.Timeout with an error wrapping ErrInUse.
// A file written by a newer schema fails with an error wrapping ErrSchema.
// The caller must Close the store.
func Open(path string, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	if opts.ReadOnly {
		// A reader neither creates the file nor rebuilds its free list, so
		// bbolt does not walk the tree at open: no preflight scan either.
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			return nil, fmt.Errorf("create data directory: %w", err)
		}
		if err := preflight(path); err != nil {
			return nil, err
		}
	}
	var db *bbolt.DB
	err := safely(path, func() (err error) {
		db, err = bbolt.Open(path, 0o600, &bbolt.Options{
			Timeout:      opts.Timeout,
			FreelistType: bbolt.FreelistMapType,
			// The freelist is not written on every commit; bbolt rebuilds it by
			// scanning the file when it opens after a crash. Safe, and it keeps
			// large free lists off every fsync.
			NoFreelistSync:  true,
			InitialMmapSize: opts.InitialMmapSize,
			PageSize:        opts.PageSize,
			NoSync:          opts.NoSync,
			ReadOnly:        opts.ReadOnly,
		})
		return err
	})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("open %s: %w (lock not acquired within %s)", path, state.ErrInUse, opts.Timeout)
	}
	if errors.Is(err, state.ErrCorrupt) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	initOrCheck := func() error { return db.Update(initSchema) }
	if opts.ReadOnly {
		initOrCheck = func() error { return db.View(checkSchema) }
	}
	if err := safely(path, initOrCheck); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	s := &Store{
		db:     db,
		path:   path,
		opts:   opts,
		reqs:   make(chan *commitReq, opts.MaxBatchCommits),
		done:   make(chan struct{}),
		leases: make(map[string]state.Lease),
		now:    time.Now,
	}
	go s.commitLoop()
	return s, nil
}

// preflight refuses a damaged file before bbolt maps it: bbolt trusts its
// pages and, opening a file written with NoFreelistSync, walks the whole
// tree in a goroutine of its own where damage panics or faults beyond any
// recover. A missing or empty file passes (bbolt creates the database).
// The walk reads every reachable page once (see docs/benchmarks.md).
func preflight(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && fi.Size() == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("open %s: not a regular file", path)
	}
	res, err := scanFile(path, nil)
	if err != nil {
		return fmt.Errorf("%s: %w: %s", path, state.ErrCorrupt, describeScanFailure(res, err))
	}
	switch n := len(res.problems); {
	case n == 1:
		return fmt.Errorf("%s: %w: %s", path, state.ErrCorrupt, res.problems[0])
	case n > 1:
		return fmt.Errorf("%s: %w: %s (and %d more problems)", path, state.ErrCorrupt, res.problems[0], n-1)
	}
	return nil
}

// safely runs fn, which reads or writes the mapped file, turning a panic
// or a memory fault (a page of a file truncated under us) into an error
// wrapping ErrCorrupt. bbolt panics on pages it cannot make sense of.
func safely(path string, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: %w: %v", path, state.ErrCorrupt, p)
		}
	}()
	return fn()
}

// initSchema creates the buckets and checks or records the schema version.
func initSchema(tx *bbolt.Tx) error {
	for _, name := range allBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	meta := tx.Bucket(bucketMeta)
	if v := meta.Get(keySchema); len(v) == 8 {
		stored := binary.BigEndian.Uint64(v)
		if stored > state.SchemaVersion {
			return fmt.Errorf("%w: data file has schema %d, this build reads up to %d", state.ErrSchema, stored, state.SchemaVersion)
		}
		if stored == state.SchemaVersion {
			return nil
		}
	} else if v != nil {
		return fmt.Errorf("%w: malformed schema record %q", state.ErrSchema, v)
	}
	// New file or older schema: records are migrated when read (Migrate).
	return meta.Put(keySchema, binary.BigEndian.AppendUint64(nil, state.SchemaVersion))
}

// checkSchema refuses, for a read-only open, a file that is not a flock
// database or was written by a newer schema.
func checkSchema(tx *bbolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return fmt.Errorf("%w: no %s bucket: not a flock database", state.ErrSchema, bucketMeta)
	}
	v := meta.Get(keySchema)
	if len(v) != 8 {
		return fmt.Errorf("%w: malformed schema record %q", state.ErrSchema, v)
	}
	if stored := binary.BigEndian.Uint64(v); stored > state.SchemaVersion {
		return fmt.Errorf("%w: data file has schema %d, this build reads up to %d", state.ErrSchema, stored, state.SchemaVersion)
	}
	return nil
}

// Path returns the file the store was opened on.
func (s *Store) Path() string { return s.path }

// Close stops accepting commits, applies and answers every commit already
// queued, waits for the committer to exit and closes the file. Commits and
// reads after Close fail with ErrClosed. Close is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.isClosed.Store(true)
	close(s.reqs)
	s.mu.Unlock()
	<-s.done
	if s.opts.NoSync {
		if err := s.db.Sync(); err != nil {
			return errors.Join(fmt.Errorf("sync %s: %w", s.path, err), s.db.Close())
		}
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close %s: %w", s.path, err)
	}
	return nil
}

// Stats returns the store's counters. It is safe to call at any time,
// including after Close (PageBytes is then 0).
func (s *Store) Stats() Stats {
	st := Stats{
		Commits:  s.commits.Load(),
		Rejected: s.rejected.Load(),
		Txs:      s.txs.Load(),
		Bytes:    s.bytes.Load(),
	}
	if !s.isClosed.Load() {
		ds := s.db.Stats()
		st.PageBytes = ds.TxStats.GetPageAlloc()
	}
	return st
}

// runPrefix returns run + 0x00, the prefix of the run's log keys.
func runPrefix(run string) []byte {
	k := make([]byte, 0, len(run)+1+12)
	k = append(k, run...)
	return append(k, 0)
}

// seqKey is the key of entry or event seq of run.
func seqKey(run string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(runPrefix(run), seq)
}

// opKey is the key of operation (step, index) of run.
func opKey(run string, step uint64, index uint32) []byte {
	k := binary.BigEndian.AppendUint64(runPrefix(run), step)
	return binary.BigEndian.AppendUint32(k, index)
}

// childKey is the key of the children index for child of parent.
func childKey(parent, child string) []byte {
	return append(runPrefix(parent), child...)
}

var _ state.Store = (*Store)(nil)
