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

	"github.com/nats-io/nats.go/jetstream"

	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
)

// envelope reads run id's envelope from the leader (nil for an unknown run).
func (s *Store) envelope(ctx context.Context, id string) (*envelope, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if err := state.CheckRunID(id); err != nil {
		// No run can have this id (the bbolt store answers the same).
		return nil, fmt.Errorf("%w: run %q: %v", state.ErrNotFound, id, err)
	}
	c, err := s.load(ctx, runKey(id), true)
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", id, err)
	}
	return c.env, nil
}

// Run returns the head of run id, or an error wrapping state.ErrNotFound.
func (s *Store) Run(ctx context.Context, id string) (state.Run, error) {
	env, err := s.envelope(ctx, id)
	if err != nil {
		return state.Run{}, err
	}
	r, ok, err := env.head(id)
	if err != nil {
		return state.Run{}, err
	}
	if !ok {
		return state.Run{}, fmt.Errorf("%w: %s", state.ErrNotFound, id)
	}
	return r, nil
}

// Spec returns the task and settings of run id, or an error wrapping
// state.ErrNotFound.
func (s *Store) Spec(ctx context.Context, id string) (state.Spec, error) {
	env, err := s.envelope(ctx, id)
	if err != nil {
		return state.Spec{}, err
	}
	tip := env.tip(kindSpec)
	if tip == 0 {
		return state.Spec{}, fmt.Errorf("%w: spec of %s", state.ErrNotFound, id)
	}
	m, err := s.runs.GetMsg(ctx, tip)
	if err != nil {
		return state.Spec{}, fmt.Errorf("read spec of %s: %w", id, err)
	}
	data, err := s.payload(ctx, m)
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
	b, err := s.blobs.GetBytes(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("%w: %w: message %d: blob %s: %v", state.ErrCorrupt, ErrCorrupt, m.Sequence, name, err)
	}
	return b, nil
}

