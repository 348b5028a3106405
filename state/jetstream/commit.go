package jetstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
)

// Headers of the log messages.
const (
	// hdrBase is the heads-bucket revision the appending commit was based
	// on: a message whose base is below the run's current revision and
	// lies past its log's tip belongs to a commit that can no longer apply.
	hdrBase = "Flock-Base"
	// hdrCommit is the nonce of the commit that appended a message.
	hdrCommit = "Flock-Commit"
	// hdrFirst is the number of a message's first item (entries, events).
	hdrFirst = "Flock-First"
	// hdrBlob names the object holding a message's payload when it was
	// over the blob threshold; the message itself is then empty.
	hdrBlob = "Flock-Blob"
)

// maxAttempts bounds the retries of one commit against fences that moved
// (each retry follows another commit's progress; Options.WriteTimeout
// bounds them in time).
const maxAttempts = 10000

// errStale says that a fence moved under a commit: reload and try again.
var errStale = errors.New("stale")

// prepared is a commit checked and encoded without stored state.
type prepared struct {
	c       *state.Commit
	key     string
	nonce   string
	head    *state.Run    // copy of c.Run with ID and Schema set
	spec    []byte        // encoded spec
	entries [][]byte      // encoded entries
	ops     []preparedOp  // in c.Ops order
	chunks  []state.Chunk // chunks the pending ops refer to
	events  []state.Event // copies of c.Events
	// acks are the log messages earlier attempts appended, by log kind.
	acks map[string]appended
	// results are the result records to write, by op: a pending write
	// of the same op later in c.Ops drops an earlier result.
	results map[opKey][]byte
}

type opKey struct {
	step  uint64
	index uint32
}

type preparedOp struct {
	op  state.Op
	k   opKey
	req []byte // request record (pending ops)
	res []byte // result record (done ops)
}

// Commit applies c atomically and durably (see the package doc for how):
// it returns nil once the run's head in the heads bucket says the commit
// applied, after every log message it appended was acknowledged by the
// stream (on a quorum of replicas). It fails, writing nothing visible,
// with an error wrapping state.ErrFenced, state.ErrConflict or
// state.ErrClosed as the bbolt store does.
//
// ctx is honoured until the first write is sent; from then on Commit
// waits (at most Options.WriteTimeout) for the outcome.
func (s *Store) Commit(ctx context.Context, c *state.Commit) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	p, err := s.prepare(c)
	if err != nil {
		s.rejected.Add(1)
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return state.ErrClosed
	}
	if err := s.apply(ctx, p); err != nil {
		s.rejected.Add(1)
		return unavailable(err)
	}
	s.commits.Add(1)
	return nil
}

// prepare checks and encodes what can be without stored state.
func (s *Store) prepare(c *state.Commit) (*prepared, error) {
	if err := state.CheckCommitRun(c); err != nil {
		return nil, err
	}
	id := c.RunID
	nonce := c.ID
	if nonce == "" {
		nonce = nuid.Next()
	}
	p := &prepared{c: c, key: runKey(id), nonce: nonce,
		results: map[opKey][]byte{}, acks: map[string]appended{}}
	if c.Run != nil {
		h, err := state.CommitHead(c)
		if err != nil {
			return nil, err
		}
		p.head = &h
	}
	if c.Spec != nil {
		b, err := json.Marshal(c.Spec)
		if err != nil {
			return nil, fmt.Errorf("commit to run %s: encode spec: %w", id, err)
		}
		p.spec = b
	}
	if err := state.CheckEntrySeqs(id, c.Entries); err != nil {
		return nil, err
	}
	if len(c.Entries) > 0 {
		p.entries = make([][]byte, len(c.Entries))
		for i := range c.Entries {
			e := &c.Entries[i]
			b, err := record.Marshal(e)
			if err != nil {
				return nil, fmt.Errorf("commit to run %s: encode entry %d: %w", id, e.Seq, err)
			}
			p.entries[i] = b
		}
	}
	for i := range c.Ops {
		op, err := state.CommitOp(id, c.Ops[i])
		if err != nil {
			return nil, err
		}
		po := preparedOp{op: op, k: opKey{op.Step, uint32(op.Index)}}
		if op.Status == state.OpDone {
			b, chunks, err := state.EncodeResult(op)
			if err != nil {
				return nil, fmt.Errorf("commit to run %s: encode result of op %s: %w", id, op.ID, err)
			}
			po.res = b
			p.chunks = append(p.chunks, chunks...)
			p.results[po.k] = b
		} else {
			b, chunks, err := state.EncodeRequest(op)
			if err != nil {
				return nil, fmt.Errorf("commit to run %s: encode op %s: %w", id, op.ID, err)
			}
			po.req = b
			p.chunks = append(p.chunks, chunks...)
			delete(p.results, po.k) // a later pending write resets an earlier result
		}
		p.ops = append(p.ops, po)
	}
	if len(c.Events) > 0 {
		p.events = slices.Clone(c.Events)
	}
	return p, nil
}

