package all_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/flockrun/flock/sandbox"
	_ "github.com/flockrun/flock/sandbox/all"
)

// BenchmarkParseConfig parses the bundled offline config (server,
// resources and apis sections), the start path of flock sandbox before
// any backend is provisioned.
func BenchmarkParseConfig(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "configs", "sandbox", "offline.json"))
	if err != nil {
		b.Fatal(err)
	}
	lookup := func(string) (string, bool) { return "", false }
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sandbox.ParseConfig(raw, lookup); err != nil {
			b.Fatal(err)
		}
	}
}
