// Package teststore opens real bbolt stores for tests: a file in
// tb.TempDir() (or a directory the test names), closed when the test ends.
// It is apart from package testkit because it imports state, whose own
// tests use testkit.
package teststore

import (
	"path/filepath"
	"testing"

	"github.com/flockrun/flock/state/bolt"
)

// File is the store's file name inside its directory, as in a server's
// data directory.
const File = "flock.db"

// Open opens a new store in a fresh tb.TempDir() and closes it when the
// test ends.
func Open(tb testing.TB) *bolt.Store {
	tb.Helper()
	return OpenAt(tb, tb.TempDir())
}

// OpenAt opens (creating it if need be) the store File of dir and closes
// it when the test ends. Close is idempotent, so a test may close the store
// itself and open dir again, as a restarted server does; every store
// opened is closed at the end.
func OpenAt(tb testing.TB, dir string) *bolt.Store {
	tb.Helper()
	st, err := bolt.Open(filepath.Join(dir, File), bolt.Options{})
	if err != nil {
		tb.Fatalf("open store in %s: %v", dir, err)
	}
	tb.Cleanup(func() {
		if err := st.Close(); err != nil {
			tb.Errorf("close store in %s: %v", dir, err)
		}
	})
	return st
}