// apply runs the commit protocol (see the package doc) until it applies
// or fails for good.
func (s *Store) apply(ctx context.Context, p *prepared) error {
	id := p.c.RunID
	fresh := false
	// Reads before the first write honour the caller's ctx; from the
	// first write on, wctx bounds the commit instead.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.WriteTimeout)
	defer cancel()
	rctx := ctx
	for attempt := 0; ; attempt++ {
		if attempt == maxAttempts {
			return fmt.Errorf("commit to run %s: gave up after %d attempts against moving fences", id, attempt)
		}
		cur, err := s.load(rctx, p.key, fresh)
		if err != nil {
			return fmt.Errorf("commit to run %s: read head: %w", id, err)
		}
		if d, ok := cur.env.done(p.c.ID); ok && p.c.ID != "" {
			// A try of this commit applied, though its caller learnt
			// nothing of it (a timeout): done, with what it was given.
			for i := range p.c.Events {
				p.c.Events[i].Seq = d.Event + uint64(i)
			}
			if p.c.Run != nil {
				p.c.Run.Revision = d.Rev
			}
			return nil
		}
		w, err := s.plan(p, cur)
		if err != nil {
			if !fresh {
				fresh = true // decide errors on the leader's head only
				continue
			}
			return err
		}
		rctx = wctx
		indexed := s.indexBefore(rctx, p, cur.env, w)
		err = s.appendLogs(rctx, p, cur, w)
		if ierr := indexed(); ierr != nil {
			return fmt.Errorf("commit to run %s: %w", id, ierr)
		}
		if err != nil {
			if errors.Is(err, errStale) {
				fresh = true
				continue
			}
			return fmt.Errorf("commit to run %s: %w", id, err)
		}
		val, err := json.Marshal(w.env)
		if err != nil {
			return fmt.Errorf("commit to run %s: encode head: %w", id, err)
		}
		rev, err := s.shardOf(p.key).heads.Update(rctx, p.key, val, cur.rev)
		if err != nil {
			s.forget(p.key)
			if isWrongLast(err) {
				fresh = true
				continue
			}
			sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.WriteTimeout)
			applied, rerr := s.settle(sctx, p, err)
			scancel()
			if rerr != nil {
				return rerr
			}
			if !applied {
				return fmt.Errorf("commit to run %s: not applied: write head: %w", id, err)
			}
			now, _ := s.load(context.WithoutCancel(ctx), p.key, false) // cached by settle
			rev = now.rev
		}
		s.indexAfter(rctx, p, cur.env)
		s.txs.Add(1)
		s.bytes.Add(uint64(len(val)) + w.bytes)
		s.remember(p.key, cached{env: w.env, raw: val, rev: rev})
		for i := range p.c.Events {
			p.c.Events[i].Seq = w.firstEvent + uint64(i)
		}
		if p.c.Run != nil {
			p.c.Run.Revision = w.env.Rev
		}
		return nil
	}
}

