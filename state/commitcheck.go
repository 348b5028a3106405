package state

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/flockrun/flock/record"
)

// MaxRunIDLen bounds run ids in every Store: bbolt keys and JetStream
// subjects stay far below their limits.
const MaxRunIDLen = 1024

// The checks below are what any Store verifies of a Commit (or a lease
// call) before it touches stored state, so that both stores refuse the
// same commits with the same words.

// CheckRunID reports an id no run can have: empty, longer than
// MaxRunIDLen bytes, or holding a NUL byte.
func CheckRunID(id string) error {
	switch {
	case id == "":
		return errors.New("empty run id")
	case len(id) > MaxRunIDLen:
		return fmt.Errorf("run id longer than %d bytes", MaxRunIDLen)
	case strings.IndexByte(id, 0) >= 0:
		return fmt.Errorf("run id %q contains a NUL byte", id)
	}
	return nil
}

// CheckLease reports arguments of a Leaser call (Claim, Renew) that no
// lease can have: a bad run id, an empty owner, a ttl that is not
// positive. Both stores call it, so they refuse the same calls.
func CheckLease(id, owner string, ttl time.Duration) error {
	if err := CheckRunID(id); err != nil {
		return err
	}
	switch {
	case owner == "":
		return errors.New("empty owner")
	case ttl <= 0:
		return fmt.Errorf("lease duration %v is not positive", ttl)
	}
	return nil
}

// CheckCommitRun checks c's run id; the errors read "commit: ...".
func CheckCommitRun(c *Commit) error {
	if c == nil {
		return errors.New("commit: nil commit")
	}
	if err := CheckRunID(c.RunID); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// CommitHead returns the head c writes, checked against c's run (its id
// filled in when empty) with its schema set and its revision cleared:
// the store assigns it. c.Run must not be nil.
func CommitHead(c *Commit) (Run, error) {
	id := c.RunID
	h := *c.Run
	if h.ID == "" {
		h.ID = id
	}
	if h.ID != id {
		return h, fmt.Errorf("commit to run %s: head has id %q", id, h.ID)
	}
	if !h.Status.Valid() {
		return h, fmt.Errorf("commit to run %s: head has invalid status %q", id, h.Status)
	}
	if h.ParentID != "" {
		if err := CheckRunID(h.ParentID); err != nil {
			return h, fmt.Errorf("commit to run %s: parent: %w", id, err)
		}
	}
	if h.Schema == 0 {
		h.Schema = SchemaVersion
	}
	h.Revision = 0
	return h, nil
}

// CheckEntrySeqs checks that a commit's entries are numbered from 1 or
// more without a gap.
func CheckEntrySeqs(id string, es []record.Entry) error {
	if len(es) == 0 {
		return nil
	}
	first := es[0].Seq
	if first == 0 {
		return fmt.Errorf("commit to run %s: entry seq must start at 1", id)
	}
	for i := range es {
		if es[i].Seq != first+uint64(i) {
			return fmt.Errorf("commit to run %s: entry seqs not contiguous: %d after %d", id, es[i].Seq, first+uint64(i)-1)
		}
	}
	return nil
}

// CommitOp returns op as run id stores it, checked: its run and id filled
// in when empty and agreeing with id, step and index otherwise.
func CommitOp(id string, op Op) (Op, error) {
	if op.RunID == "" {
		op.RunID = id
	}
	if op.RunID != id {
		return op, fmt.Errorf("commit to run %s: op %q belongs to run %q", id, op.ID, op.RunID)
	}
	if op.Index < 0 || op.Index > math.MaxUint32 {
		return op, fmt.Errorf("commit to run %s: op index %d out of range", id, op.Index)
	}
	want := OpID(id, op.Step, op.Index)
	if op.ID == "" {
		op.ID = want
	}
	if op.ID != want {
		return op, fmt.Errorf("commit to run %s: op id %q does not match step %d index %d", id, op.ID, op.Step, op.Index)
	}
	return op, nil
}
