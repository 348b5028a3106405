package tables

import (
	"bytes"
	"errors"
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
