package shell

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"strconv"
)

// maxMarkerBody bounds the bytes kept between the start and the end of a
// marker (exit code and cwd). A longer body cannot come from the shell: the
// marker is then declared malformed so a stream cannot grow the buffer.
const maxMarkerBody = 64 << 10

// newToken returns a fresh random marker token. Tokens come from crypto/rand
// so that command output cannot predict, and thus forge, a marker.
func newToken() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand.Read never fails on supported platforms.
		panic("bash: crypto/rand: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// markerStart and markerEnd delimit the completion marker printed after each
// command:
//
//	__FLOCK_<token>_<exit code>_<cwd>_<token>__\n
//
// It is found wherever it starts, so it needs no leading newline and output
// that lacks a final newline comes back unchanged; with a single newline
// the shell writes it in one write(2). The cwd is framed by the token on
// both sides, so any byte may appear in it.
func markerStart(tok string) []byte { return []byte("__FLOCK_" + tok + "_") }

func markerEnd(tok string) []byte { return []byte("_" + tok + "__\n") }

// marker is a parsed completion marker.
type marker struct {
	// Code is the command's exit status, -1 when the marker was malformed.
	Code int
	// Cwd is the shell's $PWD after the command.
	Cwd string
}

// parseBody parses "<code>_<cwd>".
func parseBody(body []byte) (marker, bool) {
	i := bytes.IndexByte(body, '_')
	if i < 0 {
		return marker{Code: -1}, false
	}
	code, err := strconv.Atoi(string(body[:i]))
	if err != nil {
		return marker{Code: -1}, false
	}
	return marker{Code: code, Cwd: string(body[i+1:])}, true
}

// parseMarker splits a complete stream at the first marker for tok: before
// is the command's output, rest what followed the marker. found is false when
// data holds no complete marker; ok is false when the marker was found but
// malformed. It is the reference for scanner, which does the same on a stream
// fed in chunks.
func parseMarker(data []byte, tok string) (before []byte, m marker, rest []byte, found, ok bool) {
	start, end := markerStart(tok), markerEnd(tok)
	i := bytes.Index(data, start)
	if i < 0 {
		return data, marker{}, nil, false, false
	}
	body := data[i+len(start):]
	j := bytes.Index(body, end)
	if j < 0 {
		if hopeless(len(body), len(end)) {
			return data[:i], marker{Code: -1}, nil, true, false
		}
		return data[:i], marker{}, nil, false, false
	}
	if j > maxMarkerBody {
		return data[:i], marker{Code: -1}, nil, true, false
	}
	m, ok = parseBody(body[:j])
	return data[:i], m, body[j+len(end):], true, ok
}

// hopeless reports that a marker body of n bytes still lacking its end
// (endLen bytes) can no longer end within maxMarkerBody bytes.
func hopeless(n, endLen int) bool { return n >= maxMarkerBody+endLen }

// scanner finds the marker for one command in a stream delivered in chunks.
// Bytes before the marker go to sink as soon as they cannot be the start of
// the marker; at most len(start)-1 bytes are held back. The slice passed to
// sink is only valid during the call. Bytes after the
// marker are kept in Rest (capped) for the next command.
type scanner struct {
	start, end []byte
	sink       func([]byte)

	buf      []byte // held-back bytes, or the marker body once inMarker
	inMarker bool
	fed      int64 // bytes fed before Done

	// Done reports that the marker was seen; M and OK describe it.
	Done bool
	M    marker
	OK   bool
	// Rest holds bytes that followed the marker, at most maxRest.
	Rest []byte
}

// maxRest caps the bytes kept after a marker (output of background jobs
// racing the marker) for the next command.
const maxRest = 64 << 10

func newScanner(tok string, sink func([]byte)) *scanner {
	return &scanner{start: markerStart(tok), end: markerEnd(tok), sink: sink}
}

// Feed consumes p and reports whether the marker has been seen.
func (s *scanner) Feed(p []byte) bool {
	if s.Done {
		s.keepRest(p)
		return true
	}
	s.fed += int64(len(p))
	s.buf = append(s.buf, p...)
	if !s.inMarker {
		i := bytes.Index(s.buf, s.start)
		if i < 0 {
			keep := min(len(s.start)-1, len(s.buf))
			s.emit(len(s.buf) - keep)
			return false
		}
		s.emit(i)
		s.buf = s.buf[:copy(s.buf, s.buf[len(s.start):])]
		s.inMarker = true
	}
	j := bytes.Index(s.buf, s.end)
	switch {
	case j < 0 && !hopeless(len(s.buf), len(s.end)):
		return false
	case j < 0 || j > maxMarkerBody:
		s.M, s.OK = marker{Code: -1}, false
		s.buf = nil
	default:
		s.M, s.OK = parseBody(s.buf[:j])
		s.keepRest(s.buf[j+len(s.end):])
		s.buf = nil
	}
	s.Done = true
	return true
}

// Flush hands the held-back bytes to the sink once the stream has ended
// without a marker. A partial marker is dropped.
func (s *scanner) Flush() {
	if !s.Done && !s.inMarker {
		s.emit(len(s.buf))
	}
	s.buf = nil
}

// emit sends buf[:n] to the sink and keeps the remainder.
func (s *scanner) emit(n int) {
	if n > 0 {
		s.sink(s.buf[:n])
	}
	s.buf = s.buf[:copy(s.buf, s.buf[n:])]
}

func (s *scanner) keepRest(p []byte) {
	if room := maxRest - len(s.Rest); room > 0 {
		s.Rest = append(s.Rest, p[:min(room, len(p))]...)
	}
}
