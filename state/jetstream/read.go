package jetstream

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
)

// FailoverReads returns a reader of the store that answers during a
// failover: each read asks the stream's leader first and, when the leader
// does not answer within Options.FailoverAfter, any current replica, which
// may not have the last few writes yet (see reader); listings read the
// index or every head from a replica the same way. It is what a cluster
// node's HTTP API reads with; the executor reads through the Store
// itself, from the leaders only.
func (s *Store) FailoverReads() state.Reader { return reader{s: s, failover: true} }

// strict returns the store's leader-only reader; the Store's reads are
// its strict reader's.
func (s *Store) strict() reader { return reader{s: s} }

// check fails with ctx's error or state.ErrClosed and, for a strict
// reader, waits for a store opened with Options.BindLater to be bound
// (Store.check). A failover reader does not wait: it reads with requests
// of its own, from a replica where the leader's handles are needed and
// not bound yet (a node restarted while the streams it led elect new
// leaders answers reads from the replicas meanwhile).
func (r reader) check(ctx context.Context) error {
	if !r.failover {
		return r.s.check(ctx)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if r.s.isClosed.Load() {
		return state.ErrClosed
	}
	return nil
}

// Run returns the head of run id, or an error wrapping state.ErrNotFound.
func (s *Store) Run(ctx context.Context, id string) (state.Run, error) {
	return s.strict().Run(ctx, id)
}

// Spec returns the task and settings of run id (state.Reader).
func (s *Store) Spec(ctx context.Context, id string) (state.Spec, error) {
	return s.strict().Spec(ctx, id)
}

// Entries returns entries of run id (state.Reader).
func (s *Store) Entries(ctx context.Context, id string, after uint64, limit int) ([]record.Entry, error) {
	return s.strict().Entries(ctx, id, after, limit)
}

// Events returns events of run id (state.Reader).
func (s *Store) Events(ctx context.Context, id string, after uint64, limit int) ([]state.Event, error) {
	return s.strict().Events(ctx, id, after, limit)
}

// StepOps returns the ops of one step of run id (state.Reader).
func (s *Store) StepOps(ctx context.Context, id string, step uint64) ([]state.Op, error) {
	return s.strict().StepOps(ctx, id, step)
}

// Ops returns ops of run id (state.Reader).
func (s *Store) Ops(ctx context.Context, id string, after string, limit int) ([]state.Op, error) {
	return s.strict().Ops(ctx, id, after, limit)
}

// CountRuns counts every run by status (state.RunCounter).
func (s *Store) CountRuns(ctx context.Context) (state.RunCounts, error) {
	return s.strict().CountRuns(ctx)
}

// Runs lists heads (state.Reader).
func (s *Store) Runs(ctx context.Context, f state.RunFilter) ([]state.Run, string, error) {
	return s.strict().Runs(ctx, f)
}

// Unfinished lists the heads of unfinished runs (state.Reader).
func (s *Store) Unfinished(ctx context.Context) ([]state.Run, error) {
	return s.strict().Unfinished(ctx)
}

// CountChildren counts run id's direct children (state.ChildCounter).
func (s *Store) CountChildren(ctx context.Context, id string) (int, error) {
	return s.strict().CountChildren(ctx, id)
}

// Children lists the IDs of run id's direct children (state.Reader).
func (s *Store) Children(ctx context.Context, id string) ([]string, error) {
	return s.strict().Children(ctx, id)
}

// envelope reads run id's envelope (an empty one for an unknown run).
func (r reader) envelope(ctx context.Context, id string) (*envelope, error) {
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	if err := state.CheckRunID(id); err != nil {
		// No run can have this id (the bbolt store answers the same).
		return nil, fmt.Errorf("%w: run %q: %v", state.ErrNotFound, id, err)
	}
	c, err := r.load(ctx, runKey(id))
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", id, unavailable(err))
	}
	return c.env, nil
}

