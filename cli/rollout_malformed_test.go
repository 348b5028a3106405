package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/flockrun/flock/internal/testkit/teststore"
	"github.com/flockrun/flock/state"
)

// TestRolloutMalformedParquet is the attack of issue 23.7: a malformed
// Parquet dataset made parquet-go panic; the recovered panic put a raw Go
// stack trace with build paths into the run's error (and so into the CLI,
// the API and the viewer). flock rollout over such a file now fails with
// one clear line naming the file and what is wrong, in its output and in
// every run's error, and no stack.
func TestRolloutMalformedParquet(t *testing.T) {
	type row struct {
		QID    string `parquet:"qid"`
		Prompt string `parquet:"prompt"`
		Gold   string `parquet:"gold"`
	}
	var buf bytes.Buffer
	if err := parquet.Write(&buf, []row{{"a", "What is 2+2?", "4"}, {"b", "x", "5"}}); err != nil {
		t.Fatal(err)
	}
	bad := panickingParquet(t, buf.Bytes())
	h := newHandRollout(t, "")
	writeFile(t, filepath.Join(h.dir, "bench.parquet"), string(bad))
	h.write("rollout.yaml", strings.Replace(mustRead(t, h.config), "data_path: bench.jsonl\n", "data_path: bench.parquet\n", 1)+mapping)
	out, code := h.run()
	clear := func(what, msg string) {
		t.Helper()
		if strings.Contains(msg, "goroutine") || strings.Contains(msg, ".go:") || strings.Contains(msg, "runtime/debug") {
			t.Errorf("%s holds a stack trace:\n%s", what, msg)
		}
		if !strings.Contains(msg, "bench.parquet") || !strings.Contains(msg, "malformed Parquet file") {
			t.Errorf("%s does not name the file and what is wrong:\n%s", what, msg)
		}
	}
	if code == 0 {
		t.Fatalf("a malformed dataset succeeded:\n%s", out)
	}
	clear("the output", out)
	t.Logf("output:\n%s", out)
	st := teststore.OpenAt(t, h.data)
	runs, _, err := st.Runs(context.Background(), state.RunFilter{Limit: 100})
	if err != nil || len(runs) == 0 {
		t.Fatalf("runs %v: %v", runs, err)
	}
	for _, r := range runs {
		if r.Status != state.StatusFailed || strings.Contains(r.Error, "\n") {
			t.Errorf("run %s: %s, error %q: want failed with one line", r.ID, r.Status, r.Error)
		}
		clear("run "+r.ID+"'s error", r.Error)
	}
}

// panickingParquet returns good with one byte changed such that
// parquet-go panics reading it (found by trying each byte), so the test
// keeps the attack whatever parquet-go's version.
func panickingParquet(t *testing.T, good []byte) []byte {
	t.Helper()
	panics := func(data []byte) (p bool) {
		defer func() { p = recover() != nil }()
		f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return false
		}
		r := parquet.NewReader(f)
		defer r.Close()
		for {
			row := map[string]any{}
			if err := r.Read(&row); err != nil {
				return false
			}
		}
	}
	for i := 4; i < len(good)-4; i++ {
		for _, v := range []byte{0x00, 0xff, 0x7f} {
			d := bytes.Clone(good)
			d[i] = v
			if panics(d) {
				return d
			}
		}
	}
	t.Skip("no one-byte change of the file makes this parquet-go panic")
	return nil
}
