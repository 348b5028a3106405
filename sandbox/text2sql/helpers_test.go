package text2sql

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sampleSQL and sampleDB are the bundled sample database and the SQL it is built from.
var (
	sampleSQL = filepath.Join("..", "..", "configs", "sandbox", "data", "concert.sql")
	sampleDB  = filepath.Join("..", "..", "configs", "sandbox", "data", "concert.sqlite")
)

// buildDatabase writes a new SQLite file at dst from the SQL script text, read-write
// through the package-level driver (not this package's read-only one).
func buildDatabase(tb testing.TB, script, dst string) {
	tb.Helper()
	os.Remove(dst)
	w, err := sql.Open("sqlite", dst)
	if err != nil {
		tb.Fatal(err)
	}
	defer w.Close()
	w.SetMaxOpenConns(1)
	if _, err := w.Exec(script); err != nil {
		tb.Fatalf("build %s: %v", dst, err)
	}
	if _, err := w.Exec("VACUUM"); err != nil {
		tb.Fatal(err)
	}
}

// newDatabase builds a database from script in a temp dir and returns its path.
func newDatabase(tb testing.TB, script string) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "test.sqlite")
	buildDatabase(tb, script, p)
	return p
}

// openSet opens paths with Open and closes them at the end of the test.
func openSet(tb testing.TB, paths map[string]string) *Databases {
	tb.Helper()
	d, err := Open(context.Background(), paths)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { d.Close() })
	return d
}

// dump is the schema and every row of the database at path, as text, for comparing
// two files by content.
func dump(tb testing.TB, path string) string {
	tb.Helper()
	r, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	var b strings.Builder
	rows, err := r.Query("SELECT type, name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name")
	if err != nil {
		tb.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var typ, name, text string
		if err := rows.Scan(&typ, &name, &text); err != nil {
			tb.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s %s\n", typ, name, text)
		if typ == "table" {
			tables = append(tables, name)
		}
	}
	rows.Close()
	for _, t := range tables {
		rows, err := r.Query(`SELECT * FROM "` + t + `" ORDER BY 1, 2`)
		if err != nil {
			tb.Fatal(err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				tb.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %v\n", t, vals)
		}
		rows.Close()
	}
	return b.String()
}

func fileHash(tb testing.TB, path string) [32]byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return sha256.Sum256(b)
}
