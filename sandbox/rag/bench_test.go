package rag

import (
	"context"
	"slices"
	"testing"
	"time"
)

// bundled is the README's offline documents folder.
const bundled = "../../configs/sandbox/docs"

// BenchmarkBuildBundled builds the index of the bundled folder from scratch.
func BenchmarkBuildBundled(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		ix, err := OpenIndex(ctx, IndexOptions{DocumentsDir: bundled, DataDir: b.TempDir(), PassageChars: 1000})
		if err != nil {
			b.Fatal(err)
		}
		_ = ix.Close()
	}
}

// BenchmarkSearchBundled is one rag:search over the bundled index; it reports the
// median latency as p50-ns (ns/op is the mean).
func BenchmarkSearchBundled(b *testing.B) {
	ctx := context.Background()
	e := newTestEngine(b, bundled, b.TempDir())
	if err := e.WarmUp(ctx); err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := e.Search(ctx, "which singer is a French tenor", 3); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
}
