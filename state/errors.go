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
)