// settle decides the outcome of a commit whose head write failed without
// an answer (a timeout, a lost connection): the write may still apply.
// If the leader's envelope is the commit's, it applied; otherwise settle
// rewrites that envelope unchanged, which bumps its revision so that the
// lost write, expecting the older one, can never apply later. It returns
// an error when neither could be done: the outcome is then unknown.
func (s *Store) settle(ctx context.Context, p *prepared, cause error) (applied bool, err error) {
	for range maxAttempts {
		now, err := s.load(ctx, p.key, true)
		if err != nil {
			break
		}
		if now.env.Commit == p.nonce {
			return true, nil
		}
		raw := now.raw
		if raw == nil {
			raw, _ = json.Marshal(now.env)
		}
		_, err = s.shardOf(p.key).heads.Update(ctx, p.key, raw, now.rev)
		if err == nil {
			s.forget(p.key)
			return false, nil
		}
		if !isWrongLast(err) {
			break
		}
	}
	return false, fmt.Errorf("commit to run %s: outcome unknown: write head: %w", p.c.RunID, cause)
}

// write is one attempt of a commit: the messages to append, per log, and
// the envelope to write once they are.
type write struct {
	env        *envelope
	msgs       [len(kinds)]*nats.Msg
	firstEvent uint64
	opStep     uint64 // the step whose ops this commit journals, if it moves OpStep
	chunks     []state.Chunk
	bytes      uint64
}