// load reads run key's envelope from its heads bucket (an empty envelope
// at revision 0 for an unknown run). A strict read also refreshes the
// store's cache of envelopes.
func (r reader) load(ctx context.Context, key string) (cached, error) {
	sh := r.s.shardOf(key)
	m, err := r.get(ctx, sh.headStream, getReq{LastFor: sh.headsSubj + key})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return cached{env: &envelope{}}, nil
	}
	if err != nil {
		return cached{}, err
	}
	if op := m.Header.Get(kvOperation); op == "DEL" || op == "PURGE" {
		return cached{env: &envelope{}}, nil
	}
	env, err := decodeEnvelope(key, m.Data)
	if err != nil {
		return cached{}, err
	}
	c := cached{env: env, raw: m.Data, rev: m.Sequence}
	if !r.failover {
		r.s.remember(key, c)
	}
	return c, nil
}

// kvOperation is the header of a KV bucket's delete and purge markers.
const kvOperation = "KV-Operation"

// Run returns the head of run id, or an error wrapping state.ErrNotFound.
func (r reader) Run(ctx context.Context, id string) (state.Run, error) {
	env, err := r.envelope(ctx, id)
	if err != nil {
		return state.Run{}, err
	}
	h, ok, err := env.head(id)
	if err != nil {
		return state.Run{}, err
	}
	if !ok {
		return state.Run{}, fmt.Errorf("%w: %s", state.ErrNotFound, id)
	}
	return h, nil
}

// Spec returns the task and settings of run id, or an error wrapping
// state.ErrNotFound.
func (r reader) Spec(ctx context.Context, id string) (state.Spec, error) {
	env, err := r.envelope(ctx, id)
	if err != nil {
		return state.Spec{}, err
	}
	tip := env.tip(kindSpec)
	if tip == 0 {
		return state.Spec{}, fmt.Errorf("%w: spec of %s", state.ErrNotFound, id)
	}
	m, err := r.get(ctx, r.s.shardOf(runKey(id)).runsName, getReq{Seq: tip, committed: true})
	if err != nil {
		return state.Spec{}, fmt.Errorf("read spec of %s: %w", id, unavailable(err))
	}
	data, err := r.s.payload(ctx, m)
	if err != nil {
		return state.Spec{}, err
	}
	var sp state.Spec
	if err := json.Unmarshal(data, &sp); err != nil {
		return state.Spec{}, fmt.Errorf("%w: %w: decode spec %s: %v", state.ErrCorrupt, ErrCorrupt, id, err)
	}
	return sp, nil
}

// payload returns a log message's payload, from the object store if it
// was over the blob threshold.
func (s *Store) payload(ctx context.Context, m *jetstream.RawStreamMsg) ([]byte, error) {
	name := m.Header.Get(hdrBlob)
	if name == "" {
		return m.Data, nil
	}
	if err := s.awaitBound(ctx); err != nil {
		return nil, fmt.Errorf("message %d: blob %s: %w", m.Sequence, name, err)
	}
	b, err := s.blobs.GetBytes(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("%w: %w: message %d: blob %s: %v", state.ErrCorrupt, ErrCorrupt, m.Sequence, name, err)
	}
	return b, nil
}

// scan calls fn with each committed message of run key's log kind from
// stream sequence from through tip, in order, with its payload, until fn
// returns false.
func (r reader) scan(ctx context.Context, key, kind string, from, tip uint64, fn func(m *jetstream.RawStreamMsg, data []byte) (bool, error)) error {
	stream, subj := r.s.shardOf(key).runsName, r.s.subject(key, kind)
	seq := max(from, 1)
	for seq <= tip {
		m, err := r.get(ctx, stream, getReq{Seq: seq, NextFor: subj, committed: true})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return fmt.Errorf("%w: %w: %s: messages missing before the committed tip %d", state.ErrCorrupt, ErrCorrupt, subj, tip)
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", subj, unavailable(err))
		}
		if m.Sequence > tip {
			return fmt.Errorf("%w: %w: %s: no message at the committed tip %d", state.ErrCorrupt, ErrCorrupt, subj, tip)
		}
		data, err := r.s.payload(ctx, m)
		if err != nil {
			return err
		}
		more, err := fn(m, data)
		if err != nil || !more {
			return err
		}
		seq = m.Sequence + 1
	}
	return nil
}

