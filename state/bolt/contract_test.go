package bolt_test

import (
	"path/filepath"
	"testing"

	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/bolt"
	"github.com/flockrun/flock/state/storetest"
)

// TestBoltContract runs the Store contract suite on the bbolt store, a
// fresh file per subtest.
func TestBoltContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) state.Store {
		s, err := bolt.Open(filepath.Join(t.TempDir(), "flock.db"), bolt.Options{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}