// plan validates p against the stored state cur, as the bbolt store
// does, and builds the attempt's messages and next envelope.
func (s *Store) plan(p *prepared, cur cached) (*write, error) {
	id := p.c.RunID
	old := cur.env
	w := &write{env: old.clone(), chunks: slices.Clone(p.chunks)}
	w.env.Commit = p.nonce
	var done *doneCommit
	if p.c.ID != "" {
		w.env.Done = append(w.env.Done, doneCommit{ID: p.c.ID})
		if len(w.env.Done) > maxDone {
			w.env.Done = w.env.Done[len(w.env.Done)-maxDone:]
		}
		done = &w.env.Done[len(w.env.Done)-1]
	}
	if want := p.c.ExpectRevision; want != 0 && want != old.Rev {
		return nil, fmt.Errorf("%w: run %s: expected head revision %d, stored %d", state.ErrFenced, id, want, old.Rev)
	}
	if p.head != nil {
		h := *p.head
		h.Revision = old.Rev + 1
		b, err := json.Marshal(&h)
		if err != nil {
			return nil, fmt.Errorf("commit to run %s: encode head: %w", id, err)
		}
		w.env.Run, w.env.Rev = b, h.Revision
		if done != nil {
			done.Rev = h.Revision
		}
	}
	if len(p.entries) > 0 {
		if first := p.c.Entries[0].Seq; first != old.Entries+1 {
			return nil, fmt.Errorf("%w: run %s: entries start at seq %d but the stored log ends at %d", state.ErrConflict, id, first, old.Entries)
		}
	}
	if p.spec != nil && old.tip(kindSpec) != 0 {
		return nil, fmt.Errorf("%w: run %s: spec already stored", state.ErrConflict, id)
	}
	base := strconv.FormatUint(cur.rev, 10)
	msg := func(kind, first string, data []byte) *nats.Msg {
		m := nats.NewMsg(s.subject(p.key, kind))
		m.Header.Set(jetstream.MsgIDHeader, p.key+"."+kind+"."+first+"@"+base+"."+p.nonce)
		m.Header.Set(hdrBase, base)
		m.Header.Set(hdrCommit, p.nonce)
		m.Data = data
		w.bytes += uint64(len(data))
		return m
	}
	if p.spec != nil {
		w.msgs[kindIndex(kindSpec)] = msg(kindSpec, "0", p.spec)
	}
	if len(p.entries) > 0 {
		first := p.c.Entries[0].Seq
		m := msg(kindEntry, strconv.FormatUint(first, 10), joinArray(p.entries))
		m.Header.Set(hdrFirst, strconv.FormatUint(first, 10))
		w.msgs[kindIndex(kindEntry)] = m
		w.env.Entries = p.c.Entries[len(p.c.Entries)-1].Seq
	}
	if len(p.ops) > 0 {
		var reqs, ress []opItem
		known := func(k opKey) bool {
			return k.step == old.OpStep && slices.Contains(old.OpIdx, k.index)
		}
		journaled := map[opKey]bool{}
		for _, po := range p.ops {
			switch {
			case po.req != nil:
				reqs = append(reqs, opItem{Step: po.k.step, Index: po.k.index, Rec: po.req})
				journaled[po.k] = true
			case !known(po.k) && !journaled[po.k]:
				// Done without having been journaled pending (not what
				// the executor does): write the request record too, in
				// this commit, so that the result applies to it.
				b, chunks, err := state.EncodeRequest(po.op)
				if err != nil {
					return nil, fmt.Errorf("commit to run %s: encode op %s: %w", id, po.op.ID, err)
				}
				w.chunks = append(w.chunks, chunks...)
				reqs = append(reqs, opItem{Step: po.k.step, Index: po.k.index, Rec: b})
				journaled[po.k] = true
			}
		}
		for k, b := range p.results {
			ress = append(ress, opItem{Step: k.step, Index: k.index, Rec: b})
		}
		slices.SortFunc(ress, func(a, b opItem) int {
			if a.Step != b.Step {
				return cmpU(a.Step, b.Step)
			}
			return cmpU(uint64(a.Index), uint64(b.Index))
		})
		if len(reqs) > 0 {
			b, err := json.Marshal(reqs)
			if err != nil {
				return nil, fmt.Errorf("commit to run %s: encode ops: %w", id, err)
			}
			w.msgs[kindIndex(kindOp)] = msg(kindOp, fmt.Sprintf("%d-%d", reqs[0].Step, reqs[0].Index), b)
		}
		if len(ress) > 0 {
			b, err := json.Marshal(ress)
			if err != nil {
				return nil, fmt.Errorf("commit to run %s: encode results: %w", id, err)
			}
			w.msgs[kindIndex(kindResult)] = msg(kindResult, fmt.Sprintf("%d-%d", ress[0].Step, ress[0].Index), b)
		}
		// Track the latest step's journaled ops (see envelope.OpStep).
		for k := range journaled {
			if k.step > w.env.OpStep {
				w.env.OpStep, w.env.OpIdx, w.opStep = k.step, nil, k.step
			}
		}
		for k := range journaled {
			if k.step == w.env.OpStep && !slices.Contains(w.env.OpIdx, k.index) {
				w.env.OpIdx = append(w.env.OpIdx, k.index)
			}
		}
		slices.Sort(w.env.OpIdx)
	}
	if len(p.events) > 0 {
		w.firstEvent = old.Events + 1
		if done != nil {
			done.Event = w.firstEvent
		}
		evs := make([][]byte, len(p.events))
		for i := range p.events {
			ev := p.events[i]
			ev.Seq = w.firstEvent + uint64(i)
			b, err := json.Marshal(&ev)
			if err != nil {
				return nil, fmt.Errorf("commit to run %s: encode event %d: %w", id, i, err)
			}
			evs[i] = b
		}
		first := strconv.FormatUint(w.firstEvent, 10)
		m := msg(kindEvent, first, joinArray(evs))
		m.Header.Set(hdrFirst, first)
		w.msgs[kindIndex(kindEvent)] = m
		w.env.Events = old.Events + uint64(len(evs))
	}
	return w, nil
}

// opItem is one op record in an op or result message.
type opItem struct {
	Step  uint64          `json:"s"`
	Index uint32          `json:"i"`
	Rec   json.RawMessage `json:"r"`
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// joinArray returns the JSON array of the encoded values vs.
func joinArray(vs [][]byte) []byte {
	n := 2
	for _, v := range vs {
		n += len(v) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, v...)
	}
	return append(b, ']')
}

