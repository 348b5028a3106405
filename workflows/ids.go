package workflows

import (
	"crypto/rand"
	"strings"
	"time"

	"github.com/flockrun/flock/state"
)

const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// NewRunID returns a run id whose lexical order follows creation time:
// 10 base32 characters of milliseconds since the epoch, then 6 random ones.
func NewRunID(now time.Time) string {
	var b [16]byte
	ms := uint64(now.UnixMilli())
	for i := 9; i >= 0; i-- {
		b[i] = crockford[ms&31]
		ms >>= 5
	}
	var r [6]byte
	_, _ = rand.Read(r[:])
	for i := range r {
		b[10+i] = crockford[r[i]&31]
	}
	return string(b[:])
}

// OpID is the journal id of operation index of step in run.
func OpID(run string, step uint64, index int) string {
	return state.OpID(run, step, index)
}

// ChildID derives the id of a child run from the op that spawned it, so a
// spawn dispatched again after a crash finds the same child.
func ChildID(opID string) string {
	return strings.ReplaceAll(opID, "/", ".")
}

// validRunID reports whether id is safe as a key and a directory name.
func validRunID(id string) bool {
	if id == "" || len(id) > 200 {
		return false
	}
	for _, c := range id {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_'
		if !ok {
			return false
		}
	}
	return id != "." && id != ".."
}
