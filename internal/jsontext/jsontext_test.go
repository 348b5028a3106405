package jsontext

import "testing"

func TestObjectEnd(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{`{}`, 2},
		{`{"a":1} tail`, 7},
		{`{"a":{"b":2}}x`, 13},
		{`{"a":"}"}`, 9},
		{`{"a":"\"}"}`, 11},
		{`{"a":"\\"}`, 10},
		{`{"a":1`, -1},
		{`{"a":"}`, -1},
		{`{`, -1},
	} {
		if got := ObjectEnd(tc.in); got != tc.want {
			t.Errorf("ObjectEnd(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func FuzzObjectEnd(f *testing.F) {
	f.Add(`{"a":"}\"{"}`)
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) == 0 || s[0] != '{' {
			return
		}
		if end := ObjectEnd(s); end != -1 && (end < 2 || end > len(s) || s[end-1] != '}') {
			t.Fatalf("ObjectEnd(%q) = %d", s, end)
		}
	})
}
