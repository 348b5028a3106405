package text2sql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// MaxRows is the most rows execute returns; a query with more is cut there and
// answered with truncated set.
const MaxRows = 100

// Databases is the set of configured SQLite files, each opened read-only once and
// shared by every call. It is safe for concurrent use.
type Databases struct {
	ids []string       // sorted
	dbs map[string]*db // by id; read-only after Open
}

type db struct {
	id   string
	path string // absolute
	sql  *sql.DB
}

// roDriver is the driver every connection of this package is opened with: a private
// modernc Driver whose connection hook installs the read-only authorizer, so no
// connection of the pool ever runs without it.
var roDriver = func() *sqlite.Driver {
	d := &sqlite.Driver{}
	d.RegisterConnectionHook(func(c sqlite.ExecQuerierContext, _ string) error {
		r, ok := c.(sqlite.AuthorizerRegisterer)
		if !ok {
			return errors.New("sqlite driver has no authorizer")
		}
		return r.RegisterAuthorizer(authorize)
	})
	return d
}()

// connector opens roDriver connections to one DSN.
type connector struct{ dsn string }

func (c connector) Connect(ctx context.Context) (driver.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return roDriver.Open(c.dsn)
}

func (c connector) Driver() driver.Driver { return roDriver }

// readPragmasWithArgument are the pragmas that may be called with an argument: they
// read (table_info(t)...). Any other pragma with an argument or "= value" sets
// something and is denied.
var readPragmasWithArgument = map[string]bool{
	"table_info": true, "table_xinfo": true, "table_list": true,
	"index_list": true, "index_info": true, "index_xinfo": true,
	"foreign_key_list": true, "foreign_key_check": true,
	"integrity_check": true, "quick_check": true,
}

// authorize is the SQLite authorizer of every connection: reads, functions and
// recursive CTEs pass; pragmas pass when they only read; everything else (ATTACH,
// DETACH, writes, DDL, transactions, savepoints) is denied at prepare time.
func authorize(action sqlite.AuthorizerActionCode, arg1, arg2, _, _ string) sqlite.AuthorizerReturnCode {
	switch action {
	case sqlite.AuthSelect, sqlite.AuthRead, sqlite.AuthRecursive:
		return sqlite.AuthorizerOK
	case sqlite.AuthFunction:
		if strings.EqualFold(arg2, "load_extension") {
			return sqlite.AuthorizerDeny
		}
		return sqlite.AuthorizerOK
	case sqlite.AuthPragma:
		if arg2 == "" || readPragmasWithArgument[strings.ToLower(arg1)] {
			return sqlite.AuthorizerOK
		}
		return sqlite.AuthorizerDeny
	default:
		return sqlite.AuthorizerDeny
	}
}

// dsn is the read-only URI of path: mode=ro makes SQLite refuse every write on the
// file and never create it; query_only and defensive are set on each connection too.
func dsn(abs string) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", "query_only(1)")
	u.RawQuery = q.Encode() + "&_defensive=1"
	return u.String()
}

// Open opens each database of paths (id → file) read-only and checks that it is a
// readable SQLite file. A relative path is taken from the working directory. The
// error names the id of the first database that fails (in id order); nothing stays
// open when Open fails.
func Open(ctx context.Context, paths map[string]string) (*Databases, error) {
	d := &Databases{dbs: make(map[string]*db, len(paths))}
	for id := range paths {
		d.ids = append(d.ids, id)
	}
	sort.Strings(d.ids)
	for _, id := range d.ids {
		one, err := openOne(ctx, id, paths[id])
		if err != nil {
			d.Close()
			return nil, &PathError{ID: id, Err: err}
		}
		d.dbs[id] = one
	}
	return d, nil
}

// PathError is an Open failure of one configured database.
type PathError struct {
	ID  string
	Err error
}

func (e *PathError) Error() string { return e.ID + ": " + e.Err.Error() }
func (e *PathError) Unwrap() error { return e.Err }

func openOne(ctx context.Context, id, path string) (*db, error) {
	if id == "" {
		return nil, errors.New("empty database id")
	}
	if path == "" {
		return nil, errors.New("empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("path %q: %w", path, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("file not found: %s", path)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file: %s", path)
	}
	s := sql.OpenDB(connector{dsn: dsn(abs)})
	n := max(4, 2*runtime.GOMAXPROCS(0))
	s.SetMaxOpenConns(n)
	s.SetMaxIdleConns(n)
	var count int
	if err := s.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&count); err != nil {
		s.Close()
		return nil, fmt.Errorf("%s is not a readable SQLite database: %s", path, err)
	}
	return &db{id: id, path: abs, sql: s}, nil
}

// Close closes every database. It is safe on a partly opened set.
func (d *Databases) Close() error {
	var errs []error
	for _, one := range d.dbs {
		errs = append(errs, one.sql.Close())
	}
	return errors.Join(errs...)
}

// IDs returns the configured database ids, sorted. The slice is a copy.
func (d *Databases) IDs() []string {
	return append([]string(nil), d.ids...)
}

func (d *Databases) get(id string) (*db, error) {
	one, ok := d.dbs[id]
	if !ok {
		known := "none are configured"
		if len(d.ids) > 0 {
			known = "known: " + strings.Join(d.ids, ", ")
		}
		return nil, fmt.Errorf("%w %q (%s)", ErrUnknownDatabase, id, known)
	}
	return one, nil
}

// classify turns an error of a query into one of the package's sentinels: the
// authorizer's refusal and a write attempt are ErrRejected, an error of the SQL
// itself is ErrQuery, an interrupted query past ctx's deadline is ErrTimeout.
func classify(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return fmt.Errorf("%w: %w", ErrTimeout, ctxErr)
		}
		return ctxErr
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_AUTH, sqlite3.SQLITE_READONLY:
			return fmt.Errorf("%w: the database is read-only; writes, ATTACH and setting pragmas are not allowed (%s)", ErrRejected, se.Error())
		case sqlite3.SQLITE_ERROR, sqlite3.SQLITE_RANGE, sqlite3.SQLITE_MISMATCH,
			sqlite3.SQLITE_CONSTRAINT, sqlite3.SQLITE_TOOBIG:
			return fmt.Errorf("%w: %s", ErrQuery, se.Error())
		case sqlite3.SQLITE_INTERRUPT:
			return fmt.Errorf("%w: %s", ErrTimeout, se.Error())
		}
	}
	return err
}
