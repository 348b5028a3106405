// Package editdist computes the Levenshtein edit distance, shared by the
// "did you mean" of the settings checker (configs), of the synthesis
// config (synthesis) and of the command line (cli: commands, flags,
// workflows; server: workflows), and by the similarity metric (grading).
package editdist

import "strings"

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

// Closest returns the candidate nearest to word, for a "did you mean"
// after a typo, or "" when none is near enough to be one: within a third
// of word's length in edits (at least 2, and fewer than word has letters),
// or one of them a prefix of the other (at least 3 letters long). Case is ignored; of candidates equally
// near, the first in candidates wins, so pass them sorted for a stable
// answer. word itself, when it is a candidate, is not its own suggestion.
func Closest(word string, candidates []string) string {
	lw := strings.ToLower(word)
	n := len([]rune(word))
	best, bestD := "", 0 // the nearest
	pre, preD := "", 0   // the nearest that is a prefix of word, or word of it
	for _, c := range candidates {
		if c == word {
			continue
		}
		lc := strings.ToLower(c)
		d := Distance([]rune(lw), []rune(lc))
		if best == "" || d < bestD {
			best, bestD = c, d
		}
		if n >= 3 && len(lc) >= 3 && (strings.HasPrefix(lc, lw) || strings.HasPrefix(lw, lc)) && (pre == "" || d < preD) {
			pre, preD = c, d
		}
	}
	if best != "" && bestD <= max(2, n/3) && bestD < n {
		return best
	}
	return pre
}
