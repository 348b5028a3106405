package testkit

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadLines: blank lines are left out, a line longer than bufio's
// default 64 KiB comes back whole, and CountLines counts every line.
func TestReadLines(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	if err := os.WriteFile(path, []byte("{\"a\":1}\n\n  \n"+long+"\n{\"b\":2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := ReadLines(t, path), []string{`{"a":1}`, long, `{"b":2}`}; !slices.Equal(got, want) {
		t.Fatalf("ReadLines: %d lines, want %d", len(got), len(want))
	}
	if n := CountLines(t, path); n != 5 {
		t.Fatalf("CountLines = %d, want 5", n)
	}
	if n := CountLines(t, filepath.Join(t.TempDir(), "none")); n != 0 {
		t.Fatalf("CountLines of a missing file = %d, want 0", n)
	}
}

// TestReadJSON decodes a file WriteFiles wrote in a directory it made,
// and fails naming the file it cannot decode.
func TestReadJSON(t *testing.T) {
	dir := WriteFiles(t, t.TempDir(), map[string]string{"sub/good.json": `{"a": 1}`, "bad.json": `{"a": `})
	good, bad := filepath.Join(dir, "sub", "good.json"), filepath.Join(dir, "bad.json")
	var v struct{ A int }
	ReadJSON(t, good, &v)
	if v.A != 1 {
		t.Fatalf("decoded %+v", v)
	}
	if msg := run(t, func(tb testing.TB) { ReadJSON(tb, bad, &v) }); !strings.Contains(msg, bad) {
		t.Fatalf("failure %q does not name %s", msg, bad)
	}
}
