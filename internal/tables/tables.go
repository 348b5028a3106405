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

	"github.com/parquet-go/parquet-go"
)

// ErrNotParquet is returned for data without the Parquet magic bytes.
var ErrNotParquet = errors.New("not a Parquet file")

// IsParquet reports whether data starts with the Parquet magic bytes.
func IsParquet(data []byte) bool { return bytes.HasPrefix(data, []byte("PAR1")) }

// ParquetJSONL returns the rows of a Parquet file as JSON lines: one object
// per row, keyed by column name (nested groups and lists as JSON objects
// and arrays).
func ParquetJSONL(data []byte) ([]byte, error) {
	if !IsParquet(data) {
		return nil, ErrNotParquet
	}
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("parquet: %w", err)
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
			return nil, fmt.Errorf("parquet: row %d: %w", n, err)
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
