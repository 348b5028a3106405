package state

import (
	"context"
	"time"

	"github.com/flockrun/flock/record"
)

// Commit is one atomic change to one run.
type Commit struct {
	RunID string
	// ID, if set, names the commit so that it can be retried safely after
	// an error that leaves its outcome unknown (ErrUnavailable): a store
	// that finds a commit of this ID applied to the run's head returns nil
	// (with the event numbers and revision it was given), and a shared
	// store reuses what an earlier attempt appended. A retry must carry
	// the same content. Stores whose commits always know their outcome
	// (bbolt) ignore it.
	ID string
	// ExpectRevision, if not 0, fences the commit: it applies only if the
	// stored head's Revision equals it (the head the caller last read or
	// wrote), otherwise Commit fails with an error wrapping ErrFenced and
	// writes nothing. The check holds whether or not the commit writes the
	// head. 0 means no check (creating a run, or a head written before
	// revisions existed, whose Revision reads as 0).
	ExpectRevision uint64
	// Run, if set, replaces the head. Its Revision is assigned by the
	// store (the stored revision + 1) and written back into *Run when
	// Commit returns nil.
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

// RunsLimit is the page size of Reader.Runs for a RunFilter.Limit of n:
// 50 when n <= 0, at most 1000. Every Store pages by it.
func RunsLimit(n int) int { return clampLimit(n, 50, 1000) }

// LogLimit is the page size of Reader.Entries, Ops and Events for a limit
// of n: 1000 when n <= 0, at most 10000. Every Store pages by it.
func LogLimit(n int) int { return clampLimit(n, 1000, 10000) }

// clampLimit returns n, or def if n <= 0, capped at maxN.
func clampLimit(n, def, maxN int) int {
	if n <= 0 {
		return def
	}
	return min(n, maxN)
}

// Lease is an owner's claim on a run: while it lasts, no other owner may
// claim the run.
type Lease struct {
	RunID string
	// Owner names the holder (an executor: a node name, or a process).
	Owner string
	// Expires is when the lease lapses unless renewed, by the store's
	// clock.
	Expires time.Time
}

// Leaser hands out runs to the owners that drive them. Leases say who may
// drive a run; they do not guard writes by themselves: a holder that was
// too slow to renew may still be writing when another owner claims the
// run. Commits are guarded by the head revision (Commit.ExpectRevision),
// which every owner passes, so whichever of two owners commits first
// wins and the other's next commit fails with ErrFenced.
type Leaser interface {
	// Claim gives owner the lease on run id until ttl from now, if no
	// other owner holds an unexpired one (otherwise ErrLeaseHeld).
	// Claiming a run the owner already holds renews it. The run need not
	// exist yet: a run is claimed before it is created.
	Claim(ctx context.Context, id, owner string, ttl time.Duration) (Lease, error)
	// Renew extends owner's lease on run id to ttl from now. It fails
	// with ErrLeaseLost if owner no longer holds it: released, or expired
	// and claimed by another owner. (A store may also refuse an expired
	// lease no one else claimed; the bbolt store renews it.)
	Renew(ctx context.Context, id, owner string, ttl time.Duration) (Lease, error)
	// Release ends owner's lease on run id so that another owner may
	// claim it at once. Releasing a lease owner does not hold is a no-op.
	Release(ctx context.Context, id, owner string) error
}

// Store is the persistence of runs: the bbolt store (state/bolt) is the
// embedded default, and the contract admits a distributed one (state/jetstream;
// docs/design.md, "Stores"). What any Store must guarantee:
//
//   - Commit is atomic (all of it or nothing) and durable when it
//     returns nil; commits of one caller apply in call order; concurrent
//     commits of many runs may share a write and a sync.
//   - Entries continue the stored log (ErrConflict otherwise), event
//     numbers are assigned by the store, and a run's Spec is written once.
//   - Every commit that writes a head bumps its Revision by one, and a
//     commit with ExpectRevision applies only against that exact revision
//     (ErrFenced otherwise, writing nothing). The check and the write are
//     one atomic step: two commits expecting the same revision never both
//     apply.
//   - At most one owner holds an unexpired lease on a run (Leaser).
//   - Op requests and results are stored in the codec's records
//     (EncodeRequest, EncodeResult) with their chunks kept once by key.
//   - Reads return what committed writes left, copied out for the caller.
//
// Optional capabilities are separate interfaces found by type assertion
// (StatsReporter).
type Store interface {
	Writer
	Reader
	Leaser
	// Close flushes and releases the store. Commits after Close fail with ErrClosed.
	Close() error
}

// StatsReporter is implemented by stores that count their work, for
// telemetry. Stats is safe to call at any time, including after Close.
type StatsReporter interface {
	Stats() Stats
}

// Stats are a store's counters since it was opened.
type Stats struct {
	// Commits is the number of commits applied.
	Commits uint64
	// Rejected is the number of commits that returned an error.
	Rejected uint64
	// Txs is the number of write transactions (or batched writes)
	// committed. Commits/Txs is the average group size.
	Txs uint64
	// Bytes is the logical size of the applied changes (keys and values).
	Bytes uint64
	// PageBytes is the physical write volume where the store knows it
	// (bbolt: pages allocated to write transactions), else 0.
	PageBytes int64
}

// RunFilter selects runs for listing.
type RunFilter struct {
	Status   Status
	Workflow string
	ParentID string
	// TopLevel keeps only runs without a parent (no child runs).
	TopLevel bool
	// After is the cursor returned by the previous page ("" = first page).
	After string
	// Limit caps the page size (default 50, max 1000).
	Limit int
}

// Matches reports whether r passes f's Status, Workflow, ParentID and
// TopLevel (After and Limit page the listing; they do not select).
func (f RunFilter) Matches(r Run) bool {
	return (f.Status == "" || r.Status == f.Status) &&
		(f.Workflow == "" || r.Workflow == f.Workflow) &&
		(f.ParentID == "" || r.ParentID == f.ParentID) &&
		(!f.TopLevel || r.ParentID == "")
}
