package grading

import (
	"regexp"
	"strings"
)

// NameChoice is the multiple-choice metric.
const NameChoice = "choice"

var (
	// choiceLead is a letter opening the answer: "B", "(B)", "B)", "B.",
	// "B: Paris".
	choiceLead = regexp.MustCompile(`^\(?([A-Za-z])\)?(?:[.):,]|\s|$)`)
	// choiceSaid is a letter after "answer" anywhere: "the answer is (C)".
	choiceSaid = regexp.MustCompile(`(?i)answer(?:\s+is)?\s*[:=]?\s*\(?([A-Za-z])\)?(?:[^A-Za-z]|$)`)
)

// ChoiceLetter returns the choice letter a prediction gives, upper case,
// or "" when it gives none: the letter the answer starts with ("B",
// "(B)", "B) Paris"), else one named after "answer" ("The answer is C").
func ChoiceLetter(prediction string) string {
	p := strings.TrimSpace(prediction)
	if m := choiceLead.FindStringSubmatch(p); m != nil && (len(p) == 1 || !isWordStart(p)) {
		return strings.ToUpper(m[1])
	}
	if m := choiceSaid.FindAllStringSubmatch(p, -1); m != nil {
		return strings.ToUpper(m[len(m)-1][1])
	}
	return ""
}

// isWordStart reports whether p opens with a word of two or more letters
// ("Berlin"), which is not a choice letter.
func isWordStart(p string) bool {
	return len(p) > 1 && isLetter(p[0]) && isLetter(p[1])
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// Choice scores a multiple-choice answer: against a one-letter reference,
// 1 when the prediction gives that letter (ChoiceLetter); against a longer
// reference (the choice's text), 1 when the prediction is that text
// (ExactMatch's normalization). A benchmark row with choices has both as
// references, so either form of the answer scores.
func Choice(prediction, reference string) float64 {
	ref := strings.TrimSpace(reference)
	if len(ref) == 1 && isLetter(ref[0]) {
		if ChoiceLetter(prediction) == strings.ToUpper(ref) {
			return 1
		}
		return 0
	}
	return ExactMatch(prediction, reference)
}
