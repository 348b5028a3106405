package handlers

import (
	"fmt"
	"unicode/utf8"
)

// Truncate caps s at about limit bytes, keeping the head and the tail and
// replacing the middle with a note counting the elided bytes. It reports
// whether anything was cut. limit <= 0 means no cap. Cuts never split a
// UTF-8 sequence.
func Truncate(s string, limit int) (string, bool) {
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