// scanItems reads the numbered items (entries, events) of log kind of run
// id with number > after, at most limit, up to count.
func scanItems[T any](ctx context.Context, r reader, id, kind string, ms *marks, tip, count, after uint64, limit int) ([]T, error) {
	if after >= count {
		return nil, nil
	}
	var out []T
	err := r.scan(ctx, runKey(id), kind, ms.startFor(after), tip, func(m *jetstream.RawStreamMsg, data []byte) (bool, error) {
		first, err := strconv.ParseUint(m.Header.Get(hdrFirst), 10, 64)
		if err != nil {
			return false, fmt.Errorf("%w: %w: %s message %d: bad %s header", state.ErrCorrupt, ErrCorrupt, kind, m.Sequence, hdrFirst)
		}
		var items []json.RawMessage
		if err := json.Unmarshal(data, &items); err != nil {
			return false, fmt.Errorf("%w: %w: %s message %d: %v", state.ErrCorrupt, ErrCorrupt, kind, m.Sequence, err)
		}
		for i, raw := range items {
			n := first + uint64(i)
			if n <= after || n > count {
				continue
			}
			var x T
			if err := json.Unmarshal(raw, &x); err != nil {
				return false, fmt.Errorf("%w: %w: %s %d of run %s: %v", state.ErrCorrupt, ErrCorrupt, kind, n, id, err)
			}
			out = append(out, x)
			if len(out) == limit {
				return false, nil
			}
		}
		return true, nil
	})
	return out, err
}

// Entries returns up to limit entries of run id with Seq > after, oldest
// first. limit <= 0 means 1000; it is capped at 10000.
func (r reader) Entries(ctx context.Context, id string, after uint64, limit int) ([]record.Entry, error) {
	if after == math.MaxUint64 {
		return nil, r.check(ctx)
	}
	env, err := r.envelope(ctx, id)
	if err != nil {
		return nil, err
	}
	return scanItems[record.Entry](ctx, r, id, kindEntry, &env.EntryMarks, env.tip(kindEntry), env.Entries, after,
		state.LogLimit(limit))
}

// Events returns up to limit events of run id with Seq > after, oldest
// first. limit <= 0 means 1000; it is capped at 10000.
func (r reader) Events(ctx context.Context, id string, after uint64, limit int) ([]state.Event, error) {
	if after == math.MaxUint64 {
		return nil, r.check(ctx)
	}
	env, err := r.envelope(ctx, id)
	if err != nil {
		return nil, err
	}
	return scanItems[state.Event](ctx, r, id, kindEvent, &env.EventMarks, env.tip(kindEvent), env.Events, after,
		state.LogLimit(limit))
}

// StepOps returns every op of step of run id, ordered by index. The
// current step's ops are read from where that step's messages start.
func (r reader) StepOps(ctx context.Context, id string, step uint64) ([]state.Op, error) {
	env, err := r.envelope(ctx, id)
	if err != nil {
		return nil, err
	}
	var from uint64
	if step == env.OpStep {
		from = env.OpFrom
	}
	return r.ops(ctx, id, env, from, func(k opKey) bool { return k.step == step })
}

// Ops returns up to limit ops of run id after the op with ID after ("" =
// from the start), ordered by step then index. after need not exist; an
// after that is not an op ID of run id is an error. limit <= 0 means 1000;
// it is capped at 10000.
func (r reader) Ops(ctx context.Context, id string, after string, limit int) ([]state.Op, error) {
	keep := func(opKey) bool { return true }
	if after != "" {
		run, step, index, err := state.ParseOpID(after)
		if err != nil {
			return nil, err
		}
		if run != id {
			return nil, fmt.Errorf("op cursor %q is not an op of run %s", after, id)
		}
		cur := opKey{step, uint32(index)}
		keep = func(k opKey) bool { return cmpKey(k, cur) > 0 }
	}
	env, err := r.envelope(ctx, id)
	if err != nil {
		return nil, err
	}
	ops, err := r.ops(ctx, id, env, 0, keep)
	if err != nil {
		return nil, err
	}
	if n := state.LogLimit(limit); len(ops) > n {
		ops = ops[:n]
	}
	return ops, nil
}

