package qa

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Words returns the words of s as the checks compare them: lowercased, split
// at every rune that is not a letter or a digit, except that a '.' between
// two digits stays inside the word ("3.5", "1.2.3") and a '-' or '−' right
// before a digit at the start of a word stays as '-' ("-5"). So case,
// whitespace, punctuation and markup (JSON quotes, table bars) do not
// matter, while numbers are compared as written: "1,234" is the words
// "1 234" and does not match "1234", "42.0" does not match "42".
//
// A phrase occurs in a text, for no_leakage and grounded, when its words
// (a leading article dropped) are a run of the text's words. Exported so
// that a scripted or simulated model can quote evidence that the checks
// will find.
func Words(s string) []string {
	return strings.Fields(normalize(s))
}

// normalize returns the words of s (see Words) joined by single spaces,
// with a space before the first and after the last: the form searched for
// whole-word phrases.
func normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte(' ')
	inWord := false
	var prev rune // the rune before r in s
	for i, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(unicode.ToLower(r))
			inWord = true
		case r == '.' && inWord && unicode.IsDigit(prev) && digitAfter(s, i+1):
			b.WriteByte('.')
		case (r == '-' || r == '−') && !inWord && digitAfter(s, i+utf8.RuneLen(r)):
			b.WriteByte('-')
			inWord = true
		case inWord:
			b.WriteByte(' ')
			inWord = false
		}
		prev = r
	}
	if inWord {
		b.WriteByte(' ')
	}
	return b.String()
}

// digitAfter reports whether s[i:] starts with a digit.
func digitAfter(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return unicode.IsDigit(r)
}

// text is a haystack of words for whole-word phrase search.
type text string

func newText(s string) text { return text(normalize(s)) }

// phrase returns the needle form of s: its words with one leading article
// ("the", "a", "an") dropped when more words follow, so the answer "The
// Louvre" is found in "visit Louvre". It is "" when s has no words.
func phrase(s string) string {
	ws := Words(s)
	if len(ws) > 1 && (ws[0] == "the" || ws[0] == "a" || ws[0] == "an") {
		ws = ws[1:]
	}
	if len(ws) == 0 {
		return ""
	}
	return " " + strings.Join(ws, " ") + " "
}

// has reports whether the needle (from phrase) occurs in t as whole words.
func (t text) has(needle string) bool {
	return needle != "" && strings.Contains(string(t), needle)
}

// countWords counts runs of letters, digits and '_' (a regexp's \w), as
// AgentFlow's verbosity check counts words.
func countWords(s string) int {
	n, in := 0, false
	for _, r := range s {
		w := unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_'
		if w && !in {
			n++
		}
		in = w
	}
	return n
}

// clip cuts s to at most n runes, marking a cut with the count of runes
// left out.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	rs := []rune(s)
	return string(rs[:n]) + "… [" + strconv.Itoa(len(rs)-n) + " more characters]"
}

// quote is s in Go quotes, cut to 80 runes, for failure reasons.
func quote(s string) string {
	const n = 80
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n]) + "…"
	}
	return strconv.Quote(s)
}
