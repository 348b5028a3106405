package bolt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"syscall"

	"github.com/flockrun/flock/record"
	"github.com/flockrun/flock/state"
)

// CheckReport is the outcome of CheckFile.
type CheckReport struct {
	// Path is the file checked.
	Path string
	// Runs is the number of run heads read.
	Runs int
	// Records is the number of records read and decoded.
	Records int
	// Problems lists what is wrong, one line each; empty when the file is
	// consistent.
	Problems []string
}

// OK reports whether the check found nothing wrong.
func (r *CheckReport) OK() bool { return len(r.Problems) == 0 }

// CheckFile checks the database file at path without modifying it: the
// bbolt structure (meta pages, file length, every reachable page; see
// scanFile) and flock's own invariants: every run head decodes and has a
// spec; its entries 1..Entries are all present and decode; the ops of its
// current step (0..NumOps-1) are present, decode and have their message
// chunks; the unfinished index lists exactly the heads that are not
// terminal; no record belongs to a run without a head.
//
// The file is opened read-only and never written. If a flock process holds
// it, CheckFile fails with ErrInUse. A damaged file is not an error: the
// damage is in the report's Problems.
func CheckFile(ctx context.Context, path string) (*CheckReport, error) {
	rep := &CheckReport{Path: path}
	f, err := openShared(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	a := newAudit()
	res, err := scanFile(path, func(bucket string, k, v []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		a.record(bucket, k, v)
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		rep.Problems = append(rep.Problems, describeScanFailure(res, err))
		return rep, nil
	}
	rep.Problems = append(rep.Problems, res.problems...)
	rep.Problems = append(rep.Problems, a.problems...)
	for _, ra := range a.sortedRuns() {
		rep.Problems = append(rep.Problems, ra.problems()...)
	}
	if !a.schema {
		rep.Problems = append(rep.Problems, "meta: schema record is missing")
	}
	rep.Runs, rep.Records = a.heads, a.records
	return rep, nil
}

// describeScanFailure words an error of scanFile.
func describeScanFailure(res *scanResult, err error) string {
	if res != nil && res.size == 0 {
		return "the file is empty (0 bytes)"
	}
	return err.Error()
}

// openShared opens path read-only under a shared lock, which fails at
// once with ErrInUse while a flock process (bbolt's exclusive lock) has
// the file open.
func openShared(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", path, state.ErrInUse)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

// audit accumulates what a scan saw, per run. Buckets arrive in name
// order (blobs, children, entries, events, meta, ops, results, runs,
// specs, unfinished), so blobs are known before the ops that use them
// and ops before their results.
type audit struct {
	blobs    map[[state.ChunkKeyBytes]byte]bool
	runs     map[string]*runAudit
	children [][2]string // parent, child
	schema   bool
	heads    int
	records  int
	problems []string // problems not tied to one run
}

// runAudit is what a scan saw of one run.
type runAudit struct {
	id      string
	head    *state.Run
	headBad string
	spec    *state.Spec
	specBad string
	entries []uint64            // readable seqs, ascending
	opSteps map[uint64][]uint32 // readable op indexes per step
	ops     map[string]bool     // readable op keys (string of the key)
	events  int
	indexed bool     // listed in the unfinished index
	lost    []string // records found but unreadable
}

func newAudit() *audit {
	return &audit{blobs: map[[state.ChunkKeyBytes]byte]bool{}, runs: map[string]*runAudit{}}
}

func (a *audit) run(id string) *runAudit {
	ra := a.runs[id]
	if ra == nil {
		ra = &runAudit{id: id, opSteps: map[uint64][]uint32{}, ops: map[string]bool{}}
		a.runs[id] = ra
	}
	return ra
}

func (a *audit) sortedRuns() []*runAudit {
	out := make([]*runAudit, 0, len(a.runs))
	for _, ra := range a.runs {
		out = append(out, ra)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// splitLogKey splits run \x00 tail into run and tail, checking the tail
// length.
func splitLogKey(k []byte, tail int) (string, []byte, bool) {
	i := bytes.IndexByte(k, 0)
	if i <= 0 || len(k)-i-1 != tail {
		return "", nil, false
	}
	return string(k[:i]), k[i+1:], true
}

// record checks one key/value of bucket and reports whether it is sound
// (decodes and agrees with its key).
func (a *audit) record(bucket string, k, v []byte) bool {
	ok := a.check(bucket, k, v)
	if ok {
		a.records++
	}
	return ok
}

func (a *audit) check(bucket string, k, v []byte) bool {
	bad := func(ra *runAudit, what string, err error) bool {
		msg := what
		if err != nil {
			msg += ": " + err.Error()
		}
		if ra != nil {
			ra.lost = append(ra.lost, msg)
		} else {
			a.problems = append(a.problems, msg)
		}
		return false
	}
	switch bucket {
	case string(bucketBlobs):
		if len(k) != state.ChunkKeyBytes {
			return bad(nil, fmt.Sprintf("blobs: malformed key %x", clip(k)), nil)
		}
		sum := sha256.Sum256(v)
		if !bytes.Equal(sum[:state.ChunkKeyBytes], k) {
			return bad(nil, fmt.Sprintf("blobs: chunk %x does not match its hash", k), nil)
		}
		a.blobs[[state.ChunkKeyBytes]byte(k)] = true
	case string(bucketChildren):
		i := bytes.IndexByte(k, 0)
		if i <= 0 || i == len(k)-1 {
			return bad(nil, fmt.Sprintf("children: malformed key %q", clip(k)), nil)
		}
		a.children = append(a.children, [2]string{string(k[:i]), string(k[i+1:])})
	case string(bucketEntries):
		id, tail, ok := splitLogKey(k, 8)
		if !ok {
			return bad(nil, fmt.Sprintf("entries: malformed key %q", clip(k)), nil)
		}
		ra, seq := a.run(id), binary.BigEndian.Uint64(tail)
		var e record.Entry
		if err := json.Unmarshal(v, &e); err != nil {
			return bad(ra, fmt.Sprintf("entry %d", seq), err)
		}
		if e.Seq != seq {
			return bad(ra, fmt.Sprintf("entry %d: record says seq %d", seq, e.Seq), nil)
		}
		ra.entries = append(ra.entries, seq)
	case string(bucketEvents):
		id, tail, ok := splitLogKey(k, 8)
		if !ok {
			return bad(nil, fmt.Sprintf("events: malformed key %q", clip(k)), nil)
		}
		ra, seq := a.run(id), binary.BigEndian.Uint64(tail)
		var ev state.Event
		if err := json.Unmarshal(v, &ev); err != nil {
			return bad(ra, fmt.Sprintf("event %d", seq), err)
		}
		if ev.Seq != seq {
			return bad(ra, fmt.Sprintf("event %d: record says seq %d", seq, ev.Seq), nil)
		}
		ra.events++
	case string(bucketMeta):
		if string(k) == string(keySchema) {
			if len(v) != 8 || binary.BigEndian.Uint64(v) > state.SchemaVersion {
				return bad(nil, fmt.Sprintf("meta: schema record %x is not a version this build reads", v), nil)
			}
			a.schema = true
		}
	case string(bucketOps):
		id, tail, ok := splitLogKey(k, 12)
		if !ok {
			return bad(nil, fmt.Sprintf("ops: malformed key %q", clip(k)), nil)
		}
		ra := a.run(id)
		step, index := binary.BigEndian.Uint64(tail), binary.BigEndian.Uint32(tail[8:])
		opID := state.OpID(id, step, int(index))
		recID, chunks, err := state.RequestChunks(v)
		if err != nil {
			return bad(ra, "op "+opID, err)
		}
		if recID != opID {
			return bad(ra, fmt.Sprintf("op %s: record says %q", opID, recID), nil)
		}
		for _, k := range chunks {
			if !a.blobs[[state.ChunkKeyBytes]byte(k)] {
				return bad(ra, fmt.Sprintf("op %s: message chunk %x is missing", opID, k), nil)
			}
		}
		ra.opSteps[step] = append(ra.opSteps[step], index)
		ra.ops[string(k)] = true
	case string(bucketResults):
		id, _, ok := splitLogKey(k, 12)
		if !ok {
			return bad(nil, fmt.Sprintf("results: malformed key %q", clip(k)), nil)
		}
		ra := a.run(id)
		if !ra.ops[string(k)] {
			tail := k[len(id)+1:]
			return bad(ra, fmt.Sprintf("op %s (request record)", state.OpID(id, binary.BigEndian.Uint64(tail), int(binary.BigEndian.Uint32(tail[8:])))), nil)
		}
		// Chunks are checked for presence (the blobs bucket is read
		// before this one): a present one reads as no messages.
		present := func(k []byte) ([]byte, error) {
			if len(k) == state.ChunkKeyBytes && a.blobs[[state.ChunkKeyBytes]byte(k)] {
				return []byte("[]"), nil
			}
			return nil, nil
		}
		if err := state.ApplyResult(&state.Op{}, v, present); err != nil {
			return bad(ra, fmt.Sprintf("result of op %x", k[len(id)+1:]), errors.Unwrap(err))
		}
	case string(bucketRuns):
		ra := a.run(string(k))
		h, err := decodeHead(k, v)
		switch {
		case err != nil:
			ra.headBad = err.Error()
			return false
		case h.ID != string(k):
			ra.headBad = fmt.Sprintf("head record says id %q", h.ID)
			return false
		case !h.Status.Valid():
			ra.headBad = fmt.Sprintf("head has invalid status %q", h.Status)
			return false
		}
		ra.head = &h
		a.heads++
	case string(bucketSpecs):
		ra := a.run(string(k))
		var sp state.Spec
		if err := json.Unmarshal(v, &sp); err != nil {
			ra.specBad = err.Error()
			return false
		}
		ra.spec = &sp
	case string(bucketUnfinished):
		a.run(string(k)).indexed = true
	default:
		return bad(nil, fmt.Sprintf("unknown bucket %q", bucket), nil)
	}
	return true
}

// contiguous returns the largest n such that seqs 1..n are all in s
// (ascending).
func contiguous(s []uint64) uint64 {
	var n uint64
	for _, x := range s {
		if x == n+1 {
			n++
		} else if x > n+1 {
			break
		}
	}
	return n
}

// missingOps lists the indexes in [0, n) absent from have.
func missingOps(have []uint32, n int) []int {
	var out []int
	for i := 0; i < n; i++ {
		if !slices.Contains(have, uint32(i)) {
			out = append(out, i)
		}
	}
	return out
}

// problems lists what is wrong with one run.
func (ra *runAudit) problems() []string {
	var out []string
	add := func(format string, args ...any) {
		out = append(out, "run "+ra.id+": "+fmt.Sprintf(format, args...))
	}
	for _, l := range ra.lost {
		add("%s is unreadable", l)
	}
	if ra.head == nil {
		why := "missing"
		if ra.headBad != "" {
			why = "unreadable: " + ra.headBad
		}
		add("head is %s (%d entries, %d ops, %d events remain)", why, len(ra.entries), len(ra.ops), ra.events)
		return out
	}
	h := ra.head
	switch {
	case ra.specBad != "":
		add("spec is unreadable: %s", ra.specBad)
	case ra.spec == nil:
		add("spec is missing")
	}
	if n := contiguous(ra.entries); n < h.Entries {
		add("entries %d..%d of %d are missing or unreadable", n+1, h.Entries, h.Entries)
	}
	if len(ra.entries) > 0 && ra.entries[len(ra.entries)-1] > h.Entries {
		add("entries beyond the head's count %d are stored", h.Entries)
	}
	if miss := missingOps(ra.opSteps[h.Step], h.NumOps); len(miss) > 0 {
		add("ops %v of step %d (of %d) are missing or unreadable", miss, h.Step, h.NumOps)
	}
	switch {
	case !h.Status.Terminal() && !ra.indexed:
		add("status %s but not in the unfinished index", h.Status)
	case h.Status.Terminal() && ra.indexed:
		add("status %s but still in the unfinished index", h.Status)
	}
	return out
}

// lostSummary describes what of a run could not be read, for a recovery
// report (nil if nothing).
func (ra *runAudit) lostSummary() []string {
	var out []string
	out = append(out, ra.lost...)
	if ra.head == nil {
		return out
	}
	if ra.spec == nil {
		out = append(out, "spec")
	}
	if n := contiguous(ra.entries); n < ra.head.Entries {
		var gaps []uint64
		for s := n + 1; s <= ra.head.Entries; s++ {
			if _, found := slices.BinarySearch(ra.entries, s); !found {
				gaps = append(gaps, s)
			}
		}
		out = append(out, fmt.Sprintf("entries %s", seqRanges(gaps)))
	}
	if miss := missingOps(ra.opSteps[ra.head.Step], ra.head.NumOps); len(miss) > 0 {
		out = append(out, fmt.Sprintf("ops %v of step %d", miss, ra.head.Step))
	}
	return out
}

// seqRanges formats ascending numbers as "3..5, 9".
func seqRanges(s []uint64) string {
	var b bytes.Buffer
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		if j > i {
			fmt.Fprintf(&b, "%d..%d", s[i], s[j])
		} else {
			fmt.Fprintf(&b, "%d", s[i])
		}
		i = j + 1
	}
	return b.String()
}