// appendLogs writes the chunks, then appends w's messages to their logs in
// parallel, each fenced on its log's tip in cur, and records the new tips
// and marks in w.env. A log appended by an earlier attempt of the same
// commit on the same head is not appended again. It returns errStale when
// a fence failed (after clearing what blocked it, see resolveTail).
func (s *Store) appendLogs(ctx context.Context, p *prepared, cur cached, w *write) error {
	n, err := s.putChunks(ctx, s.shardOf(p.key), w.chunks)
	if err != nil {
		return err
	}
	w.bytes += n
	type pending struct {
		kind string
		fut  jetstream.PubAckFuture
	}
	var futs []pending
	for i, m := range w.msgs {
		if m == nil {
			continue
		}
		if a, ok := p.acks[kinds[i]]; ok && a.base == cur.rev {
			continue
		}
		if len(m.Data) > s.opts.BlobThreshold {
			name, err := s.putBlob(ctx, m.Data)
			if err != nil {
				return err
			}
			m.Header.Set(hdrBlob, name)
			m.Data = nil
		}
		f, err := s.js.PublishMsgAsync(m, jetstream.WithExpectLastSequencePerSubject(cur.env.Tips[i]), stallWait(ctx))
		if err != nil {
			return fmt.Errorf("append %s: %w", kinds[i], err)
		}
		futs = append(futs, pending{kinds[i], f})
	}
	var stale []string
	var errs []error
	for _, pf := range futs {
		select {
		case ack := <-pf.fut.Ok():
			p.acks[pf.kind] = appended{base: cur.rev, seq: ack.Sequence}
		case err := <-pf.fut.Err():
			if isWrongLast(err) {
				stale = append(stale, pf.kind)
				continue
			}
			errs = append(errs, fmt.Errorf("append %s: %w", pf.kind, err))
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("append %s: %w", pf.kind, ctx.Err()))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	retry := false
	for _, kind := range stale {
		seq, err := s.resolveTail(ctx, p, kind, cur)
		switch {
		case err == nil: // our own message, from an earlier attempt
			p.acks[kind] = appended{base: cur.rev, seq: seq}
		case errors.Is(err, errStale):
			retry = true
		default:
			return err
		}
	}
	if retry {
		return errStale
	}
	minSeq := uint64(math.MaxUint64)
	for i, m := range w.msgs {
		if m == nil {
			continue
		}
		seq := p.acks[kinds[i]].seq
		w.env.Tips[i] = seq
		switch kinds[i] {
		case kindEntry:
			w.env.EntryMarks.add(mark{p.c.Entries[0].Seq, seq})
		case kindEvent:
			w.env.EventMarks.add(mark{w.firstEvent, seq})
		case kindOp, kindResult:
			minSeq = min(minSeq, seq)
		}
	}
	if w.opStep != 0 && minSeq != math.MaxUint64 {
		w.env.OpFrom = minSeq
	}
	return nil
}

// stallWait lets an async publish wait for room in the client's window of
// unacknowledged publishes as long as ctx allows (the client's default
// gives up after 200 ms, failing commits under load instead of slowing
// them).
func stallWait(ctx context.Context) jetstream.PublishOpt {
	d := DefaultWriteTimeout
	if dl, ok := ctx.Deadline(); ok {
		d = max(time.Until(dl), time.Millisecond)
	}
	return jetstream.WithStallWait(d)
}

// appended is a log message a commit appended, and the head revision
// its attempt was based on.
type appended struct {
	base, seq uint64
}

// resolveTail handles a failed append fence on log kind of run key: the
// log holds messages past the tip of cur, written by commits that did not
// (or not yet) write the head. If the head moved meanwhile, the caller
// just reloads. Otherwise messages based on an older revision are dead
// (their commits can no longer apply) and are deleted; messages based on
// cur's revision belong to a commit in flight, which is given
// Options.OrphanWait to finish before the head is rewritten unchanged
// (bumping its revision), which makes them dead too. It returns errStale
// when the caller should reload and retry, and the message's sequence if
// the message past the tip is p's own, appended on cur by an earlier
// attempt whose acknowledgement was lost.
func (s *Store) resolveTail(ctx context.Context, p *prepared, kind string, cur cached) (uint64, error) {
	key := p.key
	sh := s.shardOf(key)
	subj := s.subject(key, kind)
	tip := cur.env.tip(kind)
	deadline := time.Now().Add(s.opts.OrphanWait)
	retracted := false
	for wait := 500 * time.Microsecond; ; wait = min(2*wait, 20*time.Millisecond) {
		now, err := s.load(ctx, key, true)
		if err != nil {
			return 0, fmt.Errorf("append %s: read head: %w", kind, err)
		}
		if now.rev != cur.rev {
			return 0, errStale
		}
		last, err := s.leaderGet(ctx, sh.runsName, getReq{LastFor: subj})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return 0, errStale
		}
		if err != nil {
			return 0, fmt.Errorf("append %s: read log tail: %w", kind, err)
		}
		if last.Sequence <= tip {
			return 0, errStale // cleared by someone else
		}
		base := baseOf(last)
		if base == cur.rev && last.Header.Get(hdrCommit) == p.nonce {
			return last.Sequence, nil
		}
		if base == cur.rev && !retracted && p.nonce > last.Header.Get(hdrCommit) {
			// Another commit on the same head holds this log; if it
			// waits for a log this commit holds, neither can finish.
			// The commit with the greater nonce gives way: it deletes
			// what it appended, then waits like the other.
			if err := s.retract(ctx, p, cur.rev); err != nil {
				return 0, err
			}
			retracted = true
		}
		if base < cur.rev {
			// Dead: delete it, and any other dead message past the
			// tip, up to a message a live commit appended once the
			// log was cleared (whose base is the current revision).
			for last.Sequence > tip && baseOf(last) < cur.rev {
				if err := s.deleteMsg(ctx, sh, last.Sequence); err != nil {
					return 0, fmt.Errorf("append %s: delete dead message %d: %w", kind, last.Sequence, err)
				}
				last, err = s.leaderGet(ctx, sh.runsName, getReq{LastFor: subj})
				if errors.Is(err, jetstream.ErrMsgNotFound) {
					break
				}
				if err != nil {
					return 0, fmt.Errorf("append %s: read log tail: %w", kind, err)
				}
			}
			return 0, errStale
		}
		if time.Now().After(deadline) {
			// Presumed dead: rewrite the head unchanged so that its
			// commit can no longer apply.
			raw := now.raw
			if raw == nil {
				raw, _ = json.Marshal(now.env)
			}
			if _, err := sh.heads.Update(ctx, key, raw, now.rev); err != nil && !isWrongLast(err) {
				return 0, fmt.Errorf("append %s: fence off a stalled commit: %w", kind, err)
			}
			return 0, errStale
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, fmt.Errorf("append %s: %w", kind, ctx.Err())
		case <-t.C:
		}
	}
}

