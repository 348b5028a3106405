package operations

import (
	"encoding/json"
	"fmt"

	"github.com/flockrun/flock/record"
)

// Result is the outcome of one operation. Error is set when the operation
// could not do its job (a handler failure, a bad request, a dead endpoint);
// an operation that ran and failed on its own terms (a command exiting 1) is
// not an error. Data is set when Error is empty.
type Result struct {
	Kind  Kind
	Error string
	// Code classifies a failure (see Code); empty when Error is, and when
	// the handler knows no more than the message.
	Code Code
	// Meta is copied from the request.
	Meta Meta
	// Data is the kind's result: a pointer to the result type of its
	// declaration (see Declare; KindOf.Result reads it typed).
	Data any
}

// BashResult is the outcome of a shell command.
type BashResult struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exit_code"`
	TimedOut bool   `json:"timed_out"`
	// Truncated reports that the middle of the output was elided.
	Truncated bool `json:"truncated"`
}

// PythonResult is the outcome of running python code.
type PythonResult struct {
	Output    string `json:"output"`
	Error     string `json:"error"`
	TimedOut  bool   `json:"timed_out"`
	Truncated bool   `json:"truncated,omitempty"`
}

// SpawnResult is the end state of a child run.
type SpawnResult struct {
	RunID     string          `json:"run_id"`
	Status    record.Status   `json:"status"`
	Result    json.RawMessage `json:"result,omitempty"`
	EndReason string          `json:"end_reason,omitempty"`
	Error     string          `json:"error,omitempty"`
	Usage     RunUsage        `json:"usage"`
	// WorkDir is the child's working directory, where its operations ran
	// and its files are (under the parent's, in children/NAME). Results
	// journaled before the field existed have none.
	WorkDir string `json:"work_dir,omitempty"`
}

// SubmitResult acknowledges a submission.
type SubmitResult struct {
	Accepted bool `json:"accepted"`
}

// ScoreResult is what the task's scorer said.
type ScoreResult struct {
	Score   *float64 `json:"score"`
	Message string   `json:"message"`
}

// ScoreLogResult lists the scores recorded so far.
type ScoreLogResult struct {
	Entries []ScoreLogEntry `json:"entries"`
}

// ScoreLogEntry is one recorded score.
type ScoreLogEntry struct {
	ElapsedSeconds float64  `json:"elapsed_seconds"`
	Score          *float64 `json:"score"`
	Message        string   `json:"message"`
}

// RunUsage is what a run has consumed.
type RunUsage struct {
	Tokens  int     `json:"tokens"`
	Actions int     `json:"actions"`
	Seconds float64 `json:"seconds"`
	Cost    float64 `json:"cost"`
	// ReplayHits and ReplayMisses count the generates of a run with
	// replay_from answered from the recorded run's journal (no tokens
	// paid) and those that fell back to the live model.
	ReplayHits   int `json:"replay_hits,omitempty"`
	ReplayMisses int `json:"replay_misses,omitempty"`
}

// RunLimits caps a run's usage; a zero field means no limit.
type RunLimits struct {
	Tokens  int     `json:"tokens,omitempty" min:"0"`
	Actions int     `json:"actions,omitempty" min:"0"`
	Seconds float64 `json:"seconds,omitempty" min:"0"`
	Cost    float64 `json:"cost,omitempty" min:"0"`
}

// GetUsageResult reports usage and limits.
type GetUsageResult struct {
	Usage  RunUsage  `json:"usage"`
	Limits RunLimits `json:"limits"`
}

// GetTaskResult describes the task.
type GetTaskResult struct {
	Instructions string  `json:"instructions"`
	Scoring      Scoring `json:"scoring"`
}

// Scoring describes how the task is scored.
type Scoring struct {
	Intermediate   bool `json:"intermediate"`
	VisibleToAgent bool `json:"visible_to_agent"`
}

// RecordedResult acknowledges log, action and observation requests.
type RecordedResult struct {
	Recorded bool `json:"recorded"`
}

// SandboxResult is the AgentFlow response envelope.
type SandboxResult struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
	Meta    json.RawMessage `json:"meta,omitempty"`
}

// ReadFileResult is a file's content.
type ReadFileResult struct {
	// Exists is false when the file does not exist (not an error).
	Exists  bool   `json:"exists"`
	Content string `json:"content"`
	Bytes   int64  `json:"bytes"`
}

// WriteFileResult acknowledges a write.
type WriteFileResult struct {
	// Path is the absolute path written.
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
}

// Failed returns a result for kind that carries only an error message.
func Failed(req Request, format string, args ...any) Result {
	return Result{Kind: req.Kind, Meta: req.Meta, Error: fmt.Sprintf(format, args...)}
}

type wireResult struct {
	Type  Kind            `json:"type"`
	Error string          `json:"error,omitempty"`
	Code  Code            `json:"code,omitempty"`
	Meta  Meta            `json:"meta,omitempty"`
	Data  json.RawMessage `json:"data,omitempty"`
}

// MarshalJSON encodes r as {"type", "error", "code", "meta", "data"}.
func (r Result) MarshalJSON() ([]byte, error) {
	if _, err := payloadInfo(r.Kind, r.Data, false); err != nil {
		return nil, err
	}
	w := wireResult{Type: r.Kind, Error: r.Error, Code: r.Code, Meta: r.Meta}
	if !isNilPayload(r.Data) {
		var err error
		if w.Data, err = json.Marshal(r.Data); err != nil {
			return nil, fmt.Errorf("encode %s result: %w", r.Kind, err)
		}
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes {"type", "error", "code", "meta", "data"}.
func (r *Result) UnmarshalJSON(b []byte) error {
	var w wireResult
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = Result{Kind: w.Type, Error: w.Error, Code: w.Code, Meta: w.Meta}
	if len(w.Data) == 0 || string(w.Data) == "null" {
		return nil
	}
	info, ok := LookupKind(w.Type)
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownKind, w.Type)
	}
	r.Data = info.NewResult()
	if err := json.Unmarshal(w.Data, r.Data); err != nil {
		return fmt.Errorf("decode %s result: %w", w.Type, err)
	}
	return nil
}