func cmpKey(a, b opKey) int {
	if c := cmp.Compare(a.step, b.step); c != 0 {
		return c
	}
	return cmp.Compare(a.index, b.index)
}

// opRec is the latest record of an op in its log, and the head revision
// its commit was based on.
type opRec struct {
	base uint64
	rec  json.RawMessage
}

// ops reads the op requests and results of run id from stream sequence
// from, keeps those keep accepts, and joins each request with its chunks
// and its result. A result applies unless the request was written again
// (pending) by a later commit: the later of two commits has the higher
// base revision.
func (r reader) ops(ctx context.Context, id string, env *envelope, from uint64, keep func(opKey) bool) ([]state.Op, error) {
	key := runKey(id)
	read := func(kind string) (map[opKey]opRec, error) {
		recs := map[opKey]opRec{}
		err := r.scan(ctx, key, kind, from, env.tip(kind), func(m *jetstream.RawStreamMsg, data []byte) (bool, error) {
			base := baseOf(m)
			var items []opItem
			if err := json.Unmarshal(data, &items); err != nil {
				return false, fmt.Errorf("%w: %w: %s message %d: %v", state.ErrCorrupt, ErrCorrupt, kind, m.Sequence, err)
			}
			for _, it := range items {
				k := opKey{it.Step, it.Index}
				if keep(k) {
					recs[k] = opRec{base: base, rec: it.Rec}
				}
			}
			return true, nil
		})
		return recs, err
	}
	reqs, err := read(kindOp)
	if err != nil {
		return nil, err
	}
	if len(reqs) == 0 {
		return nil, nil
	}
	ress, err := read(kindResult)
	if err != nil {
		return nil, err
	}
	keys := make([]opKey, 0, len(reqs))
	for k := range reqs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmpKey)
	chunk := func(k []byte) ([]byte, error) { return r.chunk(ctx, key, k) }
	out := make([]state.Op, 0, len(keys))
	for _, k := range keys {
		req := reqs[k]
		op, err := state.DecodeRequest(req.rec, chunk)
		if err != nil {
			return nil, fmt.Errorf("%w: %w: run %s: %v", state.ErrCorrupt, ErrCorrupt, id, err)
		}
		if res, ok := ress[k]; ok && res.base >= req.base {
			if err := state.ApplyResult(&op, res.rec, chunk); err != nil {
				return nil, fmt.Errorf("%w: %w: %v", state.ErrCorrupt, ErrCorrupt, err)
			}
		}
		out = append(out, op)
	}
	return out, nil
}

// chunk returns the chunk stored under key for run key runKey (in its
// shard), or nil if there is none.
func (r reader) chunk(ctx context.Context, runKey string, key []byte) ([]byte, error) {
	k := hex.EncodeToString(key)
	sh := r.s.shardOf(runKey)
	m, err := r.get(ctx, sh.runsName, getReq{LastFor: sh.subjChunk + k})
	if err == nil {
		return m.Data, nil
	}
	if !errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, unavailable(err)
	}
	if err := r.s.awaitBound(ctx); err != nil {
		return nil, err
	}
	b, err := r.s.blobs.GetBytes(ctx, "chunk-"+k)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, nil
	}
	return b, err
}

// eachHead calls fn with the key and value of every entry of the heads
// buckets (their latest values, read through one watcher per shard, one
// shard after the other), each key once, in no particular order. It sees
// every head committed before it was called, even from a replica that
// lags (see eachOf). A failover reader whose leader does not answer
// within Options.FailoverAfter (or whose watch fails for want of one)
// reads the shard from a replica instead (replicaHeads), which may lack
// the last writes.
func (r reader) eachHead(ctx context.Context, fn func(key string, value []byte)) error {
	if err := r.check(ctx); err != nil {
		return err
	}
	for i := range r.s.shards {
		sh := &r.s.shards[i]
		if err := r.shardHeads(ctx, sh, fn); err != nil {
			return unavailable(err)
		}
	}
	return nil
}

