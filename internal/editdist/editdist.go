// Package editdist computes the Levenshtein edit distance, shared by the
// "did you mean" of the settings checker (configs) and of the synthesis
// config (synthesis), and by the similarity metric (grading).
package editdist

// Distance is the Levenshtein distance between a and b: the least number
// of single-element insertions, deletions and substitutions that turn one
// into the other. It takes O(|a|·|b|) time and O(min(|a|, |b|)) memory.
// Pass runes to count characters, bytes (a string's elements) to count bytes.
func Distance[T comparable](a, b []T) int {
	if len(a) < len(b) {
		a, b = b, a
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
