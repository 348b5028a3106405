package grading

import "github.com/flockrun/flock/internal/editdist"

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
	return 1 - float64(editdist.Distance(a, b))/float64(longest)
}
