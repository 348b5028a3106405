package grading

// Similarity returns the normalised Levenshtein similarity of the two
// answers after Normalize: 1 - d/max(|p|, |r|), where d is the edit distance
// (insertions, deletions and substitutions each cost 1) between the
// normalised strings counted in runes. Identical answers score 1, two
// equally long answers that differ at every position score 0, and two empty
// answers score 1.
//
// This is a character-level measure of surface similarity, not semantic
// similarity: "cat" and "cap" score 2/3 while "automobile" and "car" score
// 0, and a prediction that wraps the reference in other words scores low
// ("It is New York." against "New York City" is 3/14). It is not the
// python-Levenshtein ratio, which uses the indel distance over the sum of the
// lengths. Cost is O(|p|·|r|) time and O(min(|p|, |r|)) memory.
func Similarity(prediction, reference string) float64 {
	a, b := []rune(Normalize(prediction)), []rune(Normalize(reference))
	longest := max(len(a), len(b))
	if longest == 0 {
		return 1
	}
	return 1 - float64(levenshtein(a, b))/float64(longest)
}

// levenshtein returns the edit distance between a and b using two rows.
func levenshtein(a, b []rune) int {
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
