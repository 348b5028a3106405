package tables

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

func TestParquetJSONL(t *testing.T) {
	type row struct {
		QID  string   `parquet:"qid"`
		Gold string   `parquet:"gold"`
		Opts []string `parquet:"opts,list"`
		N    int64    `parquet:"n"`
	}
	var buf bytes.Buffer
	if err := parquet.Write(&buf, []row{{"a", "x", []string{"p", "q"}, 3}, {"b", "y", nil, 4}}); err != nil {
		t.Fatal(err)
	}
	got, err := ParquetJSONL(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"gold":"x","n":3,"opts":["p","q"],"qid":"a"}` + "\n" + `{"gold":"y","n":4,"opts":[],"qid":"b"}` + "\n"
	if string(got) != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if _, err := ParquetJSONL([]byte(`{"a": 1}`)); !errors.Is(err, ErrNotParquet) {
		t.Fatalf("json as parquet: %v", err)
	}
	if _, err := ParquetJSONL([]byte("PAR1garbage")); err == nil {
		t.Fatal("a torn Parquet file decoded")
	}
}

// TestMalformedParquetNeverPanics: every one-byte corruption of a valid
// file (parquet-go panics on many) reads as the file's rows or fails with
// ErrMalformed on one line; nothing panics (issue 23.7).
func TestMalformedParquetNeverPanics(t *testing.T) {
	type row struct {
		QID    string `parquet:"qid"`
		Prompt string `parquet:"prompt"`
		N      int64  `parquet:"n"`
	}
	var buf bytes.Buffer
	if err := parquet.Write(&buf, []row{{"a", "What is 2+2?", 4}, {"b", "x", 5}}); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	malformed := 0
	for i := 4; i < len(good)-4; i++ {
		for _, v := range []byte{0x00, 0x7f} {
			d := bytes.Clone(good)
			d[i] = v
			_, err := ParquetJSONL(d)
			if err == nil {
				continue
			}
			malformed++
			if !errors.Is(err, ErrMalformed) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("byte %d = %#x: %q, want ErrMalformed on one line", i, v, err)
			}
		}
	}
	if malformed == 0 {
		t.Fatal("no corruption was noticed")
	}
}
