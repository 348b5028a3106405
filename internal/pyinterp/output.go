package pyinterp

import (
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/flockrun/flock/internal/elide"
)

// readOutput returns the cell's output from f, capped like
// elide.Middle(content, limit) but reading only the head and the tail
// when the file is larger than limit, so a cell printing gigabytes costs
// the server O(limit) memory.
func readOutput(f *os.File, limit int) (string, bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	size := fi.Size()
	if limit <= 0 || size <= int64(limit) {
		if size > maxUncapped {
			size = maxUncapped
		}
		b := make([]byte, size)
		n, err := f.ReadAt(b, 0)
		if err != nil && err != io.EOF {
			return "", false, err
		}
		s, cut := elide.Middle(string(b[:n]), limit)
		return s, cut, nil
	}
	// Read a few bytes more on each side than Truncate keeps, so its
	// adjustments to UTF-8 boundaries see the same bytes.
	const slack = utf8.UTFMax
	head := limit / 2
	tail := limit - head
	hb := make([]byte, min(int64(head+slack), size))
	if _, err := f.ReadAt(hb, 0); err != nil && err != io.EOF {
		return "", false, err
	}
	tb := make([]byte, min(int64(tail+slack), size))
	tOff := size - int64(len(tb))
	if _, err := f.ReadAt(tb, tOff); err != nil && err != io.EOF {
		return "", false, err
	}
	for head > 0 && !utf8.RuneStart(hb[head]) {
		head--
	}
	start := len(tb) - tail // index in tb of the tail's first byte
	for start < len(tb) && !utf8.RuneStart(tb[start]) {
		start++
	}
	elided := tOff + int64(start) - int64(head)
	return fmt.Sprintf("%s\n[... %d bytes elided ...]\n%s", hb[:head], elided, tb[start:]), true, nil
}

// maxUncapped bounds the output read when no limit is set.
const maxUncapped = 64 << 20
