// Package jsontext finds JSON in free text, such as a model's reply that
// wraps its JSON in prose or code fences.
package jsontext

// ObjectEnd returns the offset just past the '}' that closes the '{' at
// s[0], skipping braces inside JSON strings (escapes included), or -1 when
// the object is not closed. It does not check that the object is valid
// JSON: it finds where to cut, so that a decoder is tried once, on the
// right bytes.
func ObjectEnd(s string) int {
	depth, inString := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inString && c == '\\':
			i++
		case inString:
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '{':
			depth++
		case c == '}':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}
