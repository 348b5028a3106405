package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
)

// RecoverReport is the outcome of RecoverFile.
type RecoverReport struct {
	// From and To are the damaged and the new file.
	From, To string
	// Runs is the number of runs copied (with their head).
	Runs int
	// Records is the number of records copied.
	Records int
	// Damage lists the structural damage of the source (pages that could
	// not be read), as CheckFile reports it.
	Damage []string
	// Lost lists, per run ID, what of that run could not be read.
	Lost map[string][]string
	// Dropped lists runs whose head could not be read: their remaining
	// records are not copied, as no run can be served without its head.
	Dropped map[string]string
	// Other lists unreadable records that belong to no run (blobs, index
	// entries, malformed keys).
	Other []string
}

// RecoverFile copies every readable record of the database file from
// into a new database file to, and reports what could not be read. It
// reads from with plain reads (never through bbolt, never writing it), so
// it works on files bbolt cannot open. to must not exist.
//
// What the new file holds:
//   - every run whose head is readable, with its readable spec, entries,
//     ops, results and events, and the message chunks its ops refer to;
//   - where entries are missing, placeholder entries of type
//     EntryTypeLost, so the log stays numbered 1..n;
//   - a run that lost any of its spec, entries or current step's ops and
//     had not ended is marked failed (reason ReasonStoreDamaged, the loss
//     in Error); a run without spec gets an empty one;
//   - the unfinished and children indexes rebuilt from the heads.
//
// The result passes CheckFile (RecoverFile checks it before returning).
func RecoverFile(ctx context.Context, from, to string) (*RecoverReport, error) {
	rep := &RecoverReport{From: from, To: to, Lost: map[string][]string{}, Dropped: map[string]string{}}
	src, err := openShared(from)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if err := os.MkdirAll(filepath.Dir(to), 0o750); err != nil {
		return nil, fmt.Errorf("create directory of %s: %w", to, err)
	}
	f, err := os.OpenFile(to, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%s already exists; recover writes a new file", to)
		}
		return nil, err
	}
	f.Close()
	ok := false
	defer func() {
		if !ok {
			os.Remove(to)
		}
	}()
	db, err := bbolt.Open(to, 0o600, &bbolt.Options{Timeout: time.Second, NoSync: true, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType})
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", to, err)
	}
	defer db.Close()
	if err := db.Update(initSchema); err != nil {
		return nil, fmt.Errorf("create %s: %w", to, err)
	}
	w := &batchWriter{db: db}
	a := newAudit()
	res, err := scanFile(from, func(bucket string, k, v []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !a.record(bucket, k, v) {
			return nil
		}
		switch bucket {
		case string(bucketUnfinished), string(bucketChildren), string(bucketMeta), string(bucketRuns):
			return nil // rebuilt below
		}
		return w.put([]byte(bucket), k, v)
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s: nothing can be recovered: %s", from, describeScanFailure(res, err))
	}
	if err := w.flush(); err != nil {
		return nil, err
	}
	rep.Damage = res.problems
	rep.Other = a.problems
	for _, ra := range a.sortedRuns() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var lost []string
		if ra.head == nil {
			why := "head missing"
			if ra.headBad != "" {
				why = "head unreadable: " + ra.headBad
			}
			if len(ra.entries)+len(ra.ops)+ra.events == 0 && ra.spec == nil {
				rep.Dropped[ra.id] = why + " and nothing else of the run is readable"
				if err := dropRun(db, ra.id); err != nil {
					return nil, err
				}
				continue
			}
			ra.head = rebuildHead(ra)
			lost = append(lost, "head (rebuilt from the run's other records; the run is marked failed)")
		}
		lost = append(lost, ra.lostSummary()...)
		if len(lost) > 0 {
			rep.Lost[ra.id] = lost
		}
		if err := rewriteRun(db, ra, lost); err != nil {
			return nil, err
		}
		rep.Runs++
	}
	rep.Records = a.records
	if err := db.Sync(); err != nil {
		return nil, fmt.Errorf("sync %s: %w", to, err)
	}
	if err := db.Close(); err != nil {
		return nil, fmt.Errorf("close %s: %w", to, err)
	}
	chk, err := CheckFile(ctx, to)
	if err != nil {
		return nil, err
	}
	if !chk.OK() {
		return nil, fmt.Errorf("recovered file %s does not pass the check: %s", to, strings.Join(chk.Problems, "; "))
	}
	ok = true
	return rep, nil
}

// batchWriter puts copies of records in transactions of a few MiB.
type batchWriter struct {
	db    *bbolt.DB
	kvs   [][3][]byte
	bytes int
}

