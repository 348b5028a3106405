// Package elide caps text at a byte limit by eliding its middle: the head
// and the tail are kept and a note counts the bytes left out. The bash and
// python operations, the persistent shell and the Python interpreter cap
// their output this way.
package elide

import (
	"fmt"
	"unicode/utf8"
)

// Middle caps s at about limit bytes, keeping the head and the tail and
// replacing the middle with a note counting the elided bytes. It reports
// whether anything was cut. limit <= 0 means no cap. Cuts never split a
// UTF-8 sequence.
func Middle(s string, limit int) (string, bool) {
	if limit <= 0 || len(s) <= limit {
		return s, false
	}
	head := limit / 2
	tail := limit - head
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return fmt.Sprintf("%s\n[... %d bytes elided ...]\n%s", s[:head], start-head, s[start:]), true
}
