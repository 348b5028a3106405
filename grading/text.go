package grading

// ExactMatch returns 1 when prediction and reference are equal after
// Normalize, else 0. Two answers that both normalise to nothing match.
func ExactMatch(prediction, reference string) float64 {
	if Normalize(prediction) == Normalize(reference) {
		return 1
	}
	return 0
}

// F1 returns the token-level F1 of prediction against reference under the
// SQuAD rules: tokens are Tokens (normalised words), the overlap is the
// multiset intersection, precision = overlap/|prediction|, recall =
// overlap/|reference| and F1 = 2PR/(P+R). When either side has no tokens the
// score is 1 if both have none and 0 otherwise; no overlap scores 0.
func F1(prediction, reference string) float64 {
	pred, ref := Tokens(prediction), Tokens(reference)
	if len(pred) == 0 || len(ref) == 0 {
		if len(pred) == len(ref) {
			return 1
		}
		return 0
	}
	counts := make(map[string]int, len(ref))
	for _, t := range ref {
		counts[t]++
	}
	same := 0
	for _, t := range pred {
		if counts[t] > 0 {
			counts[t]--
			same++
		}
	}
	if same == 0 {
		return 0
	}
	p := float64(same) / float64(len(pred))
	r := float64(same) / float64(len(ref))
	return 2 * p * r / (p + r)
}

// ContainsAnswer returns 1 when the normalised reference occurs in the
// normalised prediction as a whole run of words, else 0. Matching is on
// Tokens, so "1" is not found in "10" and "art" is not found in "party".
// A reference that normalises to nothing is contained only in a prediction
// that also normalises to nothing (the original matched every prediction).
func ContainsAnswer(prediction, reference string) float64 {
	pred, ref := Tokens(prediction), Tokens(reference)
	if len(ref) == 0 {
		if len(pred) == 0 {
			return 1
		}
		return 0
	}
	for i := 0; i+len(ref) <= len(pred); i++ {
		if equalTokens(pred[i:i+len(ref)], ref) {
			return 1
		}
	}
	return 0
}

func equalTokens(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
