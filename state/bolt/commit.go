package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strconv"

	bbolt "go.etcd.io/bbolt"

	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
)

// commitReq is a Commit encoded by its caller and queued for the committer.
// Encoding happens in the calling goroutine, so the single committer only
// validates against stored state and puts bytes.
type commitReq struct {
	c       *state.Commit
	head    []byte       // encoded head with Revision 0, nil if c.Run is nil (see headWithRevision)
	status  state.Status // head status, for the unfinished index
	parent  string       // head parent, for the children index
	spec    []byte       // encoded spec, nil if c.Spec is nil
	entries [][]byte     // encoded entries, in order
	opKeys  [][]byte
	ops     [][]byte      // encoded ops, parallel to opKeys
	chunks  []state.Chunk // message chunks the ops refer to (put if absent)
	// results holds, per op of c.Ops, the encoded result record of a done
	// op (nil for a pending op, whose request record is in ops).
	results [][]byte
	// doneOps are the normalized done ops, in order, for the fallback in write.
	doneOps []state.Op
	events  [][]byte // encoded events with Seq 0 (see eventWithSeq)
	size    int      // bytes of the above, for the batch budget

	firstEvent uint64     // Seq of the first event, set when applied
	revision   uint64     // the head's new revision, set when applied
	done       chan error // buffered; receives the outcome once
}

// Commit applies c atomically and durably: when it returns nil, the change
// is fsynced. It validates and encodes c in the calling goroutine, then
// queues it for the committer, which may apply it in one transaction with
// other queued commits; a lone commit is applied at once.
//
// Entries must continue the stored log (first Seq = last stored Seq + 1,
// then contiguous), otherwise Commit fails with an error wrapping
// ErrConflict and writes nothing; a retried commit is detected that way.
// Writing the Spec of a run whose spec is stored also fails with
// ErrConflict. Events get Seq = last stored + 1, ...; the numbers are
// written back into c.Events when Commit returns nil (on error they are
// left unchanged). The head is stored with Schema = SchemaVersion if 0.
//
// ctx is honoured until the commit is queued (ctx.Err() is returned then
// and nothing is written); once queued, Commit waits for the outcome so
// that the caller always knows whether the commit was applied. After
// Close, Commit fails with ErrClosed. The committer does not retain c after
// Commit returns.
func (s *Store) Commit(ctx context.Context, c *state.Commit) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.isClosed.Load() {
		return state.ErrClosed
	}
	if s.opts.ReadOnly {
		return fmt.Errorf("commit to run %s: %s: %w", c.RunID, s.path, state.ErrReadOnly)
	}
	r, err := encodeCommit(c)
	if err != nil {
		s.rejected.Add(1)
		return err
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return state.ErrClosed
	}
	select {
	case s.reqs <- r:
	case <-ctx.Done():
		s.mu.RUnlock()
		return ctx.Err()
	}
	s.mu.RUnlock()
	return <-r.done
}