// shardHeads is eachHead of one shard.
func (r reader) shardHeads(ctx context.Context, sh *shard, fn func(key string, value []byte)) error {
	if !r.failover {
		tip, err := r.s.headsTip(ctx, sh)
		if err != nil {
			return err
		}
		return eachOf(ctx, sh.heads, tip, fn)
	}
	if r.s.leaders.down(sh.headStream) {
		return r.s.replicaHeads(ctx, sh, fn)
	}
	// The leader gets FailoverAfter to answer the stream info; the watch
	// that follows takes as long as the heads take to read.
	lctx, cancel := context.WithTimeout(ctx, r.s.opts.FailoverAfter)
	// Not bound yet (Options.BindLater): no watch of the leader to make;
	// a replica answers.
	err := r.s.boundWithin(lctx, 0)
	var tip uint64
	if err == nil {
		tip, err = r.s.headsTip(lctx, sh)
	}
	cancel()
	if err == nil {
		err = eachOf(ctx, sh.heads, tip, fn)
	}
	if err == nil || !transient(err) || ctx.Err() != nil {
		return err
	}
	r.s.leaders.mark(sh.headStream, true)
	return r.s.replicaHeads(ctx, sh, fn)
}

// headsBatch is how many heads one batched direct get of replicaHeads
// asks for; tests lower it to read in several batches.
var headsBatch = 256

// replicaHeads calls fn with the key and value of every entry of shard
// sh's heads bucket as a replica has them (batched direct gets, which any
// current replica answers while the stream has no leader): the bucket
// keeps one message per key, so reading its messages in order gives
// every key's latest value that replica holds.
func (s *Store) replicaHeads(ctx context.Context, sh *shard, fn func(key string, value []byte)) error {
	ctx, cancel := withGetTimeout(ctx)
	defer cancel()
	latest := map[string][]byte{}
	for seq := uint64(1); ; {
		type batch struct {
			msgs []*nats.Msg
			eob  *nats.Msg
		}
		b, err := fromReplicas(ctx, func(ctx context.Context) (batch, error) {
			var b batch
			var err error
			b.eob, err = s.directBatch(ctx, sh.headStream, getBatch{Seq: seq, NextFor: sh.headsSubj + ">", Batch: headsBatch},
				func(m *nats.Msg) { b.msgs = append(b.msgs, m) })
			return b, err
		})
		if err != nil {
			return fmt.Errorf("heads bucket %s from a replica: %w", sh.headsName, err)
		}
		for _, m := range b.msgs {
			key := strings.TrimPrefix(m.Header.Get(jetstream.SubjectHeader), sh.headsSubj)
			if op := m.Header.Get(kvOperation); op == "DEL" || op == "PURGE" {
				delete(latest, key)
			} else {
				latest[key] = m.Data
			}
		}
		if b.eob == nil || b.eob.Header.Get(hdrNumPending) == "0" {
			break
		}
		last, err := strconv.ParseUint(b.eob.Header.Get(jetstream.LastSequenceHeader), 10, 64)
		if err != nil || last < seq {
			return fmt.Errorf("heads bucket %s from a replica: bad end of batch %q", sh.headsName,
				b.eob.Header.Get(jetstream.LastSequenceHeader))
		}
		seq = last + 1
	}
	for k, v := range latest {
		fn(k, v)
	}
	return nil
}

// hdrNumPending is the header of a batched direct get's end-of-batch
// marker that counts the messages matching past the batch.
const hdrNumPending = "Nats-Num-Pending"

// getBatch is a batched direct get: up to Batch messages of subjects
// matching NextFor from sequence Seq on.
type getBatch struct {
	Seq     uint64 `json:"seq"`
	NextFor string `json:"next_by_subj"`
	Batch   int    `json:"batch"`
}

