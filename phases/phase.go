package phases

import (
	"encoding/json"
	"time"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/record"
)

// Phase is one step of a workflow.
type Phase func(in Input) (Output, error)

// Input is everything a phase may look at.
type Input struct {
	Run RunInfo
	// State is the run's state as of the end of the previous phase.
	State State
	// Results are the results of the previous phase's operations, in the
	// order they were requested. Each carries the request's Meta.
	Results []operations.Result
}

// RunInfo identifies the run and carries its immutable inputs.
type RunInfo struct {
	ID       string
	ParentID string
	Workflow string
	// Phase is the name of the phase being called.
	Phase string
	// Step counts phase calls in this run, starting at 1.
	Step uint64
	Task string
	// Settings is the run's settings document as given at start.
	Settings json.RawMessage
	// Now is the time of this call, chosen by the executor.
	Now time.Time
	// WorkDir is the run's working directory (operations run there).
	WorkDir string
}

// Output is what a phase asks for.
type Output struct {
	// Ops run in parallel after this output is committed.
	Ops []operations.Request
	// Append is added to the run's entry log; the executor assigns sequence numbers.
	Append []Entry
	// Set updates the run's small vars; a nil or JSON-null value deletes the var.
	Set map[string]json.RawMessage
	// Next is the phase to call with Ops' results; "" ends the run once Ops finish.
	Next string
	// Delay postpones the next phase call; Ops run at once.
	Delay time.Duration
	// End, when Next is "", says how the run ends. Nil means succeeded.
	End *End
}

// End describes how a run finishes.
type End struct {
	// Failed ends the run with status failed instead of succeeded.
	Failed bool `json:"failed,omitempty"`
	// Reason is the end_reason (for example "submitted" or "command_failed: make test").
	Reason string `json:"reason,omitempty"`
	// Error is the run's error when Failed, one line saying what went
	// wrong (for example a model failure's message); "" uses Reason.
	Error string `json:"error,omitempty"`
	// Result replaces the run's result (JSON). Nil keeps the result recorded so far.
	Result json.RawMessage `json:"result,omitempty"`
}

// Entry is one record of a run's append-only log. It is record.Entry,
// aliased so phase code reads phases.Entry.
type Entry = record.Entry

// State is a read-only view of a run's state.
//
// The executor's State does not hold the log in memory: Entry reads it
// from the store through a cache of bounded size shared by all runs. Read
// the newest entries first and stop when you have enough (as the agents
// do under a context budget); a phase that scans the whole log every step
// costs a store read per 64 entries once a run's history outgrows the
// cache. Entry never returns another entry than the one asked for: if the
// store cannot be read it returns the zero Entry, and the executor discards
// the phase's output (the step is called again when the run resumes).
type State interface {
	// Var returns a var's JSON value, or nil if unset.
	Var(name string) json.RawMessage
	// Len is the number of entries in the log.
	Len() int
	// Entry returns the i-th entry (0-based, oldest first).
	Entry(i int) Entry
	// Usage returns what the run has consumed and its limits.
	Usage() (operations.RunUsage, operations.RunLimits)
}
