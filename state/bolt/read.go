package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
)

// view runs fn in a read transaction. Values are decoded with
// encoding/json inside fn, which copies them out of the mmap.
func (s *Store) view(ctx context.Context, fn func(tx *bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.isClosed.Load() {
		return state.ErrClosed
	}
	err := safely(s.path, func() error { return s.db.View(fn) })
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return state.ErrClosed
	}
	return err
}

// decodeHead decodes and migrates a stored head.
func decodeHead(id, v []byte) (state.Run, error) {
	var r state.Run
	if err := json.Unmarshal(v, &r); err != nil {
		return state.Run{}, fmt.Errorf("%w: decode run %s: %v", state.ErrCorrupt, id, err)
	}
	if err := state.Migrate(&r); err != nil {
		return state.Run{}, err
	}
	return r, nil
}

// Run returns the head of run id, migrated to SchemaVersion. Unknown ids
// give an error wrapping ErrNotFound.
func (s *Store) Run(ctx context.Context, id string) (state.Run, error) {
	var r state.Run
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketRuns).Get([]byte(id))
		if v == nil {
			return fmt.Errorf("%w: %s", state.ErrNotFound, id)
		}
		var err error
		r, err = decodeHead([]byte(id), v)
		return err
	})
	return r, err
}

// Spec returns the task and settings of run id. Unknown ids give an error
// wrapping ErrNotFound.
func (s *Store) Spec(ctx context.Context, id string) (state.Spec, error) {
	var sp state.Spec
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketSpecs).Get([]byte(id))
		if v == nil {
			return fmt.Errorf("%w: spec of %s", state.ErrNotFound, id)
		}
		if err := json.Unmarshal(v, &sp); err != nil {
			return fmt.Errorf("%w: decode spec %s: %v", state.ErrCorrupt, id, err)
		}
		return nil
	})
	return sp, err
}

// Runs lists heads newest first (run IDs are time-sortable, so this is
// descending ID order), keeping those that match every non-empty field of
// f. f.After is the last ID of the previous page; the returned next is the
// last ID of this page when the page is full ("" otherwise), so the page
// after a full one may be empty. f.Limit defaults to 50, capped at 1000.
//
// A ParentID filter walks the children index and a running/paused Status
// filter walks the unfinished index; other filters scan the heads.
func (s *Store) Runs(ctx context.Context, f state.RunFilter) ([]state.Run, string, error) {
	limit := state.RunsLimit(f.Limit)
	var (
		runs []state.Run
		next string
	)
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		heads := tx.Bucket(bucketRuns)
		// Candidate ids come from the cheapest bucket: keys are prefix+id.
		src, prefix := heads, []byte(nil)
		switch {
		case f.ParentID != "":
			src, prefix = tx.Bucket(bucketChildren), runPrefix(f.ParentID)
		case f.Status == state.StatusRunning || f.Status == state.StatusPaused:
			src = tx.Bucket(bucketUnfinished)
		}
		c := src.Cursor()
		var k, v []byte
		switch {
		case f.After != "":
			// Keys strictly before prefix+After.
			if k, _ = c.Seek(append(bytes.Clone(prefix), f.After...)); k == nil {
				k, v = c.Last()
			} else {
				k, v = c.Prev()
			}
		case prefix != nil:
			// prefix ends with 0x00; every key with it sorts before ...0x01.
			end := bytes.Clone(prefix)
			end[len(end)-1] = 1
			if k, _ = c.Seek(end); k == nil {
				k, v = c.Last()
			} else {
				k, v = c.Prev()
			}
		default:
			k, v = c.Last()
		}
		for n := 0; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
			if n++; n%256 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			id := k[len(prefix):]
			if src != heads {
				if v = heads.Get(id); v == nil {
					continue // index without head: not written by this store
				}
			}
			r, err := decodeHead(id, v)
			if err != nil {
				return err
			}
			if !f.Matches(r) {
				continue
			}
			runs = append(runs, r)
			if len(runs) == limit {
				next = r.ID
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return runs, next, nil
}

// Unfinished lists the heads whose status is running or paused, in ID
// (creation) order, from the unfinished index.
//
// A head that cannot be decoded does not hide the others: Unfinished then
// returns the readable heads together with an error wrapping ErrCorrupt
// that names each unreadable one.
func (s *Store) Unfinished(ctx context.Context) ([]state.Run, error) {
	var (
		runs []state.Run
		bad  []error
	)
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		heads := tx.Bucket(bucketRuns)
		return tx.Bucket(bucketUnfinished).ForEach(func(k, _ []byte) error {
			v := heads.Get(k)
			if v == nil {
				return nil
			}
			r, err := decodeHead(k, v)
			if err != nil {
				bad = append(bad, err)
				return nil
			}
			runs = append(runs, r)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return runs, errors.Join(bad...)
}

// Children lists the IDs of run id's direct children in ID order (empty,
// not an error, for unknown ids).
func (s *Store) Children(ctx context.Context, id string) ([]string, error) {
	var ids []string
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		p := runPrefix(id)
		c := tx.Bucket(bucketChildren).Cursor()
		for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
			ids = append(ids, string(k[len(p):]))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// scanLog decodes up to limit values of bk from key start while keys keep
// prefix p.
func scanLog[T any](bk *bbolt.Bucket, p, start []byte, skip []byte, limit int) ([]T, error) {
	var out []T
	c := bk.Cursor()
	k, v := c.Seek(start)
	if skip != nil && bytes.Equal(k, skip) {
		k, v = c.Next()
	}
	for ; k != nil && bytes.HasPrefix(k, p) && len(out) < limit; k, v = c.Next() {
		var x T
		if err := json.Unmarshal(v, &x); err != nil {
			return nil, fmt.Errorf("%w: decode record %q: %v", state.ErrCorrupt, k, err)
		}
		out = append(out, x)
	}
	return out, nil
}

// Entries returns up to limit entries of run id with Seq > after, oldest
// first. limit <= 0 means 1000; it is capped at 10000.
func (s *Store) Entries(ctx context.Context, id string, after uint64, limit int) ([]record.Entry, error) {
	if after == ^uint64(0) {
		return nil, nil
	}
	var out []record.Entry
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		out, err = scanLog[record.Entry](tx.Bucket(bucketEntries), runPrefix(id), seqKey(id, after+1), nil,
			state.LogLimit(limit))
		return err
	})
	return out, err
}

// Events returns up to limit events of run id with Seq > after, oldest
// first. limit <= 0 means 1000; it is capped at 10000.
func (s *Store) Events(ctx context.Context, id string, after uint64, limit int) ([]state.Event, error) {
	if after == ^uint64(0) {
		return nil, nil
	}
	var out []state.Event
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		out, err = scanLog[state.Event](tx.Bucket(bucketEvents), runPrefix(id), seqKey(id, after+1), nil,
			state.LogLimit(limit))
		return err
	})
	return out, err
}

