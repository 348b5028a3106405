// Package pathelem makes names usable as one element of a file path: a
// spawned child's work directory, a benchmark's output file names.
package pathelem

import "strings"

// Safe returns name with every character other than an ASCII letter, a
// digit, '-', '_' and '.' replaced by '_', and its leading and trailing
// dots trimmed, so that it is never "." or "..", and names no directory
// and no hidden file. It may be empty.
func Safe(name string) string {
	var b strings.Builder
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	return strings.Trim(b.String(), ".")
}