// headsTip is the sequence of the last message of shard sh's heads
// bucket, as its stream leader (which has every acknowledged write)
// answers; 0 when the bucket is empty. The bucket keeps one message per
// key and denies deletes, so that message is always there: it is the
// latest value of its key.
func (s *Store) headsTip(ctx context.Context, sh *shard) (uint64, error) {
	st, err := s.js.Stream(ctx, sh.headStream)
	if err != nil {
		return 0, fmt.Errorf("heads bucket %s: %w", sh.headsName, err)
	}
	if st.CachedInfo().State.Msgs == 0 {
		return 0, nil
	}
	return st.CachedInfo().State.LastSeq, nil
}

// watchAll starts a watch of every key of kv; tests replace it to play
// a replica that lags.
var watchAll = func(ctx context.Context, kv jetstream.KeyValue) (jetstream.KeyWatcher, error) {
	return kv.WatchAll(ctx)
}

// eachOf calls fn with the key and latest value of every entry of kv,
// each key once, having seen every message up to sequence tip. The
// watcher's consumer may be placed on any replica of the bucket's
// stream, one that lags the leader by the last writes: its "every
// current value was delivered" marker then comes before the latest
// values (a key missing, or an older value of it), which arrive after
// it as updates. So values are kept by key, a later one replacing an
// earlier one, until both the marker and the message at tip arrived.
func eachOf(ctx context.Context, kv jetstream.KeyValue, tip uint64, fn func(key string, value []byte)) error {
	w, err := watchAll(ctx, kv)
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	latest := map[string][]byte{}
	var seen uint64 // the highest sequence delivered
	initial := false
	for !initial || seen < tip {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("heads watcher closed")
			}
			if e == nil { // every value the replica had was delivered
				initial = true
				continue
			}
			seen = max(seen, e.Revision())
			if e.Operation() == jetstream.KeyValuePut {
				latest[e.Key()] = e.Value()
			} else {
				delete(latest, e.Key())
			}
		}
	}
	for k, v := range latest {
		fn(k, v)
	}
	return nil
}