func (w *batchWriter) put(bucket, k, v []byte) error {
	w.kvs = append(w.kvs, [3][]byte{bucket, bytes.Clone(k), bytes.Clone(v)})
	w.bytes += len(k) + len(v)
	if w.bytes >= 4<<20 {
		return w.flush()
	}
	return nil
}

func (w *batchWriter) flush() error {
	if len(w.kvs) == 0 {
		return nil
	}
	err := w.db.Update(func(tx *bbolt.Tx) error {
		for _, kv := range w.kvs {
			if err := tx.Bucket(kv[0]).Put(kv[1], kv[2]); err != nil {
				return fmt.Errorf("put %s record: %w", kv[0], err)
			}
		}
		return nil
	})
	w.kvs, w.bytes = w.kvs[:0], 0
	return err
}

// dropRun deletes every record of run id.
func dropRun(db *bbolt.DB, id string) error {
	return db.Update(func(tx *bbolt.Tx) error {
		for _, name := range [][]byte{bucketEntries, bucketOps, bucketResults, bucketEvents} {
			if err := deletePrefix(tx.Bucket(name), runPrefix(id)); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketSpecs).Delete([]byte(id))
	})
}

func deletePrefix(bk *bbolt.Bucket, p []byte) error {
	c := bk.Cursor()
	for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Seek(p) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// rewriteRun writes the head of a copied run, repaired so that the run is
// consistent: placeholders for lost entries, an empty spec for a lost one,
// and an unfinished run that lost records failed.
func rewriteRun(db *bbolt.DB, ra *runAudit, lost []string) error {
	h := *ra.head
	id := h.ID
	return db.Update(func(tx *bbolt.Tx) error {
		if ra.spec == nil {
			b, _ := json.Marshal(&state.Spec{Settings: json.RawMessage("{}")})
			if err := tx.Bucket(bucketSpecs).Put([]byte(id), b); err != nil {
				return err
			}
		}
		// Entries past the head's count were never acknowledged by a head:
		// the head is the authority.
		last := h.Entries
		if n := len(ra.entries); n > 0 && ra.entries[n-1] > last {
			last = ra.entries[n-1]
			h.Entries = last
		}
		entries := tx.Bucket(bucketEntries)
		for s := uint64(1); s <= last; s++ {
			if _, found := slices.BinarySearch(ra.entries, s); found {
				continue
			}
			b, err := record.Marshal(&record.Entry{Seq: s, Type: state.EntryTypeLost,
				Data: json.RawMessage(`{"note":"this entry could not be read when the database was recovered"}`)})
			if err != nil {
				return err
			}
			if err := entries.Put(seqKey(id, s), b); err != nil {
				return err
			}
		}
		if miss := missingOps(ra.opSteps[h.Step], h.NumOps); len(miss) > 0 {
			h.NumOps = miss[0] // the ops before the first lost one remain
		}
		if len(lost) > 0 && !h.Status.Terminal() {
			now := time.Now().UTC()
			h.Status, h.EndReason, h.EndedAt, h.UpdatedAt = state.StatusFailed, state.ReasonStoreDamaged, &now, now
			h.Error = "records lost when the database was recovered: " + strings.Join(lost, "; ")
			h.Next, h.PendingEnd, h.WakeAt = "", nil, nil
		}
		b, err := json.Marshal(&h)
		if err != nil {
			return err
		}
		if err := tx.Bucket(bucketRuns).Put([]byte(id), b); err != nil {
			return err
		}
		if !h.Status.Terminal() {
			if err := tx.Bucket(bucketUnfinished).Put([]byte(id), nil); err != nil {
				return err
			}
		}
		if h.ParentID != "" {
			if err := tx.Bucket(bucketChildren).Put(childKey(h.ParentID, id), nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// rebuildHead makes a failed head for a run whose head was lost, from its
// readable records.
func rebuildHead(ra *runAudit) *state.Run {
	now := time.Now().UTC()
	h := &state.Run{Schema: state.SchemaVersion, ID: ra.id, Workflow: "unknown", Status: state.StatusFailed,
		EndReason: state.ReasonStoreDamaged, CreatedAt: now, UpdatedAt: now, EndedAt: &now,
		Error: "the run's head record could not be read when the database was recovered; its readable records are kept"}
	if n := len(ra.entries); n > 0 {
		h.Entries = ra.entries[n-1]
	}
	for step := range ra.opSteps {
		h.Step = max(h.Step, step)
	}
	h.NumOps = len(ra.opSteps[h.Step])
	if ra.spec != nil {
		var doc struct {
			WorkflowType string `json:"workflow_type"`
		}
		if json.Unmarshal(ra.spec.Settings, &doc) == nil && doc.WorkflowType != "" {
			h.Workflow = doc.WorkflowType
		}
	}
	return h
}
