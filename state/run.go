package state

import (
	"encoding/json"
	"time"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/record"
)

// SchemaVersion is the version of the persisted records. Migrate upgrades
// older records when they are read.
const SchemaVersion = 1

// Status is a run's lifecycle state (record.Status).
type Status = record.Status

// Run statuses (aliases of record's).
const (
	StatusRunning   = record.StatusRunning
	StatusPaused    = record.StatusPaused
	StatusSucceeded = record.StatusSucceeded
	StatusFailed    = record.StatusFailed
	StatusCancelled = record.StatusCancelled
)

// End reasons set by the engine itself (aliases of record's).
const (
	ReasonLimitTokens  = record.ReasonLimitTokens
	ReasonLimitActions = record.ReasonLimitActions
	ReasonLimitTime    = record.ReasonLimitTime
	ReasonLimitCost    = record.ReasonLimitCost
	ReasonCancelled    = record.ReasonCancelled
	ReasonPhaseError   = record.ReasonPhaseError
	ReasonCompleted    = record.ReasonCompleted
)

// Run is the head record of a run. It stays small: large data goes to the
// entry log or the operation journal.
type Run struct {
	Schema int `json:"schema"`
	// Revision numbers the versions of the head: every commit that writes
	// the head gives it the stored revision + 1 (the first head is 1;
	// heads written before revisions existed read as 0). It is assigned by
	// the Store, whatever the caller puts here, and fences commits
	// (Commit.ExpectRevision). It must stay the second field: the bbolt
	// store reads it without decoding the rest.
	Revision uint64 `json:"revision,omitempty"`
	ID       string `json:"id"`
	Workflow string `json:"workflow"`
	ParentID string `json:"parent_id,omitempty"`
	Status   Status `json:"status"`
	// Phase is the phase called last ("" before the first call).
	Phase string `json:"phase"`
	// Next is the phase to call once the current step's operations finish;
	// "" means the run ends then (see PendingEnd).
	Next string `json:"next"`
	// Step counts phase calls; the operation journal keys ops by step.
	Step uint64 `json:"step"`
	// NumOps is the number of operations requested by step Step.
	NumOps int `json:"num_ops"`
	// WakeAt delays the call of Next (a phase's Delay).
	WakeAt *time.Time `json:"wake_at,omitempty"`
	// PendingEnd is how the run ends once the current step's ops finish,
	// when Next is "".
	PendingEnd *PendingEnd `json:"pending_end,omitempty"`

	EndReason string          `json:"end_reason,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     string          `json:"error,omitempty"`

	// Usage is the usage as of the last phase commit. Results journaled
	// since then are added by the executor when it reads them back.
	Usage  operations.RunUsage  `json:"usage"`
	Limits operations.RunLimits `json:"limits"`
	// Vars are a workflow's small variables.
	Vars map[string]json.RawMessage `json:"vars,omitempty"`
	// Entries is the number of entries in the log (the last entry's Seq).
	Entries uint64 `json:"entries"`
	WorkDir string `json:"work_dir"`
	// ForkedFrom names the run and step this run was forked from.
	ForkedFrom *ForkRef `json:"forked_from,omitempty"`
	// Driver names the cluster node that took the run up last, and
	// DrivenSince when: written by that node when it starts driving the
	// run (a takeover after a node's death, a wake after a hand-off), kept
	// when it lets go (the run ended, is paused, parked or queued). Empty
	// for runs of a single flock process.
	Driver      string     `json:"driver,omitempty"`
	DrivenSince *time.Time `json:"driven_since,omitempty"`

	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
}

// ForkRef is the origin of a forked run: the run it was forked from and
// the step whose state it started with.
type ForkRef struct {
	Run  string `json:"run"`
	Step uint64 `json:"step"`
}

// PendingEnd records a phase's End until the step's ops finish.
type PendingEnd struct {
	Failed bool            `json:"failed,omitempty"`
	Reason string          `json:"reason,omitempty"`
	Error  string          `json:"error,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}

// Spec is a run's immutable input, stored once.
type Spec struct {
	Task     string          `json:"task"`
	Settings json.RawMessage `json:"settings"`
	// Key identifies the command that started a top-level run from the
	// command line (flock run, rollout, synthesize): a hash of its
	// resolved configuration. The same command again finds the run by it
	// and resumes it instead of starting another. Empty otherwise.
	Key string `json:"key,omitempty"`
	// Grants are the files the operator handed to a top-level run on the
	// command line: directories it (and its descendants) may read or
	// write besides the server's read_roots. A fork does not inherit them.
	Grants *Grants `json:"grants,omitempty"`
}

// Grants are directories one run tree may read or write beneath
// (record's).
type Grants = record.Grants

// OpStatus is the journal status of an operation.
type OpStatus string

// Operation statuses.
const (
	OpPending OpStatus = "pending"
	OpDone    OpStatus = "done"
)

// Op is one journaled operation.
type Op struct {
	// ID is "<run>/<step>/<index>"; stable across resumes.
	ID      string             `json:"id"`
	RunID   string             `json:"run_id"`
	Step    uint64             `json:"step"`
	Index   int                `json:"index"`
	Phase   string             `json:"phase"`
	Status  OpStatus           `json:"status"`
	Request operations.Request `json:"request"`
	Result  *operations.Result `json:"result,omitempty"`
	// Attempts counts dispatches, including the one that produced Result.
	// It is written with the result, so attempts lost in a crash are
	// counted on the next successful one.
	Attempts   int        `json:"attempts"`
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// EventType and EventStatus say what an event is about and what happened
// (record's; see record.EventRun and record.EventStalled for the values).
type (
	EventType   = record.EventType
	EventStatus = record.EventStatus
)

// Event types and statuses (aliases of record's).
const (
	EventRun   = record.EventRun
	EventPhase = record.EventPhase
	EventOp    = record.EventOp

	EventStalled   = record.EventStalled
	EventUnstalled = record.EventUnstalled
	EventWarning   = record.EventWarning
	EventCommitted = record.EventCommitted
	EventStarted   = record.EventStarted
	EventOK        = record.EventOK
	EventError     = record.EventError
	EventWaiting   = record.EventWaiting
)

// Event is one item of a run's event stream.
//
// Stored events have Seq >= 1. Live subscribers may also receive events
// with Seq 0, which are never stored: an operation starting, and (for
// subscribers of a run's whole tree) the events of its descendant runs;
// those carry RunID.
type Event struct {
	// Seq numbers the run's events from 1; assigned by the Store. 0 marks
	// a live-only event.
	Seq uint64 `json:"seq"`
	// RunID names the run a live-only event belongs to.
	RunID string    `json:"run_id,omitempty"`
	Time  time.Time `json:"time"`
	// Type is what the event is about; Status what happened to it.
	Type    EventType   `json:"type"`
	Status  EventStatus `json:"status,omitempty"`
	Phase   string      `json:"phase,omitempty"`
	Step    uint64      `json:"step,omitempty"`
	OpID    string      `json:"op_id,omitempty"`
	Kind    string      `json:"kind,omitempty"`
	Message string      `json:"message,omitempty"`
	// Data carries event-specific details (small JSON).
	Data json.RawMessage `json:"data,omitempty"`
}

// Final reports whether ev is the run's terminal run event, the last of
// its stream (record.FinalEvent).
func (ev Event) Final() bool { return record.FinalEvent(ev.Type, ev.Status) }

// Notice reports whether ev is a live-only event that says what holds the
// run (record.NoticeEvent): the executor gives these to plain subscribers
// too, not only to those of the run's tree.
func (ev Event) Notice() bool { return record.NoticeEvent(ev.Type, ev.Status) }
