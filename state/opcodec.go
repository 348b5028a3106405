package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
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
// A gateway_wait result holds the model calls an external agent sent
// through the gateway, each with its whole prompt, which repeat the same
// way: each call's messages are cut into chunks alike, the result record
// lists them per call, and ApplyResult puts them back.
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
	// CallChunks, for a gateway_wait result, lists per call (in the
	// order of its Calls) the chunks its request's messages are the
	// concatenation of; empty for a call stored inline.
	CallChunks [][]string `json:"call_chunks,omitempty"`
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
	msgs, err := joinChunks(so.MsgChunks, chunk)
	if err != nil {
		return Op{}, fmt.Errorf("op %s: %w", so.ID, err)
	}
	g.Messages = append(g.Messages, msgs...)
	return so.Op, nil
}

// joinChunks returns the messages the chunks refs name, in order, read
// with chunk (see DecodeRequest).
func joinChunks(refs []string, chunk func(key []byte) ([]byte, error)) ([]operations.Message, error) {
	var out []operations.Message
	for _, ref := range refs {
		k, err := hex.DecodeString(ref)
		if err != nil {
			return nil, fmt.Errorf("bad chunk ref %q", ref)
		}
		v, err := chunk(k)
		if err != nil {
			return nil, fmt.Errorf("read message chunk %s: %w", ref, err)
		}
		if v == nil {
			return nil, fmt.Errorf("message chunk %s is missing", ref)
		}
		var msgs []operations.Message
		if err := json.Unmarshal(v, &msgs); err != nil { // copies out of the chunk's bytes
			return nil, fmt.Errorf("decode chunk %s: %w", ref, err)
		}
		out = append(out, msgs...)
	}
	return out, nil
}

// chunkKeys decodes refs, which must be whole chunk keys.
func chunkKeys(refs []string) ([][]byte, error) {
	keys := make([][]byte, 0, len(refs))
	for _, ref := range refs {
		k, err := hex.DecodeString(ref)
		if err != nil || len(k) != ChunkKeyBytes {
			return nil, fmt.Errorf("bad chunk ref %q", ref)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// RequestChunks decodes a request record only as far as needed to list
// its op ID and the keys of the chunks it refers to, for integrity checks.
func RequestChunks(rec []byte) (id string, keys [][]byte, err error) {
	var so storedOp
	if err := json.Unmarshal(rec, &so); err != nil {
		return "", nil, fmt.Errorf("decode op: %w", err)
	}
	if keys, err = chunkKeys(so.MsgChunks); err != nil {
		return so.ID, nil, fmt.Errorf("op %s: %w", so.ID, err)
	}
	return so.ID, keys, nil
}

// EncodeResult returns the result record of op (its status, result,
// attempts and times), written under the op's key once it is done, and
// the chunks the record refers to (the prompts of a gateway_wait
// result's calls), which a store keeps as EncodeRequest's. It does not
// modify op.
func EncodeResult(op Op) (rec []byte, chunks []Chunk, err error) {
	r := opResult{Status: op.Status, Result: op.Result, Attempts: op.Attempts, StartedAt: op.StartedAt, FinishedAt: op.FinishedAt}
	if w := gatewayResult(op.Result); w != nil {
		var calls []operations.GatewayCall
		for i, c := range w.Calls {
			if len(c.Request.Messages) < chunkMinMsgs {
				continue
			}
			refs, cs, err := chunkMessages(c.Request.Messages)
			if err != nil {
				return nil, nil, fmt.Errorf("call %s: %w", c.ID, err)
			}
			if calls == nil {
				calls = slices.Clone(w.Calls)
				r.CallChunks = make([][]string, len(calls))
			}
			calls[i].Request.Messages = nil
			r.CallChunks[i] = refs
			chunks = append(chunks, cs...)
		}
		if calls != nil {
			res, wc := *op.Result, *w
			wc.Calls = calls
			res.Data = &wc
			r.Result = &res
		}
	}
	rec, err = json.Marshal(r)
	if err != nil {
		return nil, nil, err
	}
	return rec, chunks, nil
}

// gatewayResult is r's gateway_wait result, nil for any other.
func gatewayResult(r *operations.Result) *operations.GatewayWaitResult {
	if r == nil || r.Kind != operations.KindGatewayWait {
		return nil
	}
	return operations.GatewayWait.Result(*r)
}

// ApplyResult decodes a result record made by EncodeResult into op,
// reading the chunks it refers to with chunk, as DecodeRequest does
// (chunk may be nil for a record known to refer to none).
func ApplyResult(op *Op, rec []byte, chunk func(key []byte) ([]byte, error)) error {
	var r opResult
	if err := json.Unmarshal(rec, &r); err != nil {
		return fmt.Errorf("decode result of op %s: %w", op.ID, err)
	}
	if len(r.CallChunks) > 0 {
		if chunk == nil {
			return fmt.Errorf("decode result of op %s: it refers to chunks and no way to read them was given", op.ID)
		}
		w := gatewayResult(r.Result)
		if w == nil || len(w.Calls) != len(r.CallChunks) {
			return fmt.Errorf("decode result of op %s: chunks of %d calls on a result that is not a gateway_wait of as many", op.ID, len(r.CallChunks))
		}
		for i, refs := range r.CallChunks {
			if len(refs) == 0 {
				continue
			}
			msgs, err := joinChunks(refs, chunk)
			if err != nil {
				return fmt.Errorf("decode result of op %s: call %s: %w", op.ID, w.Calls[i].ID, err)
			}
			w.Calls[i].Request.Messages = msgs
		}
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
	refs, chunks, err := chunkMessages(g.Messages)
	if err != nil {
		return storedOp{}, nil, err
	}
	gc := *g
	gc.Messages = nil
	op.Request.Params = &gc
	return storedOp{Op: op, MsgChunks: refs}, chunks, nil
}

// chunkMessages cuts msgs into content-defined chunks (see the codec's
// doc) and returns their refs (hex keys, in order) and the chunks.
func chunkMessages(msgs []operations.Message) (refs []string, chunks []Chunk, err error) {
	var (
		cur bytes.Buffer
		n   int
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
	for i := range msgs {
		b, err := json.Marshal(&msgs[i])
		if err != nil {
			return nil, nil, fmt.Errorf("encode message %d: %w", i, err)
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
	return refs, chunks, nil
}