// StepOps returns every op of step of run id, ordered by index.
func (s *Store) StepOps(ctx context.Context, id string, step uint64) ([]state.Op, error) {
	var out []state.Op
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		p := opKey(id, step, 0)[:len(id)+1+8]
		var err error
		out, err = scanOps(tx, p, p, nil, maxInt)
		return err
	})
	return out, err
}

const maxInt = int(^uint(0) >> 1)

// Ops returns up to limit ops of run id after the op with ID after ("" =
// from the start), ordered by step then index. after need not exist. An
// after that is not an op ID of run id is an error. limit <= 0 means 1000;
// it is capped at 10000.
func (s *Store) Ops(ctx context.Context, id string, after string, limit int) ([]state.Op, error) {
	p := runPrefix(id)
	start, skip := p, []byte(nil)
	if after != "" {
		run, step, index, err := state.ParseOpID(after)
		if err != nil {
			return nil, err
		}
		if run != id {
			return nil, fmt.Errorf("op cursor %q is not an op of run %s", after, id)
		}
		start = opKey(id, step, uint32(index))
		skip = start
	}
	var out []state.Op
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		out, err = scanOps(tx, p, start, skip,
			state.LogLimit(limit))
		return err
	})
	return out, err
}

// scanOps reads up to limit ops from key start while keys keep prefix p:
// each request record joined with its chunks and with its result record.
func scanOps(tx *bbolt.Tx, p, start, skip []byte, limit int) ([]state.Op, error) {
	ops, results, blobs := tx.Bucket(bucketOps), tx.Bucket(bucketResults), tx.Bucket(bucketBlobs)
	chunk := func(k []byte) ([]byte, error) { return blobs.Get(k), nil } // DecodeRequest and ApplyResult copy out
	var out []state.Op
	c := ops.Cursor()
	k, v := c.Seek(start)
	if skip != nil && bytes.Equal(k, skip) {
		k, v = c.Next()
	}
	for ; k != nil && bytes.HasPrefix(k, p) && len(out) < limit; k, v = c.Next() {
		op, err := state.DecodeRequest(v, chunk)
		if err != nil {
			return nil, fmt.Errorf("%w: op %q: %v", state.ErrCorrupt, k, err)
		}
		if rv := results.Get(k); rv != nil {
			if err := state.ApplyResult(&op, rv, chunk); err != nil {
				return nil, fmt.Errorf("%w: %v", state.ErrCorrupt, err)
			}
		}
		out = append(out, op)
	}
	return out, nil
}