// baseOf returns the head revision the commit that appended m was based
// on.
func baseOf(m *jetstream.RawStreamMsg) uint64 {
	base, _ := strconv.ParseUint(m.Header.Get(hdrBase), 10, 64)
	return base
}

// retract deletes the log messages p appended on head revision base,
// which it has not written: they were never visible.
func (s *Store) retract(ctx context.Context, p *prepared, base uint64) error {
	for kind, a := range p.acks {
		if a.base != base {
			continue
		}
		if err := s.deleteMsg(ctx, s.shardOf(p.key), a.seq); err != nil {
			return fmt.Errorf("append %s: retract message %d: %w", kind, a.seq, err)
		}
		delete(p.acks, kind)
	}
	return nil
}

// deleteMsg deletes the log message seq. A message already gone is not an
// error: two commits clearing the same dead appends race to delete them,
// and the server answers the second with "sequence not found" (10043)
// through ErrMsgDeleteUnsuccessful, not ErrMsgNotFound, so a refusal is
// checked by reading the message back.
func (s *Store) deleteMsg(ctx context.Context, sh *shard, seq uint64) error {
	err := sh.runs.DeleteMsg(ctx, seq)
	if err == nil || errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful) {
		if _, gerr := s.leaderGet(ctx, sh.runsName, getReq{Seq: seq}); errors.Is(gerr, jetstream.ErrMsgNotFound) {
			return nil
		}
	}
	return err
}

