package grading

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Number is a number found in a text by ExtractNumbers.
type Number struct {
	// Value is the number's value; a percentage keeps its written value
	// ("45%" is 45) and sets Percent.
	Value float64
	// Percent is set when the number is followed by "%" or the word
	// "percent"; such a number also matches Value/100 in NumericMatch.
	Percent bool
	// Text is the matched text, after LaTeX fractions were rewritten as a/b.
	Text string
}

// candidates returns the values n stands for: its value and, for a
// percentage, the same value as a fraction.
func (n Number) candidates() []float64 {
	if n.Percent {
		return []float64{n.Value, n.Value / 100}
	}
	return []float64{n.Value}
}

// Tolerance is how close two numbers must be for NumericMatch: they match
// when |p-r| <= Abs or |p-r| <= Rel*|r|, where r is the reference.
type Tolerance struct {
	Abs float64 `json:"abs"`
	Rel float64 `json:"rel"`
}

// DefaultTolerance is the original evaluator's tolerance: 1e-6 absolute or
// 1% relative to the reference. Beware that 1% is loose for integer answers
// (100 matches 101); use Tolerance{Abs: 1e-6} for exact integer benchmarks.
var DefaultTolerance = Tolerance{Abs: 1e-6, Rel: 0.01}

// NumericMatch is numeric_match with DefaultTolerance.
func NumericMatch(prediction, reference string) (float64, error) {
	return DefaultTolerance.Match(prediction, reference)
}

// Match returns 1 when the main number of prediction (see MainNumber) is
// within t of the main number of reference, else 0. A percentage on either
// side also matches as a fraction ("45%" matches "0.45"). A prediction
// without a number scores 0; a reference without one is ErrNotNumeric.
func (t Tolerance) Match(prediction, reference string) (float64, error) {
	ref, ok := MainNumber(reference)
	if !ok {
		return 0, ErrNotNumeric
	}
	pred, ok := MainNumber(prediction)
	if !ok {
		return 0, nil
	}
	for _, p := range pred.candidates() {
		for _, r := range ref.candidates() {
			d := math.Abs(p - r)
			if d <= t.Abs || d <= t.Rel*math.Abs(r) {
				return 1, nil
			}
		}
	}
	return 0, nil
}

// answerMarkers introduce a stated answer; matched case-insensitively as
// whole words.
var answerMarkers = []string{"final answer", "answer is", "answer:", "answer ="}

// MainNumber returns the number a text gives as its answer:
//  1. inside the last \boxed{...}, the first number;
//  2. otherwise after the last "####" (GSM8K style), the first number;
//  3. otherwise after the last answer marker ("final answer", "answer is",
//     "answer:", "answer =", any case), the first number;
//  4. otherwise the last number in the text.
//
// When rule 1, 2 or 3 selects a span without a number, there is no main
// number: the text stated an answer that is not numeric, and MainNumber does
// not fall back to numbers from the reasoning before it.
func MainNumber(s string) (Number, bool) {
	s = rewriteLatexFractions(s)
	first := func(span string) (Number, bool) {
		ns := ExtractNumbers(span)
		if len(ns) == 0 {
			return Number{}, false
		}
		return ns[0], true
	}
	if i := strings.LastIndex(s, `\boxed{`); i >= 0 {
		return first(braced(s[i+len(`\boxed{`):]))
	}
	if i := strings.LastIndex(s, "####"); i >= 0 {
		return first(s[i+4:])
	}
	lower := asciiLower(s)
	at := -1
	for _, m := range answerMarkers {
		for j := strings.LastIndex(lower, m); j >= 0; j = strings.LastIndex(lower[:j], m) {
			if !wordBefore(s, j) && !letterAfterWord(s, j+len(m)) {
				at = max(at, j+len(m))
				break
			}
		}
	}
	if at >= 0 {
		return first(s[at:])
	}
	ns := ExtractNumbers(s)
	if len(ns) == 0 {
		return Number{}, false
	}
	return ns[len(ns)-1], true
}

// braced returns s up to the '}' that closes an already opened brace.
func braced(s string) string {
	depth := 1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return s[:i]
			}
		}
	}
	return s
}

var latexFrac = regexp.MustCompile(`\\[dt]?frac\{\s*(-?\d+)\s*\}\{\s*(\d+)\s*\}`)

// rewriteLatexFractions turns \frac{3}{4} (also \dfrac, \tfrac) into 3/4.
func rewriteLatexFractions(s string) string {
	if !strings.Contains(s, `frac{`) {
		return s
	}
	return latexFrac.ReplaceAllString(s, "$1/$2")
}

