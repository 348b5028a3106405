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
	// EntryMarks and EventMarks map item numbers to stream sequences
	// (the first item of a message, the message's sequence), thinned so
	// that recent messages are dense and old ones sparse: readers of a
	// log's tail start near it instead of at the log's start.
	EntryMarks []mark `json:"entry_marks,omitempty"`
	EventMarks []mark `json:"event_marks,omitempty"`
	// OpStep is the step of the latest ops journaled, OpIdx the indexes
	// journaled at that step, and OpFrom the lowest stream sequence of
	// that step's op and result messages (where StepOps of OpStep starts).
	OpStep uint64   `json:"op_step,omitempty"`
	OpIdx  []uint32 `json:"op_idx,omitempty"`
	OpFrom uint64   `json:"op_from,omitempty"`
	// Commit is the id of the commit that wrote this envelope.
	Commit string `json:"commit,omitempty"`
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

// maxMarks bounds a log's marks; past it the older half is thinned.
const maxMarks = 48

// addMark appends m to marks, thinning the older half by dropping every
// second mark when the list is full, so the newest marks stay dense.
func addMark(marks []mark, m mark) []mark {
	marks = append(slices.Clip(marks), m)
	if len(marks) <= maxMarks {
		return marks
	}
	half := len(marks) / 2
	out := make([]mark, 0, maxMarks)
	for i := 0; i < half; i += 2 {
		out = append(out, marks[i])
	}
	return append(out, marks[half:]...)
}

// startFor returns the stream sequence to start scanning from to find
// item after+1: the sequence of the last mark whose first item is at most
// after+1 (0 = the start of the log).
func startFor(marks []mark, after uint64) uint64 {
	var seq uint64
	for _, m := range marks {
		if m.First > after+1 {
			break
		}
		seq = m.Seq
	}
	return seq
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
	c.EntryMarks = slices.Clone(e.EntryMarks)
	c.EventMarks = slices.Clone(e.EventMarks)
	c.OpIdx = slices.Clone(e.OpIdx)
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
