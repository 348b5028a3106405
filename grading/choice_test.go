package grading

import "testing"

func TestChoice(t *testing.T) {
	for _, c := range []struct {
		pred, ref string
		want      float64
	}{
		{"B", "B", 1}, {"(b)", "B", 1}, {"B) Paris", "B", 1}, {"The answer is C.", "C", 1},
		{"Answer: (A)", "A", 1}, {"A", "B", 0}, {"Berlin", "B", 0}, {"", "B", 0},
		{"Paris", "Paris", 1}, {"paris.", "Paris", 1}, {"Lyon", "Paris", 0},
	} {
		if got := Choice(c.pred, c.ref); got != c.want {
			t.Errorf("Choice(%q, %q) = %v, want %v", c.pred, c.ref, got, c.want)
		}
	}
}