// allHeads reads every run head, in ID order. Unreadable heads are returned
// as errors beside the others.
func (r reader) allHeads(ctx context.Context) ([]state.Run, []error, error) {
	var (
		runs []state.Run
		bad  []error
	)
	err := r.eachHead(ctx, func(key string, value []byte) {
		env, err := decodeEnvelope(key, value)
		if err != nil {
			bad = append(bad, err)
			return
		}
		h, ok, err := env.head(key)
		if err != nil {
			bad = append(bad, err)
			return
		}
		if ok {
			runs = append(runs, h)
		}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list runs: %w", err)
	}
	slices.SortFunc(runs, func(a, b state.Run) int { return cmp.Compare(a.ID, b.ID) })
	return runs, bad, nil
}

// statusOnly decodes a heads bucket value as far as CountRuns needs.
type statusOnly struct {
	Run *struct {
		Status state.Status `json:"status"`
	} `json:"run"`
}

// CountRuns counts every run by status (state.RunCounter), reading each
// head's status without decoding the rest of the head. It reads every
// head, like an unfiltered listing: a caller that shows live counts
// should cache the answer for a second or so. An unreadable head counts
// in Total only.
func (r reader) CountRuns(ctx context.Context) (state.RunCounts, error) {
	var c state.RunCounts
	err := r.eachHead(ctx, func(_ string, value []byte) {
		var h statusOnly
		if json.Unmarshal(value, &h) != nil {
			c.Total++
			return
		}
		if h.Run == nil {
			return // logs without a head: not a run yet
		}
		c.Total++
		c.Count(h.Run.Status)
	})
	if err != nil {
		return state.RunCounts{}, fmt.Errorf("count runs: %w", err)
	}
	return c, nil
}

// Runs lists heads newest first (descending ID order, as run IDs sort by
// creation), keeping those that match every non-empty field of f. f.After
// is the last ID of the previous page; next is the last ID of this page
// when the page is full ("" otherwise). f.Limit defaults to 50, capped at
// 1000. A ParentID filter reads the children index and a running or
// paused Status filter the unfinished index; other filters read every
// head (see the package doc's caveats).
func (r reader) Runs(ctx context.Context, f state.RunFilter) ([]state.Run, string, error) {
	limit := state.RunsLimit(f.Limit)
	var (
		all []state.Run
		bad []error
		err error
	)
	switch {
	case f.ParentID != "":
		all, bad, err = r.children(ctx, f.ParentID)
	case f.Status == state.StatusRunning || f.Status == state.StatusPaused:
		all, bad, err = r.unfinished(ctx)
	default:
		all, bad, err = r.allHeads(ctx)
	}
	if err != nil {
		return nil, "", err
	}
	if len(bad) > 0 {
		return nil, "", errors.Join(bad...)
	}
	var (
		runs []state.Run
		next string
	)
	for i := len(all) - 1; i >= 0; i-- {
		h := all[i]
		if (f.After != "" && h.ID >= f.After) || !f.Matches(h) {
			continue
		}
		runs = append(runs, h)
		if len(runs) == limit {
			next = h.ID
			break
		}
	}
	return runs, next, nil
}

// unfinished reads the heads of the runs in the unfinished index that
// are running or paused, in ID order.
func (r reader) unfinished(ctx context.Context) ([]state.Run, []error, error) {
	if err := r.check(ctx); err != nil {
		return nil, nil, err
	}
	keys, err := r.indexed(ctx, "u.")
	if err != nil {
		return nil, nil, err
	}
	heads, bad, err := r.headsOf(ctx, keys)
	if err != nil {
		return nil, nil, err
	}
	runs := heads[:0]
	for _, h := range heads {
		if !h.Status.Terminal() {
			runs = append(runs, h)
		}
	}
	return runs, bad, nil
}

// children reads the heads of run id's children, in ID order.
func (r reader) children(ctx context.Context, id string) ([]state.Run, []error, error) {
	if err := r.check(ctx); err != nil {
		return nil, nil, err
	}
	keys, err := r.indexed(ctx, "c."+runKey(id)+".")
	if err != nil {
		return nil, nil, err
	}
	heads, bad, err := r.headsOf(ctx, keys)
	if err != nil {
		return nil, nil, err
	}
	runs := heads[:0]
	for _, h := range heads {
		if h.ParentID == id {
			runs = append(runs, h)
		}
	}
	return runs, bad, nil
}

// Unfinished lists the heads whose status is running or paused, in ID
// order, from the unfinished index. Unreadable heads do not hide the
// others: they are named in an error wrapping state.ErrCorrupt returned
// beside the readable ones.
func (r reader) Unfinished(ctx context.Context) ([]state.Run, error) {
	runs, bad, err := r.unfinished(ctx)
	if err != nil {
		return nil, err
	}
	return runs, errors.Join(bad...)
}

// CountChildren counts run id's direct children from the children
// index, without reading their heads (a child whose head is not written
// yet is counted).
func (r reader) CountChildren(ctx context.Context, id string) (int, error) {
	if err := r.check(ctx); err != nil {
		return 0, err
	}
	keys, err := r.indexed(ctx, "c."+runKey(id)+".")
	return len(keys), err
}

var (
	_ state.ChildCounter = (*Store)(nil)
	_ state.ChildCounter = reader{}
	_ state.RunCounter   = reader{}
	_ state.Reader       = reader{}
)

// Children lists the IDs of run id's direct children in ID order, from
// the children index.
func (r reader) Children(ctx context.Context, id string) ([]string, error) {
	runs, bad, err := r.children(ctx, id)
	if err != nil {
		return nil, err
	}
	if len(bad) > 0 {
		return nil, errors.Join(bad...)
	}
	var ids []string
	for _, h := range runs {
		ids = append(ids, h.ID)
	}
	return ids, nil
}
