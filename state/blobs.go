package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/flockrun/flock/operations"
	bolt "go.etcd.io/bbolt"
)

// Generate requests carry the whole prompt, and an agent's prompts repeat
// the same history step after step (a window that grows, then slides).
// Journaling them verbatim would make each step cost O(context) bytes. So
// the store cuts a generate request's messages into chunks with
// content-defined boundaries (a boundary follows a message whose hash
// ends in chunkMask, follows any message of chunkBigBytes or more, and
// precedes one; a chunk also ends past chunkMaxBytes) and keeps every
// chunk once, in the blobs bucket keyed by its hash. Consecutive prompts
// then share all their chunks but the few at the edges of what changed.
// The op record lists its chunks; readers get the full request back. The
// scheme is invisible outside this file.

const (
	chunkMask     = 7        // about eight messages per chunk
	chunkBigBytes = 1 << 10  // a message this large is a chunk of its own
	chunkMaxBytes = 32 << 10 // a chunk ends once it is this large
	chunkMinMsgs  = 4        // requests with fewer messages are stored inline
	blobKeyBytes  = 16       // sha256 prefix
)

// blob is one content to store if absent.
type blob struct {
	key, val []byte
}

// storedOp is the stored form of an Op: when MsgChunks is set, the
// generate request's messages are the concatenation of those chunks.
type storedOp struct {
	Op
	MsgChunks []string `json:"msg_chunks,omitempty"`
}

// splitBlobs returns the stored form of op and the chunks it refers to. It
// does not modify op.
func splitBlobs(op Op) (storedOp, []blob, error) {
	g := op.Request.Generate
	if op.Request.Kind != operations.KindGenerate || g == nil || len(g.Messages) < chunkMinMsgs {
		return storedOp{Op: op}, nil, nil
	}
	var (
		blobs []blob
		refs  []string
		cur   bytes.Buffer
		n     int
	)
	flush := func() {
		if n == 0 {
			return
		}
		cur.WriteByte(']')
		sum := sha256.Sum256(cur.Bytes())
		k := sum[:blobKeyBytes]
		blobs = append(blobs, blob{key: k, val: bytes.Clone(cur.Bytes())})
		refs = append(refs, hex.EncodeToString(k))
		cur.Reset()
		n = 0
	}
	for i := range g.Messages {
		b, err := json.Marshal(&g.Messages[i])
		if err != nil {
			return storedOp{}, nil, fmt.Errorf("encode message %d: %w", i, err)
		}
		big := len(b) >= chunkBigBytes
		if big {
			flush()
		}
		if n == 0 {
			cur.WriteByte('[')
		} else {
			cur.WriteByte(',')
		}
		cur.Write(b)
		n++
		h := fnv.New64a()
		h.Write(b)
		if big || h.Sum64()&chunkMask == chunkMask || cur.Len() >= chunkMaxBytes {
			flush()
		}
	}
	flush()
	gc := *g
	gc.Messages = nil
	op.Request.Generate = &gc
	return storedOp{Op: op, MsgChunks: refs}, blobs, nil
}

// join puts the chunked messages back into s's request.
func (s *storedOp) join(bk *bolt.Bucket) (Op, error) {
	if len(s.MsgChunks) == 0 {
		return s.Op, nil
	}
	g := s.Op.Request.Generate
	if g == nil {
		return Op{}, fmt.Errorf("op %s: message chunks on a %s request", s.ID, s.Request.Kind)
	}
	for _, ref := range s.MsgChunks {
		k, err := hex.DecodeString(ref)
		if err != nil {
			return Op{}, fmt.Errorf("op %s: bad chunk ref %q", s.ID, ref)
		}
		v := bk.Get(k)
		if v == nil {
			return Op{}, fmt.Errorf("op %s: message chunk %s is missing", s.ID, ref)
		}
		var msgs []operations.Message
		if err := json.Unmarshal(v, &msgs); err != nil { // copies out of the transaction
			return Op{}, fmt.Errorf("op %s: decode chunk %s: %w", s.ID, ref, err)
		}
		g.Messages = append(g.Messages, msgs...)
	}
	return s.Op, nil
}

// opResult is the stored form of what an op's completion adds: it lives
// in the results bucket under the op's key, so that completing an op
// writes its result, not its request again.
type opResult struct {
	Status     OpStatus           `json:"status"`
	Result     *operations.Result `json:"result,omitempty"`
	Attempts   int                `json:"attempts"`
	StartedAt  *time.Time         `json:"started_at,omitempty"`
	FinishedAt *time.Time         `json:"finished_at,omitempty"`
}

func resultOf(op Op) opResult {
	return opResult{Status: op.Status, Result: op.Result, Attempts: op.Attempts, StartedAt: op.StartedAt, FinishedAt: op.FinishedAt}
}

// requestRecord is the stored form of op's request: its own record as
// pending, with the result part left to the results bucket.
func requestRecord(op Op) ([]byte, []blob, error) {
	op.Status, op.Result, op.Attempts, op.StartedAt, op.FinishedAt = OpPending, nil, 0, nil, nil
	so, blobs, err := splitBlobs(op)
	if err != nil {
		return nil, nil, err
	}
	b, err := json.Marshal(&so)
	return b, blobs, err
}

// scanOps reads up to limit ops from key start while keys keep prefix p:
// each request record joined with its chunks and with its result record.
func scanOps(tx *bolt.Tx, p, start, skip []byte, limit int) ([]Op, error) {
	ops, results, blobsBk := tx.Bucket(bucketOps), tx.Bucket(bucketResults), tx.Bucket(bucketBlobs)
	var out []Op
	c := ops.Cursor()
	k, v := c.Seek(start)
	if skip != nil && bytes.Equal(k, skip) {
		k, v = c.Next()
	}
	for ; k != nil && bytes.HasPrefix(k, p) && len(out) < limit; k, v = c.Next() {
		var so storedOp
		if err := json.Unmarshal(v, &so); err != nil {
			return nil, fmt.Errorf("%w: decode op %q: %v", ErrCorrupt, k, err)
		}
		op, err := so.join(blobsBk)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		if rv := results.Get(k); rv != nil {
			var r opResult
			if err := json.Unmarshal(rv, &r); err != nil {
				return nil, fmt.Errorf("%w: decode result of op %s: %v", ErrCorrupt, op.ID, err)
			}
			op.Status, op.Result, op.Attempts, op.StartedAt, op.FinishedAt = r.Status, r.Result, r.Attempts, r.StartedAt, r.FinishedAt
		}
		out = append(out, op)
	}
	return out, nil
}