// putChunks stores each chunk under its key unless present, and returns
// the bytes of the chunks it stored.
func (s *Store) putChunks(ctx context.Context, sh *shard, chunks []state.Chunk) (uint64, error) {
	if len(chunks) == 0 {
		return 0, nil
	}
	var n uint64
	seen := make(map[string]bool, len(chunks))
	var futs []jetstream.PubAckFuture
	for _, ch := range chunks {
		k := hex.EncodeToString(ch.Key)
		if seen[k] {
			continue
		}
		seen[k] = true
		if len(ch.Val) > s.opts.BlobThreshold {
			if _, err := s.putBlobNamed(ctx, "chunk-"+k, ch.Val); err != nil {
				return 0, err
			}
			n += uint64(len(ch.Val))
			continue
		}
		m := nats.NewMsg(sh.subjChunk + k)
		m.Data = ch.Val
		f, err := s.js.PublishMsgAsync(m, jetstream.WithExpectLastSequencePerSubject(0), stallWait(ctx))
		if err != nil {
			return 0, fmt.Errorf("put chunk %s: %w", k, err)
		}
		futs = append(futs, f)
	}
	for _, f := range futs {
		select {
		case <-f.Ok():
			n += uint64(len(f.Msg().Data))
		case err := <-f.Err():
			if !isWrongLast(err) { // present already
				return 0, fmt.Errorf("put chunk %s: %w", f.Msg().Subject, err)
			}
		case <-ctx.Done():
			return 0, fmt.Errorf("put chunk: %w", ctx.Err())
		}
	}
	return n, nil
}

// putBlob stores data in the object store under its content hash and
// returns the name.
func (s *Store) putBlob(ctx context.Context, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	return s.putBlobNamed(ctx, "sha256-"+hex.EncodeToString(sum[:]), data)
}

// putBlobNamed stores data as object name unless an object of that name
// (content addressed: the same bytes) exists.
func (s *Store) putBlobNamed(ctx context.Context, name string, data []byte) (string, error) {
	if _, err := s.blobs.GetInfo(ctx, name); err == nil {
		return name, nil
	} else if !errors.Is(err, jetstream.ErrObjectNotFound) {
		return "", fmt.Errorf("blob %s: %w", name, err)
	}
	if _, err := s.blobs.Put(ctx, jetstream.ObjectMeta{Name: name}, bytes.NewReader(data)); err != nil {
		return "", fmt.Errorf("put blob %s: %w", name, err)
	}
	return name, nil
}

// cached is an envelope, its encoding and the KV revision it was read or
// written at.
type cached struct {
	env *envelope
	raw []byte
	rev uint64
}

// load returns run key's envelope: the cached one unless fresh, else the
// leader's (an empty envelope at revision 0 for an unknown run).
func (s *Store) load(ctx context.Context, key string, fresh bool) (cached, error) {
	if !fresh {
		s.cacheMu.Lock()
		c, ok := s.cache[key]
		s.cacheMu.Unlock()
		if ok {
			return c, nil
		}
	}
	return s.strict().load(ctx, key)
}

func (s *Store) remember(key string, c cached) {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	old, ok := s.cache[key]
	if ok && old.rev > c.rev {
		return
	}
	if !ok && len(s.cache) >= maxCached {
		for k := range s.cache { // an arbitrary entry: map order is random
			delete(s.cache, k)
			break
		}
	}
	s.cache[key] = c
}

func (s *Store) forget(key string) {
	s.cacheMu.Lock()
	delete(s.cache, key)
	s.cacheMu.Unlock()
}
