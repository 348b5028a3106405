package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
)

// pageEntries is the number of entries per page of the entry cache: page
// k of a run holds the entries with Seq k*pageEntries+1 to
// (k+1)*pageEntries.
const pageEntries = 64

// DefaultEntryCacheBytes is Config.EntryCacheBytes when it is zero.
const DefaultEntryCacheBytes = 64 << 20

// entryOverhead is what an entry costs in a page besides its strings.
const entryOverhead = int(unsafe.Sizeof(record.Entry{}))

// page is a run's entries from Seq first() on: a prefix of its page of the
// log (the whole page, or fewer entries while the run is still filling
// it). Its entries never change once made: a longer page replaces it.
type page struct {
	run     string
	no      uint64
	entries []record.Entry
	bytes   int
	// prev and next link the cache's LRU list; guarded by entryCache.mu.
	prev, next *page
}

func newPage(run string, no uint64, entries []record.Entry) *page {
	if cap(entries) > len(entries) {
		// A page read from the store comes in a slice grown by append
		// (room for 16 entries when it holds 10): keep only the entries,
		// since an idle run's last page stays cached, and bytes counts
		// them alone.
		entries = append(make([]record.Entry, 0, len(entries)), entries...)
	}
	p := &page{run: run, no: no, entries: entries, bytes: 128 + len(run)}
	for i := range entries {
		p.bytes += entryOverhead + len(entries[i].Type) + len(entries[i].Phase) + len(entries[i].Data)
	}
	return p
}

func (p *page) first() uint64 { return p.no*pageEntries + 1 }

// has reports whether p holds the entry seq.
func (p *page) has(seq uint64) bool {
	return seq >= p.first() && seq-p.first() < uint64(len(p.entries))
}

// entryCache holds pages of entries of every run the executor drives, up
// to a byte budget shared by all runs, evicting the least recently used
// page first. It is safe for concurrent use. A run's log is append-only
// and its entries never change, so a cached page is never stale: at worst
// it is shorter than the log, and a read past its end reads the store.
type entryCache struct {
	budget int

	mu   sync.Mutex
	used int                         // bytes of the cached pages; guarded by mu
	runs map[string]map[uint64]*page // guarded by mu
	lru  page                        // sentinel: lru.next is the newest page; guarded by mu
	// counters, guarded by mu
	hits, misses, evictions uint64
}

func newEntryCache(budget int) *entryCache {
	c := &entryCache{budget: budget, runs: make(map[string]map[uint64]*page)}
	c.lru.next, c.lru.prev = &c.lru, &c.lru
	return c
}

// get returns the cached page no of run if it holds seq, or nil.
func (c *entryCache) get(run string, no, seq uint64) *page {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.runs[run][no]
	if p == nil || !p.has(seq) {
		c.misses++
		return nil
	}
	c.hits++
	c.unlink(p)
	c.pushFront(p)
	return p
}

// put caches p unless a page at least as long is cached already, then
// evicts pages, oldest use first, until the budget holds (p included: the
// caller keeps its pointer, so a page bigger than the budget is still
// read, just not kept).
func (c *entryCache) put(p *page) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pages := c.runs[p.run]
	if old := pages[p.no]; old != nil {
		if len(old.entries) >= len(p.entries) {
			return
		}
		c.remove(old)
	}
	if pages == nil {
		pages = make(map[uint64]*page)
		c.runs[p.run] = pages
	}
	pages[p.no] = p
	c.used += p.bytes
	c.pushFront(p)
	for c.used > c.budget && c.lru.prev != &c.lru {
		c.remove(c.lru.prev)
		c.evictions++
	}
}

// peek returns the cached page no of run without counting a use, or nil.
func (c *entryCache) peek(run string, no uint64) *page {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[run][no]
}

// appended caches entries that a commit just added to run's log, whose
// previous length was before: they extend the cached last page (when it
// is cached) and fill new pages. The newest entries are what the next
// phase reads first.
func (c *entryCache) appended(run string, before uint64, entries []record.Entry) {
	for len(entries) > 0 {
		no := before / pageEntries
		room := int(pageEntries - before%pageEntries)
		n := min(room, len(entries))
		var prefix []record.Entry
		if before%pageEntries != 0 {
			old := c.peek(run, no)
			if old == nil || old.first()+uint64(len(old.entries)) != before+1 {
				// The start of the page is not cached: skip it; a read
				// fetches the whole page from the store.
				before += uint64(n)
				entries = entries[n:]
				continue
			}
			prefix = old.entries
		}
		es := make([]record.Entry, 0, len(prefix)+n)
		es = append(append(es, prefix...), entries[:n]...)
		c.put(newPage(run, no, es))
		before += uint64(n)
		entries = entries[n:]
	}
}

// drop forgets the pages of run (it ended).
func (c *entryCache) drop(run string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.runs[run] {
		c.unlink(p)
		c.used -= p.bytes
	}
	delete(c.runs, run)
}

