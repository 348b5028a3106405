package shell

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/flockrun/flock/internal/elide"
)

func TestClean(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "plain", in: "hello\n", want: "hello\n"},
		{name: "crlf", in: "a\r\nb\r\n", want: "a\nb\n"},
		{name: "lone cr", in: "10%\r50%\r100%\n", want: "10%\n50%\n100%\n"},
		{name: "sgr", in: "\x1b[1;31mred\x1b[0m", want: "red"},
		{name: "cursor", in: "a\x1b[2Kb\x1b[?25lc", want: "abc"},
		{name: "osc bel", in: "\x1b]0;title\x07text", want: "text"},
		{name: "osc st", in: "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", want: "link"},
		{name: "charset", in: "\x1b(Babc", want: "abc"},
		{name: "two byte", in: "\x1b=x\x1b>", want: "x"},
		{name: "cut at end", in: "abc\x1b[3", want: "abc"},
		{name: "lone esc at end", in: "abc\x1b", want: "abc"},
		{name: "csi broken by newline", in: "\x1b[3\nx", want: "\nx"},
		{name: "utf8 kept", in: "é✓\r\n", want: "é✓\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(clean([]byte(tt.in))); got != tt.want {
				t.Fatalf("clean(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCapBuffer(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		limit int
		chunk int
	}{
		{name: "empty", in: "", limit: 10, chunk: 1},
		{name: "short", in: "hello", limit: 10, chunk: 2},
		{name: "exactly twice", in: strings.Repeat("x", 20), limit: 10, chunk: 3},
		{name: "cut in head", in: "0123456789abcdef", limit: 6, chunk: 1},
		{name: "long, small chunks", in: strings.Repeat("0123456789", 100), limit: 30, chunk: 7},
		{name: "long, big chunks", in: strings.Repeat("0123456789", 100), limit: 30, chunk: 500},
		{name: "utf8", in: strings.Repeat("é✓", 200), limit: 51, chunk: 13},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newCapBuffer(tt.limit)
			for i := 0; i < len(tt.in); i += tt.chunk {
				b.Write([]byte(tt.in[i:min(i+tt.chunk, len(tt.in))]))
			}
			got, cut := b.Result(tt.limit)
			want, wantCut := elide.Middle(tt.in, tt.limit)
			if got != want || cut != wantCut {
				t.Fatalf("Result = %q, %v; Truncate = %q, %v", got, cut, want, wantCut)
			}
			if !utf8.ValidString(got) {
				t.Fatalf("invalid UTF-8: %q", got)
			}
			if int64(len(b.head)+len(b.tail)) > 2*int64(tt.limit) {
				t.Fatalf("kept %d bytes for limit %d", len(b.head)+len(b.tail), tt.limit)
			}
		})
	}
}

func TestCapBufferDropLast(t *testing.T) {
	tests := []struct {
		name string
		in   string
		keep int
	}{
		{name: "head only", in: "ab\n", keep: 10},
		{name: "tail", in: "abcdefghijkl\n", keep: 5},
		{name: "wrapped ring", in: strings.Repeat("x", 23) + "\n", keep: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newCapBuffer(tt.keep)
			for i := range len(tt.in) {
				b.Write([]byte{tt.in[i]})
			}
			if c, ok := b.last(); !ok || c != '\n' {
				t.Fatalf("last = %q, %v", c, ok)
			}
			b.dropLast()
			// dropLast on a full ring loses one byte of tail context but
			// keeps the count exact.
			in := tt.in[:len(tt.in)-1]
			if c, ok := b.last(); !ok || c != in[len(in)-1] || b.total != int64(len(in)) {
				t.Fatalf("after dropLast: last %q, total %d", c, b.total)
			}
			got := mustResult(b, 2*tt.keep)
			if !strings.HasSuffix(in, got[max(strings.LastIndexByte(got, '\n')+1, 0):]) {
				t.Fatalf("after dropLast %q is not a cut of %q", got, in)
			}
			b.Write([]byte("!"))
			if got := mustResult(b, 2*tt.keep); !strings.HasSuffix(got, in[len(in)-2:]+"!") {
				t.Fatalf("write after dropLast: %q", got)
			}
		})
	}
}

func mustResult(b *capBuffer, limit int) string {
	s, _ := b.Result(limit)
	return s
}

func TestElideCountsDropped(t *testing.T) {
	in := bytes.Repeat([]byte("a"), 10000)
	b := newCapBuffer(100)
	b.Write(in)
	got, cut := b.Result(100)
	want, _ := elide.Middle(string(in), 100)
	if !cut || got != want {
		t.Fatalf("Result = %q; want %q", got, want)
	}
}
