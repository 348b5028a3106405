package grading

import (
	"math"
	"testing"
)

// near reports whether a and b agree to 1e-9.
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9 }

// assertFloats fails t unless got and want have the same length and agree
// element-wise to 1e-9.
func assertFloats(t testing.TB, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range got {
		if !near(got[i], want[i]) {
			t.Fatalf("got %v, want %v (index %d)", got, want, i)
		}
	}
}