// remove unlinks p and forgets it; c.mu is held.
func (c *entryCache) remove(p *page) {
	c.unlink(p)
	c.used -= p.bytes
	if pages := c.runs[p.run]; pages != nil {
		delete(pages, p.no)
		if len(pages) == 0 {
			delete(c.runs, p.run)
		}
	}
}

func (c *entryCache) unlink(p *page) {
	p.prev.next, p.next.prev = p.next, p.prev
	p.prev, p.next = nil, nil
}

func (c *entryCache) pushFront(p *page) {
	p.prev, p.next = &c.lru, c.lru.next
	c.lru.next.prev = p
	c.lru.next = p
}

// EntryCacheStats describes the executor's cache of entries.
type EntryCacheStats struct {
	// Bytes is the estimated size of the cached pages; Budget its cap.
	Bytes, Budget int
	// Pages and Runs count the cached pages and the runs they belong to.
	Pages, Runs int
	// Hits, Misses and Evictions count page look-ups and evictions.
	Hits, Misses, Evictions uint64
}

func (c *entryCache) stats() EntryCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := EntryCacheStats{Bytes: c.used, Budget: c.budget, Runs: len(c.runs),
		Hits: c.hits, Misses: c.misses, Evictions: c.evictions}
	for _, pages := range c.runs {
		s.Pages += len(pages)
	}
	return s
}

// EntryCacheStats reports the state of the cache of entries that the
// phases' and handlers' views of a run's log read through.
func (e *Executor) EntryCacheStats() EntryCacheStats { return e.cache.stats() }

// view returns a read-only snapshot of the run's state as of now: its
// head and the first head.Entries entries of its log, read through the
// executor's entry cache. Nothing appends to the run's log while a view
// is in use (only the drive goroutine commits entries, between phase
// calls and after the step's operations), so the snapshot is consistent.
func (r *runner) view() *view {
	h := r.head
	return &view{head: &h, n: int(h.Entries), seconds: r.seconds(), ctx: r.ctx, store: r.e.store, cache: r.e.cache}
}

// view is the read-only state a phase (or an operation's handler) sees.
//
// Entry pages the run's log from the store through the entry cache, so a
// run holds no entries of its own. Reading entry i gives the entry with Seq
// i+1 or nothing: when the store cannot be read (or returns something else
// than that entry), Entry returns the zero Entry and the view records the
// error; the executor checks it when the phase (handler) returns and then
// discards the phase's output (the handler's result) and treats the step
// as interrupted by a store failure, like a failed commit (see doc.go). A
// phase therefore never has output committed that was computed from a
// misread entry.
type view struct {
	head    *state.Run
	n       int
	seconds float64

	ctx   context.Context
	store state.Reader
	cache *entryCache
	cur   atomic.Pointer[page] // the page read last

	mu  sync.Mutex
	err error // the first read error; guarded by mu
}

func (v *view) Var(name string) json.RawMessage { return v.head.Vars[name] }
func (v *view) Len() int                        { return v.n }
func (v *view) Usage() (operations.RunUsage, operations.RunLimits) {
	u := v.head.Usage
	u.Seconds = v.seconds
	return u, v.head.Limits
}

// Entry returns entry i (Seq i+1). An i out of range panics, as indexing a
// slice does (a bug in the phase, which the executor reports).
func (v *view) Entry(i int) record.Entry {
	if i < 0 || i >= v.n {
		panic(fmt.Sprintf("phases.State.Entry(%d): index out of range [0, %d)", i, v.n))
	}
	seq := uint64(i) + 1
	if p := v.cur.Load(); p != nil && p.has(seq) {
		return p.entries[seq-p.first()]
	}
	p, err := v.page(seq)
	if err != nil {
		v.fail(fmt.Errorf("%w: read entry %d of run %s: %w", errStore, seq, v.head.ID, err))
		return record.Entry{}
	}
	v.cur.Store(p)
	return p.entries[seq-p.first()]
}

// page returns the page holding seq, from the cache or the store.
func (v *view) page(seq uint64) (*page, error) {
	id := v.head.ID
	no := (seq - 1) / pageEntries
	if p := v.cache.get(id, no, seq); p != nil {
		return p, nil
	}
	first := no*pageEntries + 1
	got, err := v.store.Entries(v.ctx, id, first-1, pageEntries)
	if err != nil {
		return nil, err
	}
	for k := range got {
		if got[k].Seq != first+uint64(k) {
			return nil, fmt.Errorf("%w: the store returned entry %d where %d belongs", state.ErrCorrupt, got[k].Seq, first+uint64(k))
		}
	}
	p := newPage(id, no, got)
	if !p.has(seq) {
		return nil, fmt.Errorf("%w: the log ends at entry %d, the head counts %d", state.ErrCorrupt, first+uint64(len(got))-1, v.n)
	}
	v.cache.put(p)
	return p, nil
}

func (v *view) fail(err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.err == nil {
		v.err = err
	}
}

// Err returns the first error of a read of the log, or nil.
func (v *view) Err() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.err
}

var _ phases.State = (*view)(nil)
