package pyinterp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

func frameBytes(body string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

var frameTests = []struct {
	name    string
	in      []byte
	limit   int
	want    []string // bodies read before the error
	wantErr error
}{
	{"empty stream", nil, 100, nil, io.EOF},
	{"one frame", frameBytes(`{"id":1}`), 100, []string{`{"id":1}`}, io.EOF},
	{"two frames", append(frameBytes(`{"id":1}`), frameBytes(`{"id":2,"error":"x"}`)...), 100,
		[]string{`{"id":1}`, `{"id":2,"error":"x"}`}, io.EOF},
	{"empty body", frameBytes(""), 100, []string{""}, io.EOF},
	{"short header", []byte{0, 0}, 100, nil, io.ErrUnexpectedEOF},
	{"short body", frameBytes(`{"id":1}`)[:6], 100, nil, io.ErrUnexpectedEOF},
	{"header only", []byte{0, 0, 0, 3}, 100, nil, io.ErrUnexpectedEOF},
	{"too large", frameBytes(`{"id":123456}`), 4, nil, ErrFrameTooLarge},
	{"huge length", []byte{0xff, 0xff, 0xff, 0xff, 'x'}, maxFrame, nil, ErrFrameTooLarge},
}

func TestReadFrame(t *testing.T) {
	for _, tt := range frameTests {
		t.Run(tt.name, func(t *testing.T) {
			r := bytes.NewReader(tt.in)
			var got []string
			var err error
			for {
				var b []byte
				if b, err = readFrame(r, tt.limit); err != nil {
					break
				}
				got = append(got, string(b))
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("frames = %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("frames = %q, want %q", got, tt.want)
				}
			}
		})
	}
}

func TestFrameRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		req  request
	}{
		{"exec", request{Op: "exec", ID: 7, Code: "print('hi')\n"}},
		{"interrupt", request{Op: "interrupt", ID: 1 << 60}},
		{"unicode and controls", request{Op: "exec", ID: 2, Code: "s = '€\x00\n\u2028'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := appendFrame(nil, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := readReply(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if rep.ID != tt.req.ID {
				t.Fatalf("id = %d, want %d", rep.ID, tt.req.ID)
			}
		})
	}
}

// FuzzReadReply checks that arbitrary driver output never panics the
// decoder, never yields a frame over the limit, and that valid frames
// decode to what was framed.
func FuzzReadReply(f *testing.F) {
	for _, tt := range frameTests {
		f.Add(tt.in)
	}
	f.Add(frameBytes(`{"id":3,"error":"Traceback","interrupted":true}`))
	f.Add(frameBytes(`{"op":"hello","version":"3.11.7","pid":42}`))
	f.Add(frameBytes(`not json`))
	f.Fuzz(func(t *testing.T, in []byte) {
		const limit = 1 << 16
		r := bytes.NewReader(in)
		consumed := 0
		for {
			body, err := readFrame(r, limit)
			if err != nil {
				if err == io.EOF && consumed != len(in) {
					t.Fatalf("clean EOF after %d of %d bytes", consumed, len(in))
				}
				break
			}
			if len(body) > limit {
				t.Fatalf("frame of %d bytes over the limit", len(body))
			}
			if !bytes.Equal(body, in[consumed+4:consumed+4+len(body)]) {
				t.Fatal("body is not the bytes after the header")
			}
			consumed += 4 + len(body)
		}
		// Every byte string decodes to a reply or an error, without panic.
		for r := bytes.NewReader(in); ; {
			if _, err := readReply(r); err != nil {
				break
			}
		}
		// Re-framing a reply body reproduces it.
		rep := reply{ID: uint64(len(in)), Error: string(in)}
		b, err := appendFrame(nil, rep)
		if err != nil {
			t.Fatal(err)
		}
		got, err := readReply(bytes.NewReader(b))
		if err != nil || got.ID != rep.ID {
			t.Fatalf("round trip: %+v, %v", got, err)
		}
	})
}
