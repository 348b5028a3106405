package elide

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMiddle(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		limit     int
		want      string
		truncated bool
	}{
		{name: "short", in: "hello", limit: 10, want: "hello"},
		{name: "no limit", in: "hello", limit: 0, want: "hello"},
		{name: "exact", in: "0123456789", limit: 10, want: "0123456789"},
		{name: "cut", in: "0123456789abcdef", limit: 6, want: "012\n[... 10 bytes elided ...]\ndef", truncated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cut := Middle(tt.in, tt.limit)
			if got != tt.want || cut != tt.truncated {
				t.Fatalf("Middle(%q, %d) = %q, %v; want %q, %v", tt.in, tt.limit, got, cut, tt.want, tt.truncated)
			}
		})
	}
}

func TestMiddleKeepsUTF8(t *testing.T) {
	in := strings.Repeat("é", 100)
	got, cut := Middle(in, 51)
	if !cut || !utf8.ValidString(got) {
		t.Fatalf("Middle split a rune or did not cut: %q", got)
	}
}