// encodeCommit checks what can be checked without stored state and
// encodes c.
func encodeCommit(c *state.Commit) (*commitReq, error) {
	if err := state.CheckCommitRun(c); err != nil {
		return nil, err
	}
	id := c.RunID
	r := &commitReq{c: c, done: make(chan error, 1)}
	if c.Run != nil {
		h, err := state.CommitHead(c)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(&h)
		if err != nil {
			return nil, fmt.Errorf("commit to run %s: encode head: %w", id, err)
		}
		if !bytes.HasPrefix(b, schemaPrefix) {
			return nil, fmt.Errorf("commit to run %s: head encodes without a leading schema", id)
		}
		r.head, r.status, r.parent = b, h.Status, h.ParentID
		r.size += len(b)
	}
	if c.Spec != nil {
		b, err := json.Marshal(c.Spec)
		if err != nil {
			return nil, fmt.Errorf("commit to run %s: encode spec: %w", id, err)
		}
		r.spec = b
		r.size += len(b)
	}
	if err := state.CheckEntrySeqs(id, c.Entries); err != nil {
		return nil, err
	}
	if len(c.Entries) > 0 {
		r.entries = make([][]byte, len(c.Entries))
		for i := range c.Entries {
			e := &c.Entries[i]
			b, err := record.Marshal(e) // no HTML escaping: raw JSON in entries reads back byte for byte
			if err != nil {
				return nil, fmt.Errorf("commit to run %s: encode entry %d: %w", id, e.Seq, err)
			}
			r.entries[i] = b
			r.size += len(b) + len(id) + 9
		}
	}
	if len(c.Ops) > 0 {
		r.opKeys = make([][]byte, len(c.Ops))
		r.ops = make([][]byte, len(c.Ops))
		r.results = make([][]byte, len(c.Ops))
		for i := range c.Ops {
			op, err := state.CommitOp(id, c.Ops[i])
			if err != nil {
				return nil, err
			}
			r.opKeys[i] = opKey(id, op.Step, uint32(op.Index))
			if op.Status == state.OpDone {
				// The request was journaled with the op as pending: write
				// only what completion adds (see write for the fallback).
				b, chunks, err := state.EncodeResult(op)
				if err != nil {
					return nil, fmt.Errorf("commit to run %s: encode result of op %s: %w", id, op.ID, err)
				}
				r.chunks = append(r.chunks, chunks...)
				for _, ch := range chunks {
					r.size += len(ch.Key) + len(ch.Val)
				}
				r.results[i] = b
				r.doneOps = append(r.doneOps, op)
				r.size += len(b) + len(r.opKeys[i])
				continue
			}
			b, chunks, err := state.EncodeRequest(op)
			if err != nil {
				return nil, fmt.Errorf("commit to run %s: encode op %s: %w", id, op.ID, err)
			}
			r.chunks = append(r.chunks, chunks...)
			for _, ch := range chunks {
				r.size += len(ch.Key) + len(ch.Val)
			}
			r.ops[i] = b
			r.size += len(b) + len(r.opKeys[i])
		}
	}
	if len(c.Events) > 0 {
		r.events = make([][]byte, len(c.Events))
		for i := range c.Events {
			ev := c.Events[i]
			ev.Seq = 0
			b, err := json.Marshal(&ev)
			if err != nil {
				return nil, fmt.Errorf("commit to run %s: encode event %d: %w", id, i, err)
			}
			if !bytes.HasPrefix(b, zeroSeqPrefix) {
				return nil, fmt.Errorf("commit to run %s: event %d encodes without a leading seq", id, i)
			}
			r.events[i] = b
			r.size += len(b) + len(id) + 9 + 20
		}
	}
	return r, nil
}

// commitLoop is the committer goroutine. It exits when reqs is closed and
// drained, after answering every request it received.
func (s *Store) commitLoop() {
	defer close(s.done)
	batch := make([]*commitReq, 0, s.opts.MaxBatchCommits)
	for {
		r, ok := <-s.reqs
		if !ok {
			return
		}
		batch = append(batch[:0], r)
		size := r.size
	drain:
		for len(batch) < s.opts.MaxBatchCommits && size < s.opts.MaxBatchBytes {
			select {
			case r, ok := <-s.reqs:
				if !ok {
					break drain // closed: apply this batch, then exit
				}
				batch = append(batch, r)
				size += r.size
			default:
				break drain // nothing else queued: do not wait for company
			}
		}
		s.applyBatch(batch)
		clear(batch)
	}
}

// buckets are the buckets of one write transaction.
type buckets struct {
	runs, specs, entries, ops, events, unfinished, children, blobs, results *bbolt.Bucket
}

// applyBatch applies batch in one transaction and answers each request.
//
// Isolation strategy: each commit is validated against stored state (and
// the commits before it in the same transaction, which the transaction
// sees) before any of its keys is written, so a commit that fails
// validation writes nothing and only its caller gets the error. If a write
// itself fails afterwards (not expected once validated: keys are bounded),
// the whole transaction is rolled back and the batch is retried one commit
// per transaction, so again only the culprit fails.
func (s *Store) applyBatch(batch []*commitReq) {
	errs := make([]error, len(batch))
	writeFailed, err := s.update(batch, errs)
	if err != nil && writeFailed && len(batch) > 1 {
		for i, r := range batch {
			one := errs[i : i+1]
			if _, err := s.update([]*commitReq{r}, one); err != nil {
				one[0] = err
			}
		}
	} else if err != nil {
		for i := range errs {
			errs[i] = err
		}
	}
	for i, r := range batch {
		if errs[i] == nil {
			for j := range r.c.Events {
				r.c.Events[j].Seq = r.firstEvent + uint64(j)
			}
			if r.c.Run != nil {
				r.c.Run.Revision = r.revision
			}
			s.commits.Add(1)
		} else {
			s.rejected.Add(1)
		}
		r.done <- errs[i]
	}
}

// classify marks a failed transaction's error with ErrNoSpace when the
// disk was full, naming the file, so that callers can wait and retry.
func (s *Store) classify(err error) error {
	if err == nil {
		return nil
	}
	if state.IsNoSpace(err) {
		return state.NoSpace(s.path, err)
	}
	return err
}

