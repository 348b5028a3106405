package text2sql

import (
	"fmt"
	"strings"
)

// allowedVerbs are the first keywords a query may start with (after comments and
// whitespace). Everything else is rejected before SQLite sees it.
var allowedVerbs = []string{"SELECT", "WITH", "PRAGMA"}

// checkStatement accepts query when it is exactly one statement starting with SELECT,
// WITH or PRAGMA. Comments, whitespace and trailing semicolons are allowed around it;
// a second statement after a semicolon is not. It returns an error wrapping
// ErrRejected that names what is wrong.
//
// The check is lexical (comments, quoted strings and identifiers are skipped, so a ';'
// inside a string literal does not count); the connection's authorizer and read-only
// mode are what actually keep the file unchanged.
func checkStatement(query string) error {
	i := skipSpaceAndComments(query, 0)
	if i >= len(query) {
		return fmt.Errorf("%w: query is empty", ErrRejected)
	}
	j := i
	for j < len(query) && isIdentByte(query[j]) {
		j++
	}
	verb := strings.ToUpper(query[i:j])
	if !isAllowedVerb(verb) {
		shown := verb
		if shown == "" {
			shown = string(query[i])
		}
		return fmt.Errorf("%w: only SELECT, WITH and PRAGMA statements are allowed, not %s", ErrRejected, shown)
	}
	end, err := statementEnd(query, j)
	if err != nil {
		return err
	}
	for k := end; k < len(query); {
		k = skipSpaceAndComments(query, k)
		if k >= len(query) {
			break
		}
		if query[k] == ';' {
			k++
			continue
		}
		return fmt.Errorf("%w: only one statement is allowed (found more after ';' at offset %d)", ErrRejected, end-1)
	}
	return nil
}

func isAllowedVerb(verb string) bool {
	for _, v := range allowedVerbs {
		if verb == v {
			return true
		}
	}
	return false
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// skipSpaceAndComments returns the index of the first byte at or after i that is not
// whitespace or inside a comment ("-- ..." to end of line, "/* ... */", an unclosed
// block comment runs to the end as in SQLite).
func skipSpaceAndComments(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\f' || s[i] == '\v':
			i++
		case strings.HasPrefix(s[i:], "--"):
			nl := strings.IndexByte(s[i:], '\n')
			if nl < 0 {
				return len(s)
			}
			i += nl + 1
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return len(s)
			}
			i += 2 + end + 2
		default:
			return i
		}
	}
	return i
}

// statementEnd scans from i to the first ';' outside quotes and comments and returns
// the index just past it, or len(s) when there is none. An unterminated quote is
// rejected.
func statementEnd(s string, i int) (int, error) {
	for i < len(s) {
		c := s[i]
		switch {
		case c == ';':
			return i + 1, nil
		case c == '\'' || c == '"' || c == '`':
			end := closingQuote(s, i+1, c)
			if end < 0 {
				return 0, fmt.Errorf("%w: unterminated %c quote at offset %d", ErrRejected, c, i)
			}
			i = end + 1
		case c == '[':
			end := strings.IndexByte(s[i+1:], ']')
			if end < 0 {
				return 0, fmt.Errorf("%w: unterminated [ quote at offset %d", ErrRejected, i)
			}
			i += end + 2
		case strings.HasPrefix(s[i:], "--") || strings.HasPrefix(s[i:], "/*"):
			i = skipSpaceAndComments(s, i)
		default:
			i++
		}
	}
	return len(s), nil
}

// closingQuote returns the index of the quote q closing a quoted run that starts at i
// (a doubled quote is an escaped one), or -1.
func closingQuote(s string, i int, q byte) int {
	for i < len(s) {
		if s[i] == q {
			if i+1 < len(s) && s[i+1] == q {
				i += 2
				continue
			}
			return i
		}
		i++
	}
	return -1
}
