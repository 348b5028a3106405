package testkit

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestBufferConcurrentWrites writes from several goroutines while reading:
// every line arrives whole (run under -race, the reads and writes do not
// race).
func TestBufferConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				fmt.Fprintf(&b, "g%d line %d\n", g, i)
			}
		}()
	}
	for range 10 {
		_, _ = b.String(), b.Bytes()
	}
	wg.Wait()
	if string(b.Bytes()) != b.String() {
		t.Fatalf("Bytes %q, String %q", b.Bytes(), b.String())
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 400 {
		t.Fatalf("%d lines, want 400", len(lines))
	}
	for _, l := range lines {
		var g, i int
		if n, err := fmt.Sscanf(l, "g%d line %d", &g, &i); n != 2 || err != nil {
			t.Fatalf("torn line %q", l)
		}
	}
}
