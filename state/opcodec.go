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
)

// The op codec turns an operation into the records a store keeps, and
// back; every Store implementation uses it, so that the journal's format
// is one, whatever holds it. It knows nothing of bbolt.
//
// An op is two records: the request record, written when the op is
// journaled pending (EncodeRequest), and the result record, written when
// its result arrives (EncodeResult), so that completing an op does not
// write its request again.
//
// Generate requests carry the whole prompt, and an agent's prompts repeat
// the same history step after step (a window that grows, then slides).
// Journaling them verbatim would make each step cost O(context) bytes. So
// the codec cuts a generate request's messages into chunks with
// content-defined boundaries (a boundary follows a message whose hash
// ends in chunkMask, follows any message of chunkBigBytes or more, and
// precedes one; a chunk also ends past chunkMaxBytes). Each chunk is
// content addressed (Chunk.Key is a prefix of its SHA-256) and a store
// keeps it once, whoever refers to it. Consecutive prompts then share all
// their chunks but the few at the edges of what changed. The request
// record lists its chunks; DecodeRequest puts the full request back.
//
// The format is persisted: the bbolt files written before this codec was
// a package of its own hold exactly these bytes (TestOpCodecFormat pins
// them).

const (
	chunkMask     = 7        // about eight messages per chunk
	chunkBigBytes = 1 << 10  // a message this large is a chunk of its own
	chunkMaxBytes = 32 << 10 // a chunk ends once it is this large
	chunkMinMsgs  = 4        // requests with fewer messages are stored inline
)

// ChunkKeyBytes is the length of a Chunk's key.
const ChunkKeyBytes = 16

// Chunk is content a store keeps once under its key, if absent. Key is
// the first ChunkKeyBytes (16) bytes of the SHA-256 of Val, so equal contents share a key
// and a chunk, once written, never changes.
type Chunk struct {
	Key, Val []byte
}

// storedOp is the stored form of an Op's request: when MsgChunks is set,
// the generate request's messages are the concatenation of those chunks
// (hex keys, in order).
type storedOp struct {
	Op
	MsgChunks []string `json:"msg_chunks,omitempty"`
}

// opResult is the stored form of what an op's completion adds.
type opResult struct {
	Status     OpStatus           `json:"status"`
	Result     *operations.Result `json:"result,omitempty"`
	Attempts   int                `json:"attempts"`
	StartedAt  *time.Time         `json:"started_at,omitempty"`
	FinishedAt *time.Time         `json:"finished_at,omitempty"`
}

// EncodeRequest returns the request record of op, as journaled pending
// (its result fields are left out whatever op holds), and the chunks the
// record refers to. A store must keep every returned chunk (putting it
// only if its key is absent) in the same atomic write as the record. It
// does not modify op.
func EncodeRequest(op Op) (rec []byte, chunks []Chunk, err error) {
	op.Status, op.Result, op.Attempts, op.StartedAt, op.FinishedAt = OpPending, nil, 0, nil, nil
	so, chunks, err := splitChunks(op)
	if err != nil {
		return nil, nil, err
	}
	rec, err = json.Marshal(&so)
	if err != nil {
		return nil, nil, err
	}
	return rec, chunks, nil
}

// DecodeRequest decodes a request record made by EncodeRequest, reading
// the chunks it refers to with chunk (which returns nil, nil for a missing
// key, and must return bytes the caller may keep or that are decoded
// before it returns). The result is a pending op; ApplyResult adds a
// result record.
func DecodeRequest(rec []byte, chunk func(key []byte) ([]byte, error)) (Op, error) {
	var so storedOp
	if err := json.Unmarshal(rec, &so); err != nil {
		return Op{}, fmt.Errorf("decode op: %w", err)
	}
	if len(so.MsgChunks) == 0 {
		return so.Op, nil
	}
	g := operations.Generate.Params(so.Request)
	if g == nil {
		return Op{}, fmt.Errorf("op %s: message chunks on a %s request", so.ID, so.Request.Kind)
	}
	for _, ref := range so.MsgChunks {
		k, err := hex.DecodeString(ref)
		if err != nil {
			return Op{}, fmt.Errorf("op %s: bad chunk ref %q", so.ID, ref)
		}
		v, err := chunk(k)
		if err != nil {
			return Op{}, fmt.Errorf("op %s: read message chunk %s: %w", so.ID, ref, err)
		}
		if v == nil {
			return Op{}, fmt.Errorf("op %s: message chunk %s is missing", so.ID, ref)
		}
		var msgs []operations.Message
		if err := json.Unmarshal(v, &msgs); err != nil { // copies out of the chunk's bytes
			return Op{}, fmt.Errorf("op %s: decode chunk %s: %w", so.ID, ref, err)
		}
		g.Messages = append(g.Messages, msgs...)
	}
	return so.Op, nil
}

// RequestChunks decodes a request record only as far as needed to list
// its op ID and the keys of the chunks it refers to, for integrity checks.
func RequestChunks(rec []byte) (id string, keys [][]byte, err error) {
	var so storedOp
	if err := json.Unmarshal(rec, &so); err != nil {
		return "", nil, fmt.Errorf("decode op: %w", err)
	}
	for _, ref := range so.MsgChunks {
		k, err := hex.DecodeString(ref)
		if err != nil || len(k) != ChunkKeyBytes {
			return so.ID, nil, fmt.Errorf("op %s: bad chunk ref %q", so.ID, ref)
		}
		keys = append(keys, k)
	}
	return so.ID, keys, nil
}

// EncodeResult returns the result record of op (its status, result,
// attempts and times), written under the op's key once it is done.
func EncodeResult(op Op) ([]byte, error) {
	return json.Marshal(opResult{Status: op.Status, Result: op.Result, Attempts: op.Attempts, StartedAt: op.StartedAt, FinishedAt: op.FinishedAt})
}

// ApplyResult decodes a result record made by EncodeResult into op.
func ApplyResult(op *Op, rec []byte) error {
	var r opResult
	if err := json.Unmarshal(rec, &r); err != nil {
		return fmt.Errorf("decode result of op %s: %w", op.ID, err)
	}
	op.Status, op.Result, op.Attempts, op.StartedAt, op.FinishedAt = r.Status, r.Result, r.Attempts, r.StartedAt, r.FinishedAt
	return nil
}

// splitChunks returns the stored form of op and the chunks it refers to.
// It does not modify op.
func splitChunks(op Op) (storedOp, []Chunk, error) {
	g := operations.Generate.Params(op.Request)
	if g == nil || len(g.Messages) < chunkMinMsgs {
		return storedOp{Op: op}, nil, nil
	}
	var (
		chunks []Chunk
		refs   []string
		cur    bytes.Buffer
		n      int
	)
	flush := func() {
		if n == 0 {
			return
		}
		cur.WriteByte(']')
		sum := sha256.Sum256(cur.Bytes())
		k := sum[:ChunkKeyBytes]
		chunks = append(chunks, Chunk{Key: k, Val: bytes.Clone(cur.Bytes())})
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
	op.Request.Params = &gc
	return storedOp{Op: op, MsgChunks: refs}, chunks, nil
}
