package record

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Entry is one record of a run's append-only log.
type Entry struct {
	// Seq is assigned by the executor; phases leave it zero.
	Seq uint64 `json:"seq"`
	// Type names the record type, e.g. "message", "option", "tool_output".
	Type string `json:"type"`
	// Phase and Step say which phase call appended the entry (set by the executor).
	Phase string          `json:"phase,omitempty"`
	Step  uint64          `json:"step,omitempty"`
	Data  json.RawMessage `json:"data"`
}

// Entry types the engine itself writes (phases choose their own).
const (
	// EntryTypeScore records an intermediate score from a task's scorer
	// (an operations.ScoreLogEntry); the score_log operation reads them back.
	EntryTypeScore = "score"
	// EntryTypeLog records a log operation's request (operations.LogRequest).
	EntryTypeLog = "log"
	// EntryTypeAction records an action operation's request.
	EntryTypeAction = "action"
	// EntryTypeObservation records an observation operation's request.
	EntryTypeObservation = "observation"
	// EntryTypeSubmission records an accepted submission's request
	// (operations.SubmitRequest); its answer is also the run's result.
	EntryTypeSubmission = "submission"
	// EntryTypeOperatorMessage is a message an operator injected when
	// forking a run (an OperatorMessage); agents show it to the model as
	// a user message.
	EntryTypeOperatorMessage = "operator_message"
	// EntryTypeLost is the placeholder a database recovery puts where an
	// entry of a run's log could not be read, so the log stays numbered 1..n.
	EntryTypeLost = "recovery.lost"
)

// OperatorMessage is the data of an operator_message entry.
type OperatorMessage struct {
	Summary string `json:"summary"`
	Content string `json:"content"`
}

// NewEntry encodes v as an entry of type typ. HTML characters are kept as
// they are (no \u003c escapes), so raw JSON inside v, such as a tool call's
// arguments, reads back byte for byte.
func NewEntry(typ string, v any) (Entry, error) {
	b, err := Marshal(v)
	if err != nil {
		return Entry{}, fmt.Errorf("encode %s entry: %w", typ, err)
	}
	return Entry{Type: typ, Data: b}, nil
}

// Marshal is json.Marshal without HTML escaping. Entries are stored in
// this encoding, so raw JSON inside them reads back byte for byte.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Decode decodes the entry's data into v.
func (e Entry) Decode(v any) error {
	if err := json.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("decode %s entry %d: %w", e.Type, e.Seq, err)
	}
	return nil
}
