package files

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/operations"
)

func TestReadWrite(t *testing.T) {
	h := New(nil)
	env := handlers.Env{WorkDir: t.TempDir()}
	ctx := context.Background()
	do := func(r operations.Request) operations.Result { return h.Handle(ctx, env, r) }

	if r := do(operations.NewReadFile("missing.txt")); r.Error != "" || operations.ReadFile.Result(r).Exists {
		t.Fatalf("missing: %+v", r)
	}
	if r := do(operations.NewWriteFile("out/a.txt", "one\n", false)); r.Error != "" || operations.WriteFile.Result(r).Path != filepath.Join(env.WorkDir, "out/a.txt") {
		t.Fatalf("write: %+v", r)
	}
	for _, line := range []string{"two\n", "two\n", "three\n"} { // the repeated append is a retry
		if r := do(operations.NewWriteFile("out/a.txt", line, true)); r.Error != "" {
			t.Fatalf("append: %+v", r)
		}
	}
	r := do(operations.NewReadFile(filepath.Join(env.WorkDir, "out/a.txt")))
	if r.Error != "" || !operations.ReadFile.Result(r).Exists || operations.ReadFile.Result(r).Content != "one\ntwo\nthree\n" {
		t.Fatalf("read: %+v", operations.ReadFile.Result(r))
	}
	big := operations.NewReadFile("out/a.txt")
	operations.ReadFile.Params(big).MaxBytes = 3
	if r := do(big); !strings.Contains(r.Error, "larger than 3 bytes") {
		t.Fatalf("cap: %+v", r)
	}
	if r := do(operations.NewWriteFile("", "x", false)); !strings.Contains(r.Error, "path is required") {
		t.Fatalf("empty path: %+v", r)
	}
	leftovers, _ := filepath.Glob(filepath.Join(env.WorkDir, "out", ".*tmp*"))
	if len(leftovers) != 0 {
		t.Fatalf("temporary files left: %v", leftovers)
	}
	if err := os.Chmod(filepath.Join(env.WorkDir, "out"), 0o500); err == nil && os.Geteuid() != 0 {
		if r := do(operations.NewWriteFile("out/b.txt", "x", false)); r.Error == "" {
			t.Fatal("write into a read-only dir succeeded")
		}
	}
}

// TestReadAsJSONLNotParquet checks that read_file "as": "jsonl" of a file
// that is not Parquet (a rollout's bench.parquet holding text) fails naming
// the file and what is wrong, instead of handing the text on to be parsed
// as JSON lines ("line 1: not valid JSON" for a file the user called
// Parquet).
func TestReadAsJSONLNotParquet(t *testing.T) {
	h := New(nil)
	env := handlers.Env{WorkDir: t.TempDir()}
	if err := os.WriteFile(filepath.Join(env.WorkDir, "bench.parquet"), []byte("id,question\n1,q\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	req := operations.NewReadFile("bench.parquet")
	operations.ReadFile.Params(req).As = operations.ReadAsJSONL
	r := h.Handle(context.Background(), env, req)
	if !strings.Contains(r.Error, "bench.parquet: not a Parquet file") {
		t.Fatalf("result %+v: want an error naming bench.parquet, not a Parquet file", r)
	}
}
