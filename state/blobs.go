package state

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/flockrun/flock/operations"
	bolt "go.etcd.io/bbolt"
)

// Generate requests carry the whole prompt, and an agent's prompts repeat
// the same history step after step: journaling them verbatim would make
// each step cost O(context) bytes, twice (the op is written pending, then
// again with its result). So the store keeps every message content of at
// least blobMinBytes once, in the blobs bucket keyed by its hash, and the
// op record refers to it. Readers get the full request back; the
// deduplication is invisible outside this file.

// blobMinBytes is the smallest message content stored as a blob.
const blobMinBytes = 256

// blob is one content to store if absent.
type blob struct {
	key, val []byte
}

// storedOp is the stored form of an Op: MsgRefs maps the index of a
// generate message whose content was moved to a blob to the blob's key.
type storedOp struct {
	Op
	MsgRefs map[int]string `json:"msg_refs,omitempty"`
}

// splitBlobs returns the stored form of op and the blobs it refers to. It
// does not modify op.
func splitBlobs(op Op) (storedOp, []blob) {
	g := op.Request.Generate
	if op.Request.Kind != operations.KindGenerate || g == nil {
		return storedOp{Op: op}, nil
	}
	var refs map[int]string
	var blobs []blob
	var msgs []operations.Message
	for i, m := range g.Messages {
		if len(m.Content) < blobMinBytes {
			continue
		}
		if msgs == nil {
			msgs = append([]operations.Message(nil), g.Messages...)
			refs = make(map[int]string)
		}
		sum := sha256.Sum256([]byte(m.Content))
		k := sum[:16]
		refs[i] = hex.EncodeToString(k)
		blobs = append(blobs, blob{key: k, val: []byte(m.Content)})
		msgs[i].Content = ""
	}
	if msgs == nil {
		return storedOp{Op: op}, nil
	}
	gc := *g
	gc.Messages = msgs
	op.Request.Generate = &gc
	return storedOp{Op: op, MsgRefs: refs}, blobs
}

// join puts the blob contents back into s's request.
func (s *storedOp) join(bk *bolt.Bucket) (Op, error) {
	if len(s.MsgRefs) == 0 {
		return s.Op, nil
	}
	g := s.Op.Request.Generate
	if g == nil {
		return Op{}, fmt.Errorf("op %s: message refs on a %s request", s.ID, s.Request.Kind)
	}
	for i, ref := range s.MsgRefs {
		k, err := hex.DecodeString(ref)
		if err != nil || i < 0 || i >= len(g.Messages) {
			return Op{}, fmt.Errorf("op %s: bad message ref %d=%q", s.ID, i, ref)
		}
		v := bk.Get(k)
		if v == nil {
			return Op{}, fmt.Errorf("op %s: message blob %s is missing", s.ID, ref)
		}
		g.Messages[i].Content = string(v) // copies out of the transaction
	}
	return s.Op, nil
}

// scanOps is scanLog for ops: it decodes stored ops and joins their blobs.
func scanOps(tx *bolt.Tx, p, start, skip []byte, limit int) ([]Op, error) {
	stored, err := scanLog[storedOp](tx.Bucket(bucketOps), p, start, skip, limit)
	if err != nil {
		return nil, err
	}
	bk := tx.Bucket(bucketBlobs)
	out := make([]Op, len(stored))
	for i := range stored {
		if out[i], err = stored[i].join(bk); err != nil {
			return nil, err
		}
	}
	return out, nil
}
