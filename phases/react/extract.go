package react

import (
	"regexp"
	"strings"
)

// Answer sources: which rule of ExtractAnswer (or which event) produced a
// run's answer. They are recorded in the run's result as answer_source.
const (
	SourceSubmit    = "submit"
	SourceAnswerTag = "answer_tag"
	SourceBoxed     = "boxed"
	SourceLabel     = "label"
	SourceLastLine  = "last_line"
	SourceNone      = "none"
)

var (
	answerTag = regexp.MustCompile(`(?is)<answer>(.*?)</answer>`)
	// label matches "final answer" or "answer" as whole words, followed by
	// ":", "=", "is" or the end of the line.
	label = regexp.MustCompile(`(?im)\b(?:final\s+answer|answer)\b[ \t]*(?::|=|\bis(?:[ \t]|$)|$)`)
)

// ExtractAnswer reads the final answer from a model reply that made no tool
// call. The rules, first match wins:
//
//  1. the content of the last complete <answer>...</answer> element;
//  2. the content of the last \boxed{...} (braces balanced);
//  3. the text after the last "final answer" or "answer" label, matched as
//     whole words (so "reanswer:" is no label) and followed by ":", "=",
//     "is" or the end of the line ("The final answer is 42", "Answer: 42",
//     "**Final answer**: 42"), up to the end of that line; when the label
//     ends its line, the next non-empty line;
//  4. the last non-empty line.
//
// The result is trimmed, loses markdown emphasis and wrapping backticks,
// quotes or $...$, and one trailing period. Unlike the original runner there
// is no "therefore/thus/so/hence" rule: those words introduce reasoning, and
// without word boundaries "also," matched "so,". An empty reply gives ("",
// SourceNone).
func ExtractAnswer(text string) (answer, source string) {
	if strings.TrimSpace(text) == "" {
		return "", SourceNone
	}
	if m := answerTag.FindAllStringSubmatch(text, -1); len(m) > 0 {
		return clean(m[len(m)-1][1]), SourceAnswerTag
	}
	if b, ok := lastBoxed(text); ok {
		return clean(b), SourceBoxed
	}
	plain := strings.NewReplacer("**", "", "__", "").Replace(text)
	if locs := label.FindAllStringIndex(plain, -1); len(locs) > 0 {
		rest := plain[locs[len(locs)-1][1]:]
		line, after, _ := strings.Cut(rest, "\n")
		if strings.TrimSpace(line) == "" {
			line = firstNonEmpty(after)
		}
		if a := clean(line); a != "" {
			return a, SourceLabel
		}
	}
	return clean(lastNonEmpty(plain)), SourceLastLine
}

// lastBoxed returns the content of the last \boxed{...} with balanced braces.
func lastBoxed(s string) (string, bool) {
	const open = `\boxed{`
	i := strings.LastIndex(s, open)
	for i >= 0 {
		depth, start := 1, i+len(open)
		for j := start; j < len(s); j++ {
			switch s[j] {
			case '{':
				depth++
			case '}':
				depth--
				if depth == 0 {
					return s[start:j], true
				}
			}
		}
		// Unbalanced: try an earlier one.
		i = strings.LastIndex(s[:i], open)
	}
	return "", false
}

func firstNonEmpty(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			return l
		}
	}
	return ""
}

func lastNonEmpty(s string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			return lines[i]
		}
	}
	return ""
}

// clean trims an extracted answer: whitespace, emphasis, wrapping quotes,
// backticks or dollars, and a trailing period (not an ellipsis).
func clean(s string) string {
	s = strings.NewReplacer("**", "", "__", "").Replace(s)
	for {
		t := strings.TrimSpace(s)
		if strings.HasSuffix(t, ".") && !strings.HasSuffix(t, "..") {
			t = strings.TrimSpace(strings.TrimSuffix(t, "."))
		}
		for _, p := range [][2]string{{"`", "`"}, {"\"", "\""}, {"'", "'"}, {"$", "$"}, {"*", "*"}, {"“", "”"}} {
			if len(t) >= len(p[0])+len(p[1]) && strings.HasPrefix(t, p[0]) && strings.HasSuffix(t, p[1]) {
				t = strings.TrimSpace(t[len(p[0]) : len(t)-len(p[1])])
			}
		}
		if t == s {
			return s
		}
		s = t
	}
}
