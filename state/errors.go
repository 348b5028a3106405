package state

import "errors"

var (
	// ErrNotFound is returned when a run does not exist.
	ErrNotFound = errors.New("run not found")
	// ErrClosed is returned by operations on a closed store.
	ErrClosed = errors.New("store closed")
	// ErrSchema is returned when a record's schema version is newer than this build understands.
	ErrSchema = errors.New("unsupported schema version")
	// ErrConflict is returned when a commit's entries do not follow the stored log
	// (or it writes the spec of a run whose spec is already stored).
	ErrConflict = errors.New("commit conflicts with stored state")
	// ErrInUse is returned when another process holds the data file.
	ErrInUse = errors.New("data directory is in use by another flock process")
	// ErrNoSpace is returned when a commit failed because the disk holding
	// the store is full (or over quota). Nothing of the commit was written;
	// the same commit may be retried once space is freed. The error text
	// names the store's file.
	ErrNoSpace = errors.New("no space left on device")
	// ErrCorrupt is returned when the database file is damaged: a page or
	// record cannot be read. The error names the file and the first damage.
	ErrCorrupt = errors.New("database is damaged")
	// ErrFenced is returned by a commit whose ExpectRevision does not
	// match the stored head's revision: someone else (another owner of the
	// run, or a commit made meanwhile) wrote the head since the caller
	// read it. Nothing of the commit was written. The caller must stop
	// driving the run and, if it still holds the run's lease, reload it
	// from the store before writing again.
	ErrFenced = errors.New("commit fenced: the run's head has changed since it was read")
	// ErrLeaseHeld is returned by Claim when another owner holds an
	// unexpired lease on the run.
	ErrLeaseHeld = errors.New("run is leased to another owner")
	// ErrReadOnly is returned by commits to a store opened read-only
	// (bolt.Options.ReadOnly).
	ErrReadOnly = errors.New("store is open read-only")
	// ErrLeaseLost is returned by Renew when the caller no longer holds
	// the run's lease (it expired and was claimed by another owner, or was
	// released).
	ErrLeaseLost = errors.New("lease on the run was lost")
	// ErrUnavailable is returned when a shared store did not answer in
	// time or answered that it cannot serve now: a cluster electing new
	// leaders after a server died, a connection being re-established.
	// It is transient: the same call may be retried. A commit that fails
	// with it may or may not have applied; retried with the same
	// Commit.ID it applies at most once (see Commit.ID).
	ErrUnavailable = errors.New("the store does not answer")
)