// update runs one write transaction over batch, storing per-commit
// validation errors in errs. It reports whether a write failed (the
// transaction was then rolled back) and the transaction's error.
func (s *Store) update(batch []*commitReq, errs []error) (writeFailed bool, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			writeFailed = false
			err = fmt.Errorf("commit: panic in bbolt transaction: %v\n%s", p, debug.Stack())
		}
	}()
	var written uint64
	err = s.db.Update(func(tx *bbolt.Tx) error {
		b := buckets{
			runs:       tx.Bucket(bucketRuns),
			specs:      tx.Bucket(bucketSpecs),
			entries:    tx.Bucket(bucketEntries),
			ops:        tx.Bucket(bucketOps),
			events:     tx.Bucket(bucketEvents),
			unfinished: tx.Bucket(bucketUnfinished),
			children:   tx.Bucket(bucketChildren),
			blobs:      tx.Bucket(bucketBlobs),
			results:    tx.Bucket(bucketResults),
		}
		for i, r := range batch {
			if errs[i] = validate(&b, r); errs[i] != nil {
				continue
			}
			n, err := write(&b, r)
			if err != nil {
				writeFailed = true
				errs[i] = err
				return err
			}
			written += n
		}
		return nil
	})
	if err == nil {
		s.txs.Add(1)
		s.bytes.Add(written)
	}
	return writeFailed, s.classify(err)
}

// validate checks r against stored state without writing. It also assigns
// the Seq of r's first event and the head's new revision.
func validate(b *buckets, r *commitReq) error {
	id := r.c.RunID
	if r.head != nil || r.c.ExpectRevision != 0 {
		var stored uint64
		if v := b.runs.Get([]byte(id)); v != nil {
			var err error
			if stored, err = headRevision(v); err != nil {
				return fmt.Errorf("%w: run %s: read head revision: %v", state.ErrCorrupt, id, err)
			}
		}
		if want := r.c.ExpectRevision; want != 0 && want != stored {
			return fmt.Errorf("%w: run %s: expected head revision %d, stored %d", state.ErrFenced, id, want, stored)
		}
		r.revision = stored + 1
	}
	if len(r.entries) > 0 {
		last := lastSeq(b.entries, id)
		if first := r.c.Entries[0].Seq; first != last+1 {
			return fmt.Errorf("%w: run %s: entries start at seq %d but the stored log ends at %d", state.ErrConflict, id, first, last)
		}
	}
	if r.spec != nil && b.specs.Get([]byte(id)) != nil {
		return fmt.Errorf("%w: run %s: spec already stored", state.ErrConflict, id)
	}
	if len(r.events) > 0 {
		r.firstEvent = lastSeq(b.events, id) + 1
	}
	return nil
}

