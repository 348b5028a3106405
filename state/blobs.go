package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sync"

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

// chunkCache remembers the chunk refs of generate requests journaled as
// pending, by request pointer, so that journaling the same op again with
// its result (the executor passes the same request) does not chunk and
// hash the whole prompt a second time. An entry is dropped when its op is
// journaled done; ops abandoned by a stop leave theirs until the process
// ends (one per op in flight). The zero value is ready; a nil cache
// chunks every time.
type chunkCache struct {
	m sync.Map // *operations.GenerateRequest -> []string
}

// cached is a chunking to remember once its commit has succeeded.
type cached struct {
	g    *operations.GenerateRequest
	refs []string
}

// split is splitBlobs that reuses the chunking of a pending op for its
// done record. The second result, if set, is to be remembered (remember)
// once the commit holding op is durable, so that a done record never
// refers to chunks that were not stored.
func (cc *chunkCache) split(op Op) (storedOp, []blob, *cached, error) {
	g := op.Request.Generate
	if cc == nil || g == nil {
		so, blobs, err := splitBlobs(op)
		return so, blobs, nil, err
	}
	if op.Status == OpDone {
		if refs, ok := cc.m.LoadAndDelete(g); ok {
			gc := *g
			gc.Messages = nil
			op.Request.Generate = &gc
			return storedOp{Op: op, MsgChunks: refs.([]string)}, nil, nil, nil
		}
		so, blobs, err := splitBlobs(op)
		return so, blobs, nil, err
	}
	so, blobs, err := splitBlobs(op)
	if err != nil || len(so.MsgChunks) == 0 {
		return so, blobs, nil, err
	}
	return so, blobs, &cached{g: g, refs: so.MsgChunks}, nil
}

// remember records chunkings whose commit succeeded.
func (cc *chunkCache) remember(cs []*cached) {
	for _, c := range cs {
		cc.m.Store(c.g, c.refs)
	}
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

// scanOps is scanLog for ops: it decodes stored ops and joins their chunks.
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
