package shell

import (
	"bytes"
	"strconv"
	"testing"
)

const testTok = "0123456789abcdef0123456789abcdef"

// mark renders the marker the shell prints for testTok.
func mark(code, cwd string) string {
	return "__FLOCK_" + testTok + "_" + code + "_" + cwd + "_" + testTok + "__\n"
}

var markerTests = []struct {
	name   string
	data   string
	before string
	m      marker
	rest   string
	found  bool
	ok     bool
}{
	{name: "empty", data: "", before: ""},
	{name: "no marker", data: "hello\n", before: "hello\n"},
	{name: "only marker", data: mark("0", "/w"), m: marker{Code: 0, Cwd: "/w"}, found: true, ok: true},
	{name: "output and marker", data: "out\n" + mark("3", "/tmp"), before: "out\n", m: marker{Code: 3, Cwd: "/tmp"}, found: true, ok: true},
	{name: "no trailing newline", data: "abc" + mark("0", "/"), before: "abc", m: marker{Cwd: "/"}, found: true, ok: true},
	{name: "rest kept", data: "a" + mark("1", "/") + "late", before: "a", m: marker{Code: 1, Cwd: "/"}, rest: "late", found: true, ok: true},
	{name: "cwd with underscores and newline", data: mark("0", "/a_b\n_c__"), m: marker{Cwd: "/a_b\n_c__"}, found: true, ok: true},
	{name: "cwd containing marker prefix", data: mark("0", "\n__FLOCK_x"), m: marker{Cwd: "\n__FLOCK_x"}, found: true, ok: true},
	{name: "other token", data: "\n__FLOCK_ffffffffffffffffffffffffffffffff_0_/_ffffffffffffffffffffffffffffffff__\n",
		before: "\n__FLOCK_ffffffffffffffffffffffffffffffff_0_/_ffffffffffffffffffffffffffffffff__\n"},
	{name: "first marker wins", data: mark("1", "/a") + mark("2", "/b"), m: marker{Code: 1, Cwd: "/a"}, rest: mark("2", "/b"), found: true, ok: true},
	{name: "partial marker", data: "x\n__FLOCK_" + testTok + "_0_/w", before: "x\n"},
	{name: "malformed code", data: mark("x", "/"), m: marker{Code: -1}, found: true},
	{name: "negative code", data: mark("-1", "/"), m: marker{Code: -1, Cwd: "/"}, found: true, ok: true},
	{name: "no separator", data: "__FLOCK_" + testTok + "_7_" + testTok + "__\n" + "_" + testTok + "__\n", m: marker{Code: -1}, rest: "_" + testTok + "__\n", found: true},
	{name: "crlf output", data: "a\r\n" + mark("0", "/"), before: "a\r\n", m: marker{Cwd: "/"}, found: true, ok: true},
}

func TestParseMarker(t *testing.T) {
	for _, tt := range markerTests {
		t.Run(tt.name, func(t *testing.T) {
			before, m, rest, found, ok := parseMarker([]byte(tt.data), testTok)
			if string(before) != tt.before || m != tt.m || string(rest) != tt.rest || found != tt.found || ok != tt.ok {
				t.Fatalf("parseMarker = %q, %+v, %q, %v, %v; want %q, %+v, %q, %v, %v",
					before, m, rest, found, ok, tt.before, tt.m, tt.rest, tt.found, tt.ok)
			}
			checkScanner(t, []byte(tt.data), 1)
			checkScanner(t, []byte(tt.data), 7)
		})
	}
}

// checkScanner feeds data to a scanner in chunks of size n and checks it
// agrees with parseMarker.
func checkScanner(tb testing.TB, data []byte, n int) {
	tb.Helper()
	var got bytes.Buffer
	s := newScanner(testTok, func(p []byte) { got.Write(p) })
	for i := 0; i < len(data); i += n {
		s.Feed(data[i:min(i+n, len(data))])
	}
	if !s.Done {
		s.Flush()
	}
	before, m, rest, found, ok := parseMarker(data, testTok)
	if !found {
		before = data
		if i := bytes.Index(data, markerStart(testTok)); i >= 0 {
			before = data[:i] // a partial marker is dropped
		}
		m, rest = marker{}, nil
	}
	if len(rest) > maxRest {
		rest = rest[:maxRest]
	}
	if !bytes.Equal(got.Bytes(), before) || s.Done != found || s.M != m || s.OK != ok || !bytes.Equal(s.Rest, rest) {
		tb.Fatalf("chunk %d: scanner = %q, done %v, %+v, ok %v, rest %q; parseMarker = %q, %v, %+v, %v, %q",
			n, got.Bytes(), s.Done, s.M, s.OK, s.Rest, before, found, m, ok, rest)
	}
}

func FuzzParseMarker(f *testing.F) {
	for _, tt := range markerTests {
		f.Add([]byte(tt.data), []byte(tt.m.Cwd), tt.m.Code, []byte(tt.rest), uint8(3))
	}
	f.Fuzz(func(t *testing.T, pre, cwd []byte, code int, post []byte, chunk uint8) {
		// Arbitrary streams: chunked scanning agrees with parseMarker.
		checkScanner(t, pre, int(chunk%64)+1)
		// Streams with a real marker: it is found unless the output before
		// it forged one, and its fields come back intact.
		codeStr := strconv.Itoa(code)
		data := []byte(string(pre) + mark(codeStr, string(cwd)) + string(post))
		checkScanner(t, data, int(chunk%64)+1)
		checkScanner(t, data, len(data)+1)
		start := markerStart(testTok)
		if bytes.Index(data, start) != len(pre) ||
			bytes.Index(data[len(pre)+len(start):], markerEnd(testTok)) != len(codeStr)+1+len(cwd) {
			return // the output forged a marker: it knows the token
		}
		before, m, rest, found, ok := parseMarker(data, testTok)
		if !found || !ok || !bytes.Equal(before, pre) || m.Code != code || m.Cwd != string(cwd) || !bytes.Equal(rest, post) {
			t.Fatalf("parseMarker(%q) = %q, %+v, %q, %v, %v", data, before, m, rest, found, ok)
		}
	})
}
