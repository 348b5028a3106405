package pyinterp

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
)

// maxFrame bounds one protocol frame in either direction. Requests carry the
// code of one cell; replies carry a traceback the driver already clips to
// 1 MiB, so a larger reply means the stream is corrupt.
const maxFrame = 64 << 20

// request is a frame sent to the driver.
type request struct {
	Op   string `json:"op"` // "exec" or "interrupt"
	ID   uint64 `json:"id"`
	Code string `json:"code,omitempty"`
}

// reply is a frame sent by the driver: the hello after start (Op "hello")
// or the end of one cell.
type reply struct {
	Op      string `json:"op,omitempty"`
	Version string `json:"version,omitempty"`
	PID     int    `json:"pid,omitempty"`

	ID    uint64 `json:"id"`
	Error string `json:"error"`
	// Interrupted reports that the driver's SIGINT handler raised
	// KeyboardInterrupt in the cell (our interrupt arrived in time).
	Interrupted bool `json:"interrupted"`
}

// appendFrame appends v as a frame: a 4-byte big-endian length and the JSON
// encoding of v.
func appendFrame(dst []byte, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	if len(body) > maxFrame {
		return dst, fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, len(body))
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)))
	return append(dst, body...), nil
}

// readFrame reads one frame body of at most limit bytes. It returns io.EOF
// only when r ends cleanly before a frame, io.ErrUnexpectedEOF when it ends
// inside one, and ErrFrameTooLarge for an oversized length, before reading
// or allocating the body.
func readFrame(r io.Reader, limit int) ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if uint64(n) > uint64(limit) {
		return nil, fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

// readReply reads and decodes one reply frame.
func readReply(r io.Reader) (reply, error) {
	body, err := readFrame(r, maxFrame)
	if err != nil {
		return reply{}, err
	}
	var rep reply
	if err := json.Unmarshal(body, &rep); err != nil {
		return reply{}, fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	return rep, nil
}
