package jetstream

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/flockrun/flock/state"
)

// envelope is the value of a run's key in the heads bucket: the head and
// how far each of the run's logs is committed. Writing it, with a
// revision check, is what applies a commit (see the package doc).
type envelope struct {
	// Run is the head with its revision; absent for a run that has logs
	// but no head yet.
	Run json.RawMessage `json:"run,omitempty"`
	// Rev is the head's revision (0 without a head).
	Rev uint64 `json:"rev,omitempty"`
	// Entries and Events count the committed items of those logs.
	Entries uint64 `json:"entries,omitempty"`
	Events  uint64 `json:"events,omitempty"`
	// Tips are, per log (in the order of kinds), the stream sequence of
	// its last committed message (0: none). Messages past a tip are not
	// committed and are ignored by readers.
	Tips [len(kinds)]uint64 `json:"tips"`
	// EntryMarks and EventMarks map item numbers to stream sequences, so
	// that readers start near the items they want instead of at the
	// log's start.
	EntryMarks marks `json:"entry_marks"`
	EventMarks marks `json:"event_marks"`
	// OpStep is the step of the latest ops journaled, OpIdx the indexes
	// journaled at that step, and OpFrom the lowest stream sequence of
	// that step's op and result messages (where StepOps of OpStep starts).
	OpStep uint64   `json:"op_step,omitempty"`
	OpIdx  []uint32 `json:"op_idx,omitempty"`
	OpFrom uint64   `json:"op_from,omitempty"`
	// Unf and Child say that the run's entries in the index stream (as
	// unfinished, as a child of its parent) were put.
	Unf   bool `json:"unf,omitempty"`
	Child bool `json:"child,omitempty"`
	// Commit is the id of the commit that wrote this envelope.
	Commit string `json:"commit,omitempty"`
	// Done lists the last commits that carried a state.Commit.ID, newest
	// last (at most maxDone), so that a commit retried after an unknown
	// outcome is found applied even when later commits followed it.
	Done []doneCommit `json:"done,omitempty"`
}

// doneCommit is an applied commit that carried a state.Commit.ID.
type doneCommit struct {
	ID string `json:"i"`
	// Event is the number given to its first event (0: none), Rev the
	// head revision it wrote (0: none).
	Event uint64 `json:"e,omitempty"`
	Rev   uint64 `json:"r,omitempty"`
}

// maxDone bounds envelope.Done.
const maxDone = 8

// done returns the applied commit of ID id, if the envelope lists it.
func (e *envelope) done(id string) (doneCommit, bool) {
	for _, d := range e.Done {
		if d.ID == id {
			return d, true
		}
	}
	return doneCommit{}, false
}

// mark says that the message at stream sequence Seq starts with item
// First.
type mark struct {
	First uint64
	Seq   uint64
}

func (m mark) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, "[%d,%d]", m.First, m.Seq), nil
}

func (m *mark) UnmarshalJSON(b []byte) error {
	var v [2]uint64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	m.First, m.Seq = v[0], v[1]
	return nil
}

// Bounds of a log's marks.
const (
	recentMarks = 16  // the newest messages, each marked
	sparseMarks = 32  // older ones, one mark per stride of items
	firstStride = 256 // items per sparse mark until there are too many
)

// marks map a log's item numbers to stream sequences: every one of the
// newest messages, and for older ones the first message starting in each
// stride of items, the stride doubling whenever the sparse marks overflow.
// Reading item n then starts at most a stride (about count/16 items)
// before it, and at the tail at its message.
type marks struct {
	Recent []mark `json:"r,omitempty"`
	Sparse []mark `json:"s,omitempty"`
	Stride uint64 `json:"w,omitempty"`
}

// add records that the message at m.Seq starts with item m.First; marks
// are added in log order.
func (ms *marks) add(m mark) {
	ms.Recent = append(slices.Clip(ms.Recent), m)
	if len(ms.Recent) > recentMarks {
		ms.Recent = ms.Recent[len(ms.Recent)-recentMarks:]
	}
	if ms.Stride == 0 {
		ms.Stride = firstStride
	}
	if n := len(ms.Sparse); n == 0 || m.First/ms.Stride > ms.Sparse[n-1].First/ms.Stride {
		ms.Sparse = append(slices.Clip(ms.Sparse), m)
	}
	for len(ms.Sparse) > sparseMarks {
		ms.Stride *= 2
		kept := ms.Sparse[:0:0]
		for _, x := range ms.Sparse {
			if len(kept) == 0 || x.First/ms.Stride > kept[len(kept)-1].First/ms.Stride {
				kept = append(kept, x)
			}
		}
		ms.Sparse = kept
	}
}

// startFor returns the stream sequence to start scanning from to find
// item after+1: the greatest sequence of a mark whose first item is at
// most after+1 (0 = the start of the log).
func (ms *marks) startFor(after uint64) uint64 {
	var seq uint64
	for _, list := range [][]mark{ms.Sparse, ms.Recent} {
		for _, m := range list {
			if m.First <= after+1 {
				seq = max(seq, m.Seq)
			}
		}
	}
	return seq
}

func (ms *marks) clone() marks {
	return marks{Recent: slices.Clone(ms.Recent), Sparse: slices.Clone(ms.Sparse), Stride: ms.Stride}
}

// tip returns the tip of log kind.
func (e *envelope) tip(kind string) uint64 { return e.Tips[kindIndex(kind)] }

func kindIndex(kind string) int {
	for i, k := range kinds {
		if k == kind {
			return i
		}
	}
	panic("jetstream store: unknown log kind " + kind)
}

// clone returns a copy of e that shares no slices with it.
func (e *envelope) clone() *envelope {
	c := *e
	c.EntryMarks = e.EntryMarks.clone()
	c.EventMarks = e.EventMarks.clone()
	c.OpIdx = slices.Clone(e.OpIdx)
	c.Done = slices.Clone(e.Done)
	return &c
}

// decodeEnvelope decodes a heads bucket value.
func decodeEnvelope(key string, b []byte) (*envelope, error) {
	var e envelope
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("%w: %w: head of run key %s: %v", state.ErrCorrupt, ErrCorrupt, key, err)
	}
	return &e, nil
}

// head decodes and migrates the envelope's head; ok is false without one.
func (e *envelope) head(key string) (r state.Run, ok bool, err error) {
	if len(e.Run) == 0 {
		return state.Run{}, false, nil
	}
	if err := json.Unmarshal(e.Run, &r); err != nil {
		return state.Run{}, true, fmt.Errorf("%w: %w: decode run %s: %v", state.ErrCorrupt, ErrCorrupt, key, err)
	}
	if err := state.Migrate(&r); err != nil {
		return state.Run{}, true, err
	}
	return r, true, nil
}