// write puts r's records and maintains the indexes. It returns the bytes
// put.
func write(b *buckets, r *commitReq) (uint64, error) {
	id := r.c.RunID
	key := []byte(id)
	var n int
	put := func(bk *bbolt.Bucket, k, v []byte) error {
		n += len(k) + len(v)
		return bk.Put(k, v)
	}
	if r.head != nil {
		if err := put(b.runs, key, headWithRevision(r.head, r.revision)); err != nil {
			return 0, fmt.Errorf("put head of %s: %w", id, err)
		}
		in := b.unfinished.Get(key) != nil
		switch {
		case !r.status.Terminal() && !in:
			if err := put(b.unfinished, key, nil); err != nil {
				return 0, fmt.Errorf("index unfinished %s: %w", id, err)
			}
		case r.status.Terminal() && in:
			if err := b.unfinished.Delete(key); err != nil {
				return 0, fmt.Errorf("unindex unfinished %s: %w", id, err)
			}
		}
		if r.parent != "" {
			ck := childKey(r.parent, id)
			if b.children.Get(ck) == nil {
				if err := put(b.children, ck, nil); err != nil {
					return 0, fmt.Errorf("index child %s: %w", id, err)
				}
			}
		}
	}
	if r.spec != nil {
		if err := put(b.specs, key, r.spec); err != nil {
			return 0, fmt.Errorf("put spec of %s: %w", id, err)
		}
	}
	for i, v := range r.entries {
		if err := put(b.entries, seqKey(id, r.c.Entries[i].Seq), v); err != nil {
			return 0, fmt.Errorf("put entry of %s: %w", id, err)
		}
	}
	for _, ch := range r.chunks {
		if b.blobs.Get(ch.Key) == nil {
			if err := put(b.blobs, ch.Key, ch.Val); err != nil {
				return 0, fmt.Errorf("put blob of %s: %w", id, err)
			}
		}
	}
	nextDone := 0
	for i, key := range r.opKeys {
		if v := r.ops[i]; v != nil { // pending: the request record, no result yet
			if err := put(b.ops, key, v); err != nil {
				return 0, fmt.Errorf("put op of %s: %w", id, err)
			}
			if b.results.Get(key) != nil {
				if err := b.results.Delete(key); err != nil {
					return 0, fmt.Errorf("reset result of %s: %w", id, err)
				}
			}
			continue
		}
		op := r.doneOps[nextDone]
		nextDone++
		if b.ops.Get(key) == nil {
			// Done without having been journaled pending (not what the
			// executor does): write the request record too.
			v, chunks, err := state.EncodeRequest(op)
			if err != nil {
				return 0, fmt.Errorf("encode op of %s: %w", id, err)
			}
			for _, ch := range chunks {
				if b.blobs.Get(ch.Key) == nil {
					if err := put(b.blobs, ch.Key, ch.Val); err != nil {
						return 0, fmt.Errorf("put blob of %s: %w", id, err)
					}
				}
			}
			if err := put(b.ops, key, v); err != nil {
				return 0, fmt.Errorf("put op of %s: %w", id, err)
			}
		}
		if err := put(b.results, key, r.results[i]); err != nil {
			return 0, fmt.Errorf("put result of %s: %w", id, err)
		}
	}
	for i, v := range r.events {
		seq := r.firstEvent + uint64(i)
		if err := put(b.events, seqKey(id, seq), eventWithSeq(v, seq)); err != nil {
			return 0, fmt.Errorf("put event of %s: %w", id, err)
		}
	}
	return uint64(n), nil
}

// zeroSeqPrefix is how an Event with Seq 0 encodes: Seq is the first field.
var zeroSeqPrefix = []byte(`{"seq":0`)

// eventWithSeq returns enc (an Event encoded with Seq 0) with seq put in,
// without decoding it again.
func eventWithSeq(enc []byte, seq uint64) []byte {
	rest := enc[len(zeroSeqPrefix):]
	out := make([]byte, 0, len(enc)+20)
	out = append(out, `{"seq":`...)
	out = strconv.AppendUint(out, seq, 10)
	return append(out, rest...)
}

// lastSeq returns the largest seq stored under run's prefix in bk (an
// entries or events bucket), or 0.
func lastSeq(bk *bbolt.Bucket, run string) uint64 {
	c := bk.Cursor()
	// Every key of run is run\x00..., which sorts before run\x01.
	end := append([]byte(run), 1)
	k, _ := c.Seek(end)
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	p := len(run) + 1
	if len(k) != p+8 || k[p-1] != 0 || string(k[:p-1]) != run {
		return 0
	}
	return binary.BigEndian.Uint64(k[p:])
}

// schemaPrefix is how every head encodes: Schema is the first field, and
// Revision (omitted when 0) the second.
var schemaPrefix = []byte(`{"schema":`)

// revisionField is what follows the schema number in a head with a
// revision.
var revisionField = []byte(`,"revision":`)

// headWithRevision returns enc (a head encoded with Revision 0, so without
// the field) with rev put in after the schema, without encoding it again.
func headWithRevision(enc []byte, rev uint64) []byte {
	i := len(schemaPrefix)
	for i < len(enc) && enc[i] >= '0' && enc[i] <= '9' {
		i++
	}
	out := make([]byte, 0, len(enc)+len(revisionField)+20)
	out = append(out, enc[:i]...)
	out = append(out, revisionField...)
	out = strconv.AppendUint(out, rev, 10)
	return append(out, enc[i:]...)
}

// headRevision reads the Revision of a stored head without decoding the
// rest. A head without the field (written before revisions existed) has
// revision 0.
func headRevision(v []byte) (uint64, error) {
	if !bytes.HasPrefix(v, schemaPrefix) {
		var h struct {
			Revision uint64 `json:"revision"`
		}
		if err := json.Unmarshal(v, &h); err != nil {
			return 0, err
		}
		return h.Revision, nil
	}
	i := len(schemaPrefix)
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	rest := v[i:]
	if !bytes.HasPrefix(rest, revisionField) {
		return 0, nil
	}
	rest = rest[len(revisionField):]
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	return strconv.ParseUint(string(rest[:j]), 10, 64)
}
