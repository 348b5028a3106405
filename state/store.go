package state

import (
	"context"

	"github.com/flockrun/flock/record"
)

// Commit is one atomic change to one run.
type Commit struct {
	RunID string
	// Run, if set, replaces the head.
	Run *Run
	// Spec, if set, is written (only when creating a run).
	Spec *Spec
	// Entries are appended; their Seq must be set by the caller and follow
	// the head's previous Entries count.
	Entries []record.Entry
	// Ops are written (inserted or replaced) by ID.
	Ops []Op
	// Events are appended; the Store assigns their Seq in order and writes
	// the assigned numbers back into this slice before Commit returns.
	Events []Event
}

// Writer applies commits.
type Writer interface {
	// Commit applies c atomically and durably. Concurrent calls may share one
	// transaction and one fsync; a lone call never waits for company.
	// Commits of one caller are applied in call order.
	Commit(ctx context.Context, c *Commit) error
}

// Reader reads what commits wrote. Results are copies owned by the caller.
type Reader interface {
	// Run returns a run's head, or ErrNotFound.
	Run(ctx context.Context, id string) (Run, error)
	// Spec returns a run's task and settings, or ErrNotFound.
	Spec(ctx context.Context, id string) (Spec, error)
	// Runs lists heads newest first, filtered, after the cursor.
	Runs(ctx context.Context, f RunFilter) (runs []Run, next string, err error)
	// Unfinished lists heads whose status is running or paused.
	Unfinished(ctx context.Context) ([]Run, error)
	// Children lists the ids of a run's direct children.
	Children(ctx context.Context, id string) ([]string, error)
	// Entries returns up to limit entries with Seq > after, oldest first.
	Entries(ctx context.Context, id string, after uint64, limit int) ([]record.Entry, error)
	// StepOps returns the ops of one step, ordered by index.
	StepOps(ctx context.Context, id string, step uint64) ([]Op, error)
	// Ops returns up to limit ops of a run after the given op ID ("" = from
	// the start), ordered by step then index.
	Ops(ctx context.Context, id string, after string, limit int) ([]Op, error)
	// Events returns up to limit events with Seq > after.
	Events(ctx context.Context, id string, after uint64, limit int) ([]Event, error)
}

// Store is the persistence of runs. The bbolt implementation is the
// default; the interface is shaped so a NATS JetStream implementation
// (per-run subjects with expected-sequence fencing, KV for heads) can
// follow.
type Store interface {
	Writer
	Reader
	// Close flushes and releases the store. Commits after Close fail with ErrClosed.
	Close() error
}

// RunFilter selects runs for listing.
type RunFilter struct {
	Status   Status
	Workflow string
	ParentID string
	// After is the cursor returned by the previous page ("" = first page).
	After string
	// Limit caps the page size (default 50, max 1000).
	Limit int
}
