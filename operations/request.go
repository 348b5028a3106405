package operations

import (
	"encoding/json"
	"fmt"
)

// Request is one operation asked for by a phase: its kind and the kind's
// params.
type Request struct {
	Kind Kind
	// Meta carries small free-form labels (purpose, role, option index) that
	// are journaled with the request and copied onto its result. Phases use it
	// to recognise results; handlers ignore it, except that a model stand-in
	// reads MetaRole.
	Meta Meta
	// Params is the kind's params: a pointer to the params type of its
	// declaration (see Declare; KindOf.Params reads it typed).
	Params any
}

// BashRequest runs a command in the run's persistent shell.
type BashRequest struct {
	Command string `json:"command"`
	// TimeoutS is the command's timeout in seconds; 0 means the handler default.
	TimeoutS float64 `json:"timeout_s,omitempty"`
	// Session names the shell; "" means "main". Cwd, variables, functions and
	// aliases persist per (run, session).
	Session string `json:"session,omitempty"`
}

// PythonRequest runs code in the run's persistent interpreter.
type PythonRequest struct {
	Code     string  `json:"code"`
	TimeoutS float64 `json:"timeout_s,omitempty"`
}

// SpawnRequest starts a child run and completes when it ends.
type SpawnRequest struct {
	Workflow string          `json:"workflow"`
	Settings json.RawMessage `json:"settings,omitempty"`
	Task     string          `json:"task,omitempty"`
	// Name is a label for the child, unique within the parent (used for the
	// child's work subdirectory).
	Name string `json:"name,omitempty"`
}

// SubmitRequest records the run's answer.
type SubmitRequest struct {
	Answer string `json:"answer"`
}

// ScoreRequest runs the task's scorer.
type ScoreRequest struct{}

// ScoreLogRequest returns the scores recorded so far.
type ScoreLogRequest struct{}

// GetUsageRequest asks for the run's usage and limits.
type GetUsageRequest struct{}

// GetTaskRequest asks for the task's instructions and scoring info.
type GetTaskRequest struct{}

// LogRequest appends a log entry to the run.
type LogRequest struct {
	Content string `json:"content"`
	Level   string `json:"level,omitempty"`
	Title   string `json:"title,omitempty"`
}

// ActionRequest records an action entry.
type ActionRequest struct {
	Type       string          `json:"type"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// ObservationRequest records an observation entry.
type ObservationRequest struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}

// SandboxRequest calls a sandbox tool, AgentFlow style ("resource:tool").
type SandboxRequest struct {
	Action string          `json:"action"`
	Params json.RawMessage `json:"params,omitempty"`
	// TimeoutS is the call's timeout in seconds; 0 means the sandbox's
	// server.default_timeout.
	TimeoutS float64 `json:"timeout_s,omitempty"`
	// Session names one of the run's sandbox sessions ("" is the run's
	// own): a stateful tool runs on the run's session of that name, its
	// own worker on the sandbox. The synthesis sampler gives each branch
	// of a tree its own.
	Session string `json:"session,omitempty"`
	// ForkFrom lists sessions of the run, nearest first: a session created
	// for this call is forked from the first of them that has a session of
	// the tool's resource type (where the backend can fork), so it starts
	// with that one's state and later calls on either do not reach the
	// other.
	ForkFrom []string `json:"fork_from,omitempty"`
}

// ReadFileRequest reads a file. Relative paths are resolved against the
// run's work directory; the file must lie beneath it or beneath a read
// root of the server (see package handlers/files).
type ReadFileRequest struct {
	Path string `json:"path"`
	// MaxBytes caps what is read (default 64 MiB); a larger file is an error.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// As "jsonl" returns a Parquet file's rows as JSON lines (one object
	// per row); a file that is not Parquet is an error. "" returns the
	// bytes.
	As string `json:"as,omitempty"`
}

// ReadAsJSONL is ReadFileRequest.As for tabular files read as JSON lines.
const ReadAsJSONL = "jsonl"

// WriteFileRequest writes (or appends to) a file, creating parent
// directories. Relative paths are resolved against the run's work
// directory, beneath which the file must lie (see package handlers/files).
// A write replaces the file atomically (temp file + rename).
type WriteFileRequest struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Append  bool   `json:"append,omitempty"`
}

// Validate checks that r's kind is declared and that it carries params of
// the kind's type.
func (r *Request) Validate() error {
	if _, err := payloadInfo(r.Kind, r.Params, true); err != nil {
		return err
	}
	if isNilPayload(r.Params) {
		return fmt.Errorf("%w: %s request has no params", ErrMissingParams, r.Kind)
	}
	return nil
}

type wireRequest struct {
	Type   Kind            `json:"type"`
	Params json.RawMessage `json:"params,omitempty"`
	Meta   Meta            `json:"meta,omitempty"`
}

// MarshalJSON encodes r as {"type", "params", "meta"}.
func (r Request) MarshalJSON() ([]byte, error) {
	if _, err := payloadInfo(r.Kind, r.Params, true); err != nil {
		return nil, err
	}
	w := wireRequest{Type: r.Kind, Meta: r.Meta}
	if !isNilPayload(r.Params) {
		var err error
		if w.Params, err = json.Marshal(r.Params); err != nil {
			return nil, fmt.Errorf("encode %s params: %w", r.Kind, err)
		}
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes {"type", "params", "meta"}. Missing params decode as
// the zero params of the kind.
func (r *Request) UnmarshalJSON(b []byte) error {
	var w wireRequest
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	info, ok := LookupKind(w.Type)
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownKind, w.Type)
	}
	*r = Request{Kind: w.Type, Meta: w.Meta, Params: info.NewParams()}
	if len(w.Params) > 0 && string(w.Params) != "null" {
		if err := json.Unmarshal(w.Params, r.Params); err != nil {
			return fmt.Errorf("decode %s params: %w", w.Type, err)
		}
	}
	return nil
}
