package workflows

import (
	"crypto/rand"
	"strings"
	"sync"
	"time"
)

const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// NewRunID returns a run id whose lexical order follows creation order
// within this process (and creation time across processes): 10 base32
// characters of milliseconds since the epoch, 3 of a counter that orders
// ids made in the same millisecond, and 3 random ones.
func NewRunID(now time.Time) string {
	ms := uint64(now.UnixMilli())
	idClock.mu.Lock()
	if ms <= idClock.ms {
		ms = idClock.ms
		idClock.seq++
		if idClock.seq >= 1<<15 { // 32,768 ids in one millisecond: borrow the next
			ms++
			idClock.seq = 0
		}
	} else {
		idClock.seq = 0
	}
	idClock.ms = ms
	seq := idClock.seq
	idClock.mu.Unlock()

	var b [16]byte
	for i := 9; i >= 0; i-- {
		b[i] = crockford[ms&31]
		ms >>= 5
	}
	for i := 12; i >= 10; i-- {
		b[i] = crockford[seq&31]
		seq >>= 5
	}
	var r [3]byte
	_, _ = rand.Read(r[:])
	for i := range r {
		b[13+i] = crockford[r[i]&31]
	}
	return string(b[:])
}

// idClock keeps NewRunID monotonic within the process.
var idClock struct {
	mu  sync.Mutex
	ms  uint64
	seq uint64
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
