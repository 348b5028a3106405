package text2sql

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rebuild configs/sandbox/data/concert.sqlite from concert.sql")

// TestSampleDatabase checks that the bundled concert.sqlite holds exactly what
// concert.sql builds (with -update it rebuilds the file) and stays a few KB.
func TestSampleDatabase(t *testing.T) {
	script, err := os.ReadFile(sampleSQL)
	if err != nil {
		t.Fatal(err)
	}
	built := filepath.Join(t.TempDir(), "concert.sqlite")
	buildDatabase(t, string(script), built)
	if *update {
		b, err := os.ReadFile(built)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(sampleDB, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := dump(t, sampleDB), dump(t, built); got != want {
		t.Fatalf("%s is stale; rebuild it with go test ./sandbox/text2sql -run TestSampleDatabase -update\ncommitted:\n%s\nbuilt:\n%s", sampleDB, got, want)
	}
	fi, err := os.Stat(sampleDB)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 16<<10 {
		t.Fatalf("%s is %d bytes; keep the sample small", sampleDB, fi.Size())
	}
}
