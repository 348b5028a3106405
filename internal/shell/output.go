package shell

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"github.com/flockrun/flock/internal/elide"
)

// capBuffer collects one output stream with bounded memory: it keeps the
// first keep bytes and a ring of the last keep bytes, and counts the rest.
// A command printing forever (`yes`) costs 2*keep bytes, not the output.
type capBuffer struct {
	keep  int
	head  []byte
	tail  []byte // ring of at most keep bytes once head is full
	pos   int    // next write position in tail once it is full
	total int64
}

func newCapBuffer(keep int) *capBuffer {
	return &capBuffer{keep: max(keep, 1)}
}

// Write appends p. It copies p and never fails.
func (b *capBuffer) Write(p []byte) {
	b.total += int64(len(p))
	if room := b.keep - len(b.head); room > 0 {
		n := min(room, len(p))
		b.head = append(b.head, p[:n]...)
		p = p[n:]
	}
	if len(p) == 0 {
		return
	}
	if len(p) >= b.keep {
		b.tail = append(b.tail[:0], p[len(p)-b.keep:]...)
		b.pos = 0
		return
	}
	if room := b.keep - len(b.tail); room > 0 {
		n := min(room, len(p))
		b.tail = append(b.tail, p[:n]...)
		p = p[n:]
	}
	for len(p) > 0 {
		n := copy(b.tail[b.pos:], p)
		p = p[n:]
		b.pos = (b.pos + n) % b.keep
	}
}

// dropLast removes the last byte written, if any.
func (b *capBuffer) dropLast() {
	switch {
	case len(b.tail) > 0:
		t := b.tailBytes()
		b.tail, b.pos = t[:len(t)-1], 0
	case len(b.head) > 0:
		b.head = b.head[:len(b.head)-1]
	default:
		return
	}
	b.total--
}

// last returns the last byte written.
func (b *capBuffer) last() (byte, bool) {
	switch {
	case len(b.tail) == b.keep:
		return b.tail[(b.pos+b.keep-1)%b.keep], true
	case len(b.tail) > 0:
		return b.tail[len(b.tail)-1], true
	case len(b.head) > 0:
		return b.head[len(b.head)-1], true
	}
	return 0, false
}

// dropped returns the number of bytes between head and tail that were not
// kept.
func (b *capBuffer) dropped() int64 {
	return b.total - int64(len(b.head)) - int64(len(b.tail))
}

// tailBytes returns the tail ring in stream order.
func (b *capBuffer) tailBytes() []byte {
	if len(b.tail) < b.keep || b.pos == 0 {
		return b.tail
	}
	out := make([]byte, 0, len(b.tail))
	out = append(out, b.tail[b.pos:]...)
	return append(out, b.tail[:b.pos]...)
}

// Result renders the stream: terminal noise cleaned, then capped at limit
// bytes with the head and tail kept (elide.Middle's format). It reports
// whether anything was cut.
func (b *capBuffer) Result(limit int) (string, bool) {
	if b.dropped() == 0 {
		all := append(append([]byte(nil), b.head...), b.tail...)
		return elide.Middle(string(clean(all)), limit)
	}
	return elideDropped(clean(b.head), clean(b.tailBytes()), limit, b.dropped())
}

// elideDropped is elide.Middle for a stream whose middle was already dropped
// while reading: it keeps about limit/2 bytes of head and the rest of limit
// from the end of tail, and the note counts every byte not shown (dropped
// ones included).
func elideDropped(head, tail []byte, limit int, dropped int64) (string, bool) {
	if limit <= 0 {
		limit = len(head) + len(tail)
	}
	hn := min(limit/2, len(head))
	for hn > 0 && hn < len(head) && !utf8.RuneStart(head[hn]) {
		hn--
	}
	start := max(len(tail)-(limit-limit/2), 0)
	for start < len(tail) && !utf8.RuneStart(tail[start]) {
		start++
	}
	elided := dropped + int64(len(head)-hn) + int64(start)
	return fmt.Sprintf("%s\n[... %d bytes elided ...]\n%s", head[:hn], elided, tail[start:]), true
}

// clean removes terminal noise from pty output: ANSI escape sequences (CSI,
// OSC, and two-byte ESC sequences) are dropped, CRLF becomes LF and a lone
// CR (progress-bar redraws) becomes LF, so that no text is lost or jammed
// together. A sequence cut off at the end of b is dropped.
func clean(b []byte) []byte {
	if bytes.IndexByte(b, 0x1b) < 0 && bytes.IndexByte(b, '\r') < 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch c {
		case '\r':
			if i+1 < len(b) && b[i+1] == '\n' {
				continue
			}
			out = append(out, '\n')
		case 0x1b:
			i = skipEscape(b, i)
		default:
			out = append(out, c)
		}
	}
	return out
}

// skipEscape returns the index of the last byte of the escape sequence that
// starts at b[i] == ESC.
func skipEscape(b []byte, i int) int {
	if i+1 >= len(b) {
		return i
	}
	switch b[i+1] {
	case '[': // CSI: parameters and intermediates, then a final byte in @..~.
		j := i + 2
		for j < len(b) && (b[j] < 0x40 || b[j] > 0x7e) {
			if b[j] < 0x20 { // not part of a CSI sequence: stop before it
				return j - 1
			}
			j++
		}
		return min(j, len(b)-1)
	case ']', 'P', '_', '^', 'X': // OSC/DCS/APC/PM/SOS: until BEL or ST.
		for j := i + 2; j < len(b); j++ {
			if b[j] == 0x07 {
				return j
			}
			if b[j] == 0x1b && j+1 < len(b) && b[j+1] == '\\' {
				return j + 1
			}
		}
		return len(b) - 1
	case '(', ')', '*', '+': // charset designation: one more byte.
		return min(i+2, len(b)-1)
	default: // two-byte sequence, e.g. ESC = or ESC M.
		return i + 1
	}
}