// ExtractNumbers returns the numbers written in s, in order. It recognises:
//   - integers and decimals, with an optional leading '.' (".5");
//   - thousands separators as commas between groups of exactly three
//     digits ("1,234,567.8"); "1,23" is the two numbers 1 and 23;
//   - scientific notation ("1.2e3", "6E-5");
//   - a sign '-', '−' (U+2212) or '+' directly before the digits when it does
//     not follow a letter, digit or '.', so "x = -5" is -5 but "3-5" is 3 and 5;
//   - fractions of integers "3/4" (denominator not 0), mixed numbers "1 1/2",
//     and LaTeX \frac{3}{4} when called through MainNumber;
//   - a percent sign or the word "percent" after the number (Number.Percent).
//
// Digits glued to a preceding letter or underscore ("H2O", "x2", "mp3") are
// not numbers, nor are dates written a/b/c ("12/25/2020"). Currency signs
// and units are ignored ("$1,200" is 1200, "5km" is 5). Numbers too large
// for a float64 are skipped.
func ExtractNumbers(s string) []Number {
	var out []Number
	for i := 0; i < len(s); {
		c := s[i]
		neg := false
		start := i
		switch {
		case c == '-' || c == '+' || strings.HasPrefix(s[i:], "−"):
			size := 1
			if c != '-' && c != '+' {
				size = len("−")
			}
			if !startsNumber(s, i+size) || wordBefore(s, i) || strings.HasSuffix(s[:i], ".") {
				i += size
				continue
			}
			neg = c != '+'
			i += size
		case startsNumber(s, i):
			if wordBefore(s, i) {
				i = skipNumberRun(s, i)
				continue
			}
		default:
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			continue
		}
		n, end, ok := scanNumber(s, i)
		if !ok {
			i = end
			continue
		}
		if neg {
			n.Value = -n.Value
		}
		n.Text = s[start:end]
		out = append(out, n)
		i = end
	}
	return out
}

// scanNumber reads the number whose digits (or leading '.') start at i and
// returns it with the offset just past it. ok is false for a date or an
// out-of-range value, which the caller skips up to end.
func scanNumber(s string, i int) (n Number, end int, ok bool) {
	j := digitsEnd(s, i)
	plain := j > i // an integer without separators, dot or exponent
	if d := j - i; d >= 1 && d <= 3 {
		for j+4 <= len(s) && s[j] == ',' && digitsEnd(s, j+1) == j+4 {
			j += 4
			plain = false
		}
	}
	if j+1 < len(s) && s[j] == '.' && isDigit(s[j+1]) {
		j = digitsEnd(s, j+1)
		plain = false
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			j = digitsEnd(s, k)
			plain = false
		}
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(s[i:j], ",", ""), 64)
	if err != nil || math.IsInf(v, 0) {
		return Number{}, j, false
	}
	if plain {
		num, den, k, kind := fractionAt(s, i)
		switch {
		case kind == fracDate: // a/b/c is a date, not a number
			return Number{}, k, false
		case kind == fracOK:
			v, j = num/den, k
		case j+1 < len(s) && s[j] == ' ' && isDigit(s[j+1]):
			// Mixed number "1 1/2".
			if num, den, k, kind := fractionAt(s, j+1); kind == fracOK && num < den {
				v, j = v+num/den, k
			}
		}
	}
	n.Value = v
	k := j
	if k < len(s) && s[k] == ' ' {
		k++
	}
	switch {
	case k < len(s) && s[k] == '%':
		n.Percent, j = true, k+1
	case wordAt(s, k, "percent"):
		n.Percent, j = true, k+7
	}
	return n, j, true
}

type fracKind int

const (
	fracNone fracKind = iota
	fracOK
	fracDate
)

// fractionAt reads "a/b" of plain integers at i. It reports fracDate for
// "a/b/c" and fracNone when there is no fraction or b is 0.
func fractionAt(s string, i int) (num, den float64, end int, kind fracKind) {
	j := digitsEnd(s, i)
	if j == i || j+1 >= len(s) || s[j] != '/' || !isDigit(s[j+1]) {
		return 0, 0, 0, fracNone
	}
	k := digitsEnd(s, j+1)
	if k+1 < len(s) && (s[k] == '/' || s[k] == '.' || s[k] == ',') && isDigit(s[k+1]) {
		if s[k] == '/' {
			return 0, 0, skipNumberRun(s, k), fracDate
		}
		return 0, 0, 0, fracNone
	}
	a, err1 := strconv.ParseFloat(s[i:j], 64)
	b, err2 := strconv.ParseFloat(s[j+1:k], 64)
	if err1 != nil || err2 != nil || b == 0 || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return 0, 0, 0, fracNone
	}
	return a, b, k, fracOK
}

// startsNumber reports whether s[i:] starts with a digit or ".digit".
func startsNumber(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	if isDigit(s[i]) {
		return true
	}
	return s[i] == '.' && i+1 < len(s) && isDigit(s[i+1])
}

// skipNumberRun returns the offset past the run of digits, '.', ',' and '/'
// starting at i.
func skipNumberRun(s string, i int) int {
	for i < len(s) && (isDigit(s[i]) || s[i] == '.' || s[i] == ',' || s[i] == '/') {
		i++
	}
	return i
}

func digitsEnd(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// wordBefore reports whether the rune before offset i is a letter, digit or
// underscore, so that a number or marker at i would be glued to a word.
func wordBefore(s string, i int) bool {
	if i == 0 {
		return false
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// wordAt reports whether the lowercase ASCII word w is at s[i:],
// case-insensitively, and not followed by another letter.
func wordAt(s string, i int, w string) bool {
	if len(s)-i < len(w) || asciiLower(s[i:i+len(w)]) != w {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[i+len(w):])
	return !unicode.IsLetter(r)
}

// letterAfterWord reports whether a marker ending at i that ends in a letter
// runs on into a longer word ("answer isn't").
func letterAfterWord(s string, i int) bool {
	if i >= len(s) || !unicode.IsLetter(rune(s[i-1])) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return unicode.IsLetter(r)
}

// asciiLower lowercases ASCII letters only, so byte offsets are preserved.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
