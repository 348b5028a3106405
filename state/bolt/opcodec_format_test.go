package bolt

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/storetest"
)

var updateFormat = flag.Bool("update", false, "rewrite state/testdata/opcodec_v1.json from what the store writes")

// formatGolden is what the store wrote for formatOps, by bucket: op key
// (hex) to request record, and chunk key (hex) to chunk.
type formatGolden struct {
	Ops    map[string]string `json:"ops"`
	Chunks map[string]string `json:"chunks"`
}

// formatGoldenPath is the golden of package state (the codec's), written
// by this store.
const formatGoldenPath = "../testdata/opcodec_v1.json"

// formatOps are ops of every shape the codec stores: a generate request
// long enough to be chunked (with a message large enough to be a chunk of
// its own), a short one stored inline, and a bash request.
func formatOps() []state.Op {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	msgs := []operations.Message{
		{Role: operations.RoleSystem, Content: "You are a careful agent. <b>&</b>"},
		{Role: operations.RoleUser, Content: strings.Repeat("Task: count the words. ", 80)},
	}
	for i := range 12 {
		msgs = append(msgs, operations.Message{Role: operations.RoleAssistant, Content: "step " + strings.Repeat("x", i)},
			operations.Message{Role: operations.RoleTool, Content: "ok", ToolCallID: "c"})
	}
	long := operations.NewGenerate(operations.GenerateRequest{Model: "m", Messages: msgs})
	short := operations.NewGenerate(operations.GenerateRequest{Model: "m", Messages: msgs[:2]})
	bash := operations.Request{Kind: operations.KindBash, Meta: map[string]string{"purpose": "explore"},
		Params: &operations.BashRequest{Command: "go test ./... 2>&1 | tail -40", TimeoutS: 60}}
	var ops []state.Op
	for i, req := range []operations.Request{long, short, bash} {
		ops = append(ops, state.Op{ID: state.OpID("fmt", 1, i), RunID: "fmt", Step: 1, Index: i, Phase: "think",
			Status: state.OpPending, Request: req, CreatedAt: t0})
	}
	return ops
}

// TestOpCodecFormatUpdate rewrites the golden file with -update from what
// the bbolt store puts in its buckets.
func TestOpCodecFormatUpdate(t *testing.T) {
	if !*updateFormat {
		t.Skip("run with -update to rewrite " + formatGoldenPath)
	}
	s := openTestStore(t)
	storetest.MustCommit(t, s, &state.Commit{RunID: "fmt", Ops: formatOps()})
	g := formatGolden{Ops: map[string]string{}, Chunks: map[string]string{}}
	err := s.db.View(func(tx *bbolt.Tx) error {
		if err := tx.Bucket(bucketOps).ForEach(func(k, v []byte) error {
			g.Ops[hex.EncodeToString(k)] = string(v)
			return nil
		}); err != nil {
			return err
		}
		return tx.Bucket(bucketBlobs).ForEach(func(k, v []byte) error {
			g.Chunks[hex.EncodeToString(k)] = string(v)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(&g, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(formatGoldenPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(formatGoldenPath, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOpCodecFormat pins the op codec to the records the bbolt store wrote
// before the codec was store-agnostic (testdata/opcodec_v1.json was
// written by that code): encoding formatOps gives the same bytes, and the
// stored records decode to the same ops, so existing files still open and
// resume.
func TestOpCodecFormat(t *testing.T) {
	b, err := os.ReadFile(formatGoldenPath)
	if err != nil {
		t.Fatal(err)
	}
	var g formatGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	chunk := func(k []byte) ([]byte, error) {
		v, ok := g.Chunks[hex.EncodeToString(k)]
		if !ok {
			return nil, nil
		}
		return []byte(v), nil
	}
	used := map[string]bool{}
	for _, op := range formatOps() {
		key := hex.EncodeToString(opKey(op.RunID, op.Step, uint32(op.Index)))
		want, ok := g.Ops[key]
		if !ok {
			t.Fatalf("golden has no record for op %s", op.ID)
		}
		rec, chunks, err := state.EncodeRequest(op)
		if err != nil {
			t.Fatal(err)
		}
		if string(rec) != want {
			t.Errorf("op %s: record\n%s\nwant\n%s", op.ID, rec, want)
		}
		for _, c := range chunks {
			k := hex.EncodeToString(c.Key)
			used[k] = true
			if g.Chunks[k] != string(c.Val) {
				t.Errorf("op %s: chunk %s = %s, want %s", op.ID, k, c.Val, g.Chunks[k])
			}
		}
		got, err := state.DecodeRequest([]byte(want), chunk)
		if err != nil {
			t.Fatal(err)
		}
		storetest.SameJSON(t, "op "+op.ID+" decoded", got, op)
	}
	if len(used) != len(g.Chunks) || len(used) < 2 {
		t.Fatalf("encoding used chunks %v, golden has %d", used, len(g.Chunks))
	}
}

// TestOpCodecMissingChunk: a request record whose chunk is gone decodes
// to an error naming the op and the chunk, not to a shorter prompt.
func TestOpCodecMissingChunk(t *testing.T) {
	rec, chunks, err := state.EncodeRequest(formatOps()[0])
	if err != nil || len(chunks) < 2 {
		t.Fatalf("%v, %d chunks", err, len(chunks))
	}
	gone := hex.EncodeToString(chunks[1].Key)
	_, err = state.DecodeRequest(rec, func(k []byte) ([]byte, error) {
		if hex.EncodeToString(k) == gone {
			return nil, nil
		}
		for _, c := range chunks {
			if string(c.Key) == string(k) {
				return c.Val, nil
			}
		}
		return nil, nil
	})
	if err == nil || !strings.Contains(err.Error(), "fmt/1/0") || !strings.Contains(err.Error(), gone) {
		t.Fatalf("err = %v, want one naming op fmt/1/0 and chunk %s", err, gone)
	}
}
