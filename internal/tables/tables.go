// Package tables turns tabular data files into JSON lines, one object per
// row, for readers that take JSONL (the rollout's benchmark loader reads
// Parquet through it, by way of the files handler's read_file "as":
// "jsonl").
package tables

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/parquet-go/parquet-go"
)

var (
	// ErrNotParquet is returned for data without the Parquet magic bytes.
	ErrNotParquet = errors.New("not a Parquet file")
	// ErrMalformed is returned for a Parquet file the reader cannot
	// decode: corrupt metadata, pages or values.
	ErrMalformed = errors.New("malformed Parquet file")
)

// IsParquet reports whether data starts with the Parquet magic bytes.
func IsParquet(data []byte) bool { return bytes.HasPrefix(data, []byte("PAR1")) }

// ParquetJSONL returns the rows of a Parquet file as JSON lines: one object
// per row, keyed by column name (nested groups and lists as JSON objects
// and arrays). A file that cannot be decoded is ErrMalformed, whether the
// reader reports it or panics on it (parquet-go indexes corrupt lengths
// and offsets without checking them): one line saying what failed, never
// a stack.
func ParquetJSONL(data []byte) (out []byte, err error) {
	if !IsParquet(data) {
		return nil, ErrNotParquet
	}
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("%w: the reader failed on its corrupt data (%s)", ErrMalformed, oneLine(fmt.Sprint(p)))
		}
	}()
	return parquetJSONL(data)
}

func parquetJSONL(data []byte) ([]byte, error) {
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrMalformed, oneLine(err.Error()))
	}
	r := parquet.NewReader(f)
	defer r.Close()
	var out bytes.Buffer
	for n := 1; ; n++ {
		row := map[string]any{}
		if err := r.Read(&row); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("%w: row %d: %s", ErrMalformed, n, oneLine(err.Error()))
		}
		b, err := json.Marshal(row)
		if err != nil {
			return nil, fmt.Errorf("parquet: row %d: %w", n, err)
		}
		out.Write(b)
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}

// oneLine keeps the first line of s, at most 300 bytes of it.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}
