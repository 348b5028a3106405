package grading

import (
	"strings"
	"unicode"
)

// asciiPunct is Python's string.punctuation, the set the SQuAD normaliser
// removes; it includes ASCII symbols such as $ % + < = > ^ ` | ~.
const asciiPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// Normalize returns s in SQuAD answer form: lowercased, punctuation removed,
// the articles "a", "an" and "the" removed as whole words, and whitespace
// collapsed to single spaces with none at either end.
//
// Punctuation is ASCII punctuation and symbols plus every Unicode
// punctuation rune (category P); it is deleted, not replaced by a space, so
// "U.S.A." becomes "usa" and "1,234" becomes "1234", as in SQuAD. Two
// deliberate departures keep numbers apart that SQuAD would merge:
//   - a '.' between two digits is kept as a decimal point ("3.5" stays
//     "3.5" rather than becoming "35");
//   - a '-' or '−' (U+2212) followed by a digit, with nothing but removed
//     punctuation between it and the start of its word, is kept as a minus
//     sign written '-' ("-5" and "(-5)" do not equal "5"; "3-5" is "35").
//
// Normalize is idempotent.
func Normalize(s string) string {
	return strings.Join(Tokens(s), " ")
}

// Tokens returns the whitespace-separated words of Normalize(s), the tokens
// F1 and contains_answer compare. It returns nil for an answer that
// normalises to nothing.
func Tokens(s string) []string {
	rs := []rune(strings.ToLower(s))
	var b strings.Builder
	b.Grow(len(s))
	last := ' ' // last rune written; ' ' stands for "start of text"
	for i, r := range rs {
		if !isPunct(r) {
			b.WriteRune(r)
			last = r
			continue
		}
		if i+1 >= len(rs) || !unicode.IsDigit(rs[i+1]) {
			continue
		}
		switch {
		case r == '.' && unicode.IsDigit(last):
			b.WriteRune('.')
			last = '.'
		case (r == '-' || r == '−') && unicode.IsSpace(last):
			b.WriteRune('-')
			last = '-'
		}
	}
	var out []string
	for _, w := range strings.Fields(b.String()) {
		if w == "a" || w == "an" || w == "the" {
			continue
		}
		out = append(out, w)
	}
	return out
}

// isPunct reports whether r is removed by Normalize.
func isPunct(r rune) bool {
	if r < 0x80 {
		return strings.ContainsRune(asciiPunct, r)
	}
	return unicode.IsPunct(r) || r == '−'
}
