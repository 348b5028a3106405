package text2sql

import "errors"

var (
	// ErrUnknownDatabase is returned for a db_id that names no configured database.
	ErrUnknownDatabase = errors.New("unknown database")
	// ErrRejected is returned for a query the backend refuses to run: a statement that
	// is not SELECT, WITH or PRAGMA, more than one statement, an empty query, or an
	// operation the read-only authorizer denies (ATTACH, writes, setting pragmas).
	ErrRejected = errors.New("query rejected")
	// ErrQuery is returned when SQLite fails a query the backend accepted: a syntax
	// error, an unknown table or column, a write attempted through a CTE.
	ErrQuery = errors.New("query failed")
	// ErrTimeout is returned when a query runs past its deadline; SQLite is
	// interrupted and the connection stays usable.
	ErrTimeout = errors.New("query timed out")
)