// scan calls fn with each committed message of subject subj from stream
// sequence from through tip, in order, with its payload, until fn returns
// false. Every read goes to the stream's leader.
func (s *Store) scan(ctx context.Context, subj string, from, tip uint64, fn func(m *jetstream.RawStreamMsg, data []byte) (bool, error)) error {
	seq := max(from, 1)
	for seq <= tip {
		m, err := s.runs.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subj))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return fmt.Errorf("%w: %w: %s: messages missing before the committed tip %d", state.ErrCorrupt, ErrCorrupt, subj, tip)
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", subj, err)
		}
		if m.Sequence > tip {
			return fmt.Errorf("%w: %w: %s: no message at the committed tip %d", state.ErrCorrupt, ErrCorrupt, subj, tip)
		}
		data, err := s.payload(ctx, m)
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
func scanItems[T any](ctx context.Context, s *Store, id, kind string, ms *marks, tip, count, after uint64, limit int) ([]T, error) {
	if after >= count {
		return nil, nil
	}
	var out []T
	err := s.scan(ctx, s.subject(runKey(id), kind), ms.startFor(after), tip, func(m *jetstream.RawStreamMsg, data []byte) (bool, error) {
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
func (s *Store) Entries(ctx context.Context, id string, after uint64, limit int) ([]record.Entry, error) {
	if after == math.MaxUint64 {
		return nil, s.check(ctx)
	}
	env, err := s.envelope(ctx, id)
	if err != nil {
		return nil, err
	}
	return scanItems[record.Entry](ctx, s, id, kindEntry, &env.EntryMarks, env.tip(kindEntry), env.Entries, after,
		state.LogLimit(limit))
}

// Events returns up to limit events of run id with Seq > after, oldest
// first. limit <= 0 means 1000; it is capped at 10000.
func (s *Store) Events(ctx context.Context, id string, after uint64, limit int) ([]state.Event, error) {
	if after == math.MaxUint64 {
		return nil, s.check(ctx)
	}
	env, err := s.envelope(ctx, id)
	if err != nil {
		return nil, err
	}
	return scanItems[state.Event](ctx, s, id, kindEvent, &env.EventMarks, env.tip(kindEvent), env.Events, after,
		state.LogLimit(limit))
}

// StepOps returns every op of step of run id, ordered by index. The
// current step's ops are read from where that step's messages start.
func (s *Store) StepOps(ctx context.Context, id string, step uint64) ([]state.Op, error) {
	env, err := s.envelope(ctx, id)
	if err != nil {
		return nil, err
	}
	var from uint64
	if step == env.OpStep {
		from = env.OpFrom
	}
	return s.ops(ctx, id, env, from, func(k opKey) bool { return k.step == step })
}

// Ops returns up to limit ops of run id after the op with ID after ("" =
// from the start), ordered by step then index. after need not exist; an
// after that is not an op ID of run id is an error. limit <= 0 means 1000;
// it is capped at 10000.
func (s *Store) Ops(ctx context.Context, id string, after string, limit int) ([]state.Op, error) {
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
	env, err := s.envelope(ctx, id)
	if err != nil {
		return nil, err
	}
	ops, err := s.ops(ctx, id, env, 0, keep)
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
func (s *Store) ops(ctx context.Context, id string, env *envelope, from uint64, keep func(opKey) bool) ([]state.Op, error) {
	key := runKey(id)
	read := func(kind string) (map[opKey]opRec, error) {
		recs := map[opKey]opRec{}
		err := s.scan(ctx, s.subject(key, kind), from, env.tip(kind), func(m *jetstream.RawStreamMsg, data []byte) (bool, error) {
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
	chunk := func(k []byte) ([]byte, error) { return s.chunk(ctx, k) }
	out := make([]state.Op, 0, len(keys))
	for _, k := range keys {
		req := reqs[k]
		op, err := state.DecodeRequest(req.rec, chunk)
		if err != nil {
			return nil, fmt.Errorf("%w: %w: run %s: %v", state.ErrCorrupt, ErrCorrupt, id, err)
		}
		if res, ok := ress[k]; ok && res.base >= req.base {
			if err := state.ApplyResult(&op, res.rec); err != nil {
				return nil, fmt.Errorf("%w: %w: %v", state.ErrCorrupt, ErrCorrupt, err)
			}
		}
		out = append(out, op)
	}
	return out, nil
}

// chunk returns the chunk stored under key, or nil if there is none.
func (s *Store) chunk(ctx context.Context, key []byte) ([]byte, error) {
	k := hex.EncodeToString(key)
	m, err := s.runs.GetLastMsgForSubject(ctx, s.subjBlob+k)
	if err == nil {
		return m.Data, nil
	}
	if !errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, err
	}
	b, err := s.blobs.GetBytes(ctx, "chunk-"+k)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, nil
	}
	return b, err
}

// eachHead calls fn with the key and value of every entry of the heads
// bucket (its latest values, read through one watcher).
func (s *Store) eachHead(ctx context.Context, fn func(key string, value []byte)) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	w, err := s.heads.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("heads watcher closed")
			}
			if e == nil { // every current value was delivered
				return nil
			}
			fn(e.Key(), e.Value())
		}
	}
}

// allHeads reads every run head, in ID order. Unreadable heads are returned
// as errors beside the others.
func (s *Store) allHeads(ctx context.Context) ([]state.Run, []error, error) {
	var (
		runs []state.Run
		bad  []error
	)
	err := s.eachHead(ctx, func(key string, value []byte) {
		env, err := decodeEnvelope(key, value)
		if err != nil {
			bad = append(bad, err)
			return
		}
		r, ok, err := env.head(key)
		if err != nil {
			bad = append(bad, err)
			return
		}
		if ok {
			runs = append(runs, r)
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
func (s *Store) CountRuns(ctx context.Context) (state.RunCounts, error) {
	var c state.RunCounts
	err := s.eachHead(ctx, func(_ string, value []byte) {
		var h statusOnly
		if json.Unmarshal(value, &h) != nil {
			c.Total++
			return
		}
		if h.Run == nil {
			return // logs without a head: not a run yet
		}
		c.Total++
		switch h.Run.Status {
		case state.StatusRunning:
			c.Running++
		case state.StatusPaused:
			c.Paused++
		case state.StatusSucceeded:
			c.Succeeded++
		case state.StatusFailed:
			c.Failed++
		case state.StatusCancelled:
			c.Cancelled++
		}
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
func (s *Store) Runs(ctx context.Context, f state.RunFilter) ([]state.Run, string, error) {
	limit := state.RunsLimit(f.Limit)
	var (
		all []state.Run
		bad []error
		err error
	)
	switch {
	case f.ParentID != "":
		all, bad, err = s.children(ctx, f.ParentID)
	case f.Status == state.StatusRunning || f.Status == state.StatusPaused:
		all, bad, err = s.unfinished(ctx)
	default:
		all, bad, err = s.allHeads(ctx)
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
		r := all[i]
		if (f.After != "" && r.ID >= f.After) || !f.Matches(r) {
			continue
		}
		runs = append(runs, r)
		if len(runs) == limit {
			next = r.ID
			break
		}
	}
	return runs, next, nil
}

// unfinished reads the heads of the runs in the unfinished index that
// are running or paused, in ID order.
func (s *Store) unfinished(ctx context.Context) ([]state.Run, []error, error) {
	if err := s.check(ctx); err != nil {
		return nil, nil, err
	}
	keys, err := s.indexed(ctx, "u.")
	if err != nil {
		return nil, nil, err
	}
	heads, bad, err := s.headsOf(ctx, keys)
	if err != nil {
		return nil, nil, err
	}
	runs := heads[:0]
	for _, r := range heads {
		if !r.Status.Terminal() {
			runs = append(runs, r)
		}
	}
	return runs, bad, nil
}

// children reads the heads of run id's children, in ID order.
func (s *Store) children(ctx context.Context, id string) ([]state.Run, []error, error) {
	if err := s.check(ctx); err != nil {
		return nil, nil, err
	}
	keys, err := s.indexed(ctx, "c."+runKey(id)+".")
	if err != nil {
		return nil, nil, err
	}
	heads, bad, err := s.headsOf(ctx, keys)
	if err != nil {
		return nil, nil, err
	}
	runs := heads[:0]
	for _, r := range heads {
		if r.ParentID == id {
			runs = append(runs, r)
		}
	}
	return runs, bad, nil
}

// Unfinished lists the heads whose status is running or paused, in ID
// order, from the unfinished index. Unreadable heads do not hide the
// others: they are named in an error wrapping state.ErrCorrupt returned
// beside the readable ones.
func (s *Store) Unfinished(ctx context.Context) ([]state.Run, error) {
	runs, bad, err := s.unfinished(ctx)
	if err != nil {
		return nil, err
	}
	return runs, errors.Join(bad...)
}

// CountChildren counts run id's direct children from the children
// index, without reading their heads (a child whose head is not written
// yet is counted).
func (s *Store) CountChildren(ctx context.Context, id string) (int, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	keys, err := s.indexed(ctx, "c."+runKey(id)+".")
	return len(keys), err
}

var _ state.ChildCounter = (*Store)(nil)

// Children lists the IDs of run id's direct children in ID order, from
// the children index.
func (s *Store) Children(ctx context.Context, id string) ([]string, error) {
	runs, bad, err := s.children(ctx, id)
	if err != nil {
		return nil, err
	}
	if len(bad) > 0 {
		return nil, errors.Join(bad...)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	return ids, nil
}
