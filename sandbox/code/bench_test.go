package code

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/sandbox"
)

// benchTree writes 2000 small files in 40 directories.
func benchTree(b *testing.B) (*Backend, *sandbox.Session) {
	b.Helper()
	ws := b.TempDir()
	for d := range 40 {
		dir := filepath.Join(ws, fmt.Sprintf("pkg%02d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 50 {
			body := strings.Repeat(fmt.Sprintf("line of file %d in %d\n", f, d), 40) + "func Target() {}\n"
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.go", f)), []byte(body), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return &Backend{maxFile: DefaultMaxFileSize}, &sandbox.Session{Workspace: ws}
}

// BenchmarkGlob lists 2000 files with **/*.go (1000 answered).
func BenchmarkGlob(b *testing.B) {
	be, s := benchTree(b)
	for b.Loop() {
		if _, err := be.glob(context.Background(), &sandbox.Call{Params: map[string]any{"pattern": "**/*.go"}, Session: s}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGrep searches 2000 files (about 2 MB) for a line in each,
// max_matches 1000.
func BenchmarkGrep(b *testing.B) {
	be, s := benchTree(b)
	for b.Loop() {
		if _, err := be.grep(context.Background(), &sandbox.Call{Params: map[string]any{"pattern": `^func \w+\(`, "max_matches": 1000.0}, Session: s}); err != nil {
			b.Fatal(err)
		}
	}
}
