package text2sql

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestCheckStatement(t *testing.T) {
	tests := []struct {
		name  string
		query string
		ok    bool
		want  string // in the error when !ok
	}{
		{name: "select", query: "SELECT 1", ok: true},
		{name: "lower case", query: "select name from singer", ok: true},
		{name: "with", query: "WITH x AS (SELECT 1) SELECT * FROM x", ok: true},
		{name: "pragma", query: "PRAGMA table_info(singer)", ok: true},
		{name: "leading comments", query: "-- a comment\n /* block */ SELECT 1", ok: true},
		{name: "trailing semicolons", query: "SELECT 1;  ;\n-- bye\n", ok: true},
		{name: "semicolon in string", query: "SELECT 'a; DROP TABLE singer'", ok: true},
		{name: "semicolon in quoted ident", query: `SELECT 1 AS "x;y", 2 AS [a;b], 3 AS ` + "`c;d`", ok: true},
		{name: "doubled quote", query: "SELECT 'it''s; fine'", ok: true},
		{name: "empty", query: "", want: "query is empty"},
		{name: "only comments", query: "-- nothing\n/* here */", want: "query is empty"},
		{name: "insert", query: "INSERT INTO singer VALUES (9, 'x', 'y', 'z', 1)", want: "not INSERT"},
		{name: "update", query: "update singer set age = 1", want: "not UPDATE"},
		{name: "delete", query: "DELETE FROM singer", want: "not DELETE"},
		{name: "drop", query: "DROP TABLE singer", want: "not DROP"},
		{name: "attach", query: "ATTACH DATABASE '/tmp/x.db' AS x", want: "not ATTACH"},
		{name: "comment hides verb", query: "/* SELECT */ DELETE FROM singer", want: "not DELETE"},
		{name: "second statement", query: "SELECT 1; DROP TABLE singer", want: "only one statement"},
		{name: "second after comment", query: "SELECT 1; -- x\n ATTACH 'y' AS y", want: "only one statement"},
		{name: "punctuation", query: "(SELECT 1)", want: "not ("},
		{name: "unterminated", query: "SELECT 'abc", want: "unterminated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkStatement(tt.query)
			if tt.ok {
				if err != nil {
					t.Fatalf("checkStatement(%q) = %v, want nil", tt.query, err)
				}
				return
			}
			if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("checkStatement(%q) = %v, want ErrRejected containing %q", tt.query, err, tt.want)
			}
		})
	}
}

func FuzzCheckStatement(f *testing.F) {
	for _, s := range []string{"SELECT 1", "SELECT 1; DROP TABLE x", "-- c\nWITH a AS (SELECT 1) SELECT 1",
		"'", "/*", "PRAGMA x", "[", "SELECT \"a;\" ;;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if err := checkStatement(q); err != nil {
			if !errors.Is(err, ErrRejected) {
				t.Fatalf("error %v does not wrap ErrRejected", err)
			}
			return
		}
		i := skipSpaceAndComments(q, 0)
		verb := strings.ToUpper(q[i:min(len(q), i+6)])
		if !strings.HasPrefix(verb, "SELECT") && !strings.HasPrefix(verb, "WITH") && !strings.HasPrefix(verb, "PRAGMA") {
			t.Fatalf("accepted %q", q)
		}
	})
}

func TestExecute(t *testing.T) {
	d := openSet(t, map[string]string{"concert": sampleDB})
	res, err := d.Execute(context.Background(), "concert",
		"SELECT s.name, count(*) AS n FROM singer s JOIN singer_in_concert sc USING (singer_id) GROUP BY s.singer_id ORDER BY n DESC, s.name LIMIT 3", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := &Result{
		Columns:  []string{"name", "n"},
		Rows:     [][]any{{"Ana Duarte", int64(2)}, {"Kari Lunde", int64(2)}, {"Mia Holt", int64(2)}},
		RowCount: 3,
	}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("got %+v, want %+v", res, want)
	}
	// A query with no rows answers empty arrays, not null.
	res, err = d.Execute(context.Background(), "concert", "SELECT name FROM singer WHERE age > 100", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	if string(b) != `{"columns":["name"],"rows":[],"row_count":0,"truncated":false}` {
		t.Fatalf("empty result encodes as %s", b)
	}
	// PRAGMA reads are allowed.
	res, err = d.Execute(context.Background(), "concert", "PRAGMA table_info(concert)", Limits{})
	if err != nil || res.RowCount != 5 {
		t.Fatalf("PRAGMA table_info: %+v, %v", res, err)
	}
}

// TestExecuteRejectsWrites tries every kind of write and escape; each is refused
// with ErrRejected (or an SQL error for a write SQLite itself refuses) and the file
// is byte-for-byte unchanged afterwards.
func TestExecuteRejectsWrites(t *testing.T) {
	script, err := os.ReadFile(sampleSQL)
	if err != nil {
		t.Fatal(err)
	}
	path := newDatabase(t, string(script))
	before := fileHash(t, path)
	d := openSet(t, map[string]string{"c": path})
	attached := filepath.Join(t.TempDir(), "attached.db")
	tests := []struct {
		name  string
		query string
	}{
		{"insert", "INSERT INTO singer VALUES (9, 'x', 'y', 'z', 1)"},
		{"update", "UPDATE singer SET age = 0"},
		{"delete", "DELETE FROM singer"},
		{"drop", "DROP TABLE singer"},
		{"create", "CREATE TABLE x (a)"},
		{"attach", "ATTACH DATABASE '" + attached + "' AS x"},
		{"attach memory", "ATTACH ':memory:' AS m"},
		{"select then drop", "SELECT 1; DROP TABLE singer"},
		{"select then attach", "SELECT 1;ATTACH ':memory:' AS m"},
		{"cte delete", "WITH x AS (SELECT 1) DELETE FROM singer"},
		{"cte insert", "WITH x AS (SELECT 1) INSERT INTO singer SELECT 9, 'x', 'y', 'z', 1 FROM x"},
		{"cte update", "WITH x AS (SELECT 1) UPDATE singer SET age = 0"},
		{"pragma query_only off", "PRAGMA query_only = 0"},
		{"pragma query_only call", "PRAGMA query_only(0)"},
		{"pragma journal_mode", "PRAGMA journal_mode = WAL"},
		{"pragma user_version", "PRAGMA user_version = 7"},
		{"pragma writable_schema", "PRAGMA writable_schema = ON"},
		{"load_extension", "SELECT load_extension('/tmp/x.so')"},
		{"vacuum into", "VACUUM INTO '" + attached + "'"},
		{"begin", "BEGIN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := d.Execute(context.Background(), "c", tt.query, Limits{})
			if err == nil {
				t.Fatalf("%q succeeded: %+v", tt.query, res)
			}
			if !errors.Is(err, ErrRejected) && !errors.Is(err, ErrQuery) {
				t.Fatalf("%q: %v, want ErrRejected or ErrQuery", tt.query, err)
			}
		})
	}
	// query_only is still on for every pooled connection, and the data is intact.
	for range 8 {
		res, err := d.Execute(context.Background(), "c", "SELECT count(*) FROM singer", Limits{})
		if err != nil || res.Rows[0][0] != int64(6) {
			t.Fatalf("after the attempts: %+v, %v", res, err)
		}
	}
	if _, err := os.Stat(attached); err == nil {
		t.Fatalf("%s was created", attached)
	}
	d.Close()
	if fileHash(t, path) != before {
		t.Fatal("the database file changed")
	}
}

func TestExecuteTruncates(t *testing.T) {
	d := openSet(t, map[string]string{"concert": sampleDB})
	tests := []struct {
		n         int
		rows      int
		truncated bool
	}{
		{n: 99, rows: 99},
		{n: 100, rows: 100},
		{n: 101, rows: 100, truncated: true},
		{n: 100000, rows: 100, truncated: true},
	}
	for _, tt := range tests {
		q := "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < " +
			itoa(tt.n) + ") SELECT i FROM c"
		res, err := d.Execute(context.Background(), "concert", q, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) != tt.rows || res.RowCount != tt.rows || res.Truncated != tt.truncated {
			t.Fatalf("n=%d: %d rows, row_count %d, truncated %v; want %d, %v", tt.n, len(res.Rows), res.RowCount, res.Truncated, tt.rows, tt.truncated)
		}
		if res.Rows[len(res.Rows)-1][0] != int64(tt.rows) {
			t.Fatalf("n=%d: last row %v", tt.n, res.Rows[len(res.Rows)-1])
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestExecuteErrors(t *testing.T) {
	d := openSet(t, map[string]string{"concert": sampleDB, "other": sampleDB})
	tests := []struct {
		name  string
		db    string
		query string
		is    error
		want  string
	}{
		{"unknown db", "nope", "SELECT 1", ErrUnknownDatabase, `unknown database "nope" (known: concert, other)`},
		{"no such table", "concert", "SELECT * FROM nope", ErrQuery, "no such table: nope"},
		{"no such column", "concert", "SELECT nope FROM singer", ErrQuery, "no such column: nope"},
		{"syntax", "concert", "SELECT FROM WHERE", ErrQuery, "syntax error"},
		{"not select", "concert", "REPLACE INTO singer VALUES (1)", ErrRejected, "only SELECT, WITH and PRAGMA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := d.Execute(context.Background(), tt.db, tt.query, Limits{})
			if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("%v, want %v containing %q", err, tt.is, tt.want)
			}
		})
	}
}

// TestExecuteTimeout runs a query that never ends under a short deadline: it is
// interrupted with ErrTimeout and the database answers the next query.
func TestExecuteTimeout(t *testing.T) {
	d := openSet(t, map[string]string{"concert": sampleDB})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := d.Execute(ctx, "concert", "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) SELECT count(*) FROM c", Limits{})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("%v, want ErrTimeout", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("interrupted after %v", el)
	}
	if _, err := d.Execute(context.Background(), "concert", "SELECT 1", Limits{}); err != nil {
		t.Fatal(err)
	}
}

func TestExecuteValues(t *testing.T) {
	path := newDatabase(t, `CREATE TABLE v (d DATE, ts DATETIME, b BLOB, t TEXT);
INSERT INTO v VALUES ('2024-03-01', '2024-03-01 12:30:05', x'00ff', 'plain');
INSERT INTO v VALUES (NULL, NULL, CAST('text' AS BLOB), NULL);`)
	d := openSet(t, map[string]string{"v": path})
	res, err := d.Execute(context.Background(), "v", "SELECT d, ts, b, t, 1e999, -1e999, 2.5 FROM v ORDER BY rowid", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{
		{"2024-03-01", "2024-03-01 12:30:05", "x'00ff'", "plain", "Infinity", "-Infinity", 2.5},
		{nil, nil, "text", nil, "Infinity", "-Infinity", 2.5},
	}
	if !reflect.DeepEqual(res.Rows, want) {
		t.Fatalf("rows %#v, want %#v", res.Rows, want)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Fatal(err)
	}
}

func TestSchema(t *testing.T) {
	d := openSet(t, map[string]string{"concert": sampleDB})
	s, err := d.Schema(context.Background(), "concert", nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range s.Tables {
		names = append(names, n)
	}
	if len(names) != 4 || s.DBID != "concert" {
		t.Fatalf("schema of %s has tables %v", s.DBID, names)
	}
	sic := s.Tables["singer_in_concert"]
	wantCols := []Column{{"concert_id", "INTEGER", true}, {"singer_id", "INTEGER", true}}
	wantFKs := []ForeignKey{
		{ToTable: "concert", FromCol: "concert_id", ToCol: "concert_id"},
		{ToTable: "singer", FromCol: "singer_id", ToCol: "singer_id"}, // REFERENCES singer: the pk
	}
	if !reflect.DeepEqual(sic.Columns, wantCols) || !reflect.DeepEqual(sic.ForeignKeys, wantFKs) {
		t.Fatalf("singer_in_concert: %+v", sic)
	}
	concert := s.Tables["concert"]
	if concert.Columns[0] != (Column{"concert_id", "INTEGER", true}) || concert.Columns[1].PK ||
		!reflect.DeepEqual(concert.ForeignKeys, []ForeignKey{{"stadium", "stadium_id", "stadium_id"}}) {
		t.Fatalf("concert: %+v", concert)
	}
	b, _ := json.Marshal(s.Tables["stadium"])
	if !strings.Contains(string(b), `"foreign_keys":[]`) {
		t.Fatalf("a table without foreign keys encodes as %s", b)
	}

	// A filter picks tables case-insensitively and skips unknown names.
	s, err = d.Schema(context.Background(), "concert", []string{"SINGER", "nope", "singer"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Tables) != 1 || len(s.Tables["singer"].Columns) != 5 {
		t.Fatalf("filtered schema: %+v", s.Tables)
	}
	if _, err := d.Schema(context.Background(), "nope", nil); !errors.Is(err, ErrUnknownDatabase) {
		t.Fatalf("unknown db: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.sqlite")
	if err := os.WriteFile(junk, []byte("this is not a database, just text that is long enough to be read"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		paths map[string]string
		id    string
		want  string
	}{
		{"missing", map[string]string{"concert": sampleDB, "gone": filepath.Join(dir, "gone.sqlite")}, "gone", "file not found"},
		{"directory", map[string]string{"d": dir}, "d", "not a regular file"},
		{"junk", map[string]string{"j": junk}, "j", "not a readable SQLite database"},
		{"empty path", map[string]string{"e": ""}, "e", "empty path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(context.Background(), tt.paths)
			var pe *PathError
			if !errors.As(err, &pe) || pe.ID != tt.id || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("%v, want a PathError for %s containing %q", err, tt.id, tt.want)
			}
		})
	}
	// Opening never creates a missing file.
	if _, err := os.Stat(filepath.Join(dir, "gone.sqlite")); err == nil {
		t.Fatal("Open created the missing file")
	}
}

// TestAuthorizer runs writes and escapes on a pooled connection directly, past the
// statement check: the authorizer, mode=ro and query_only refuse each of them.
func TestAuthorizer(t *testing.T) {
	script, err := os.ReadFile(sampleSQL)
	if err != nil {
		t.Fatal(err)
	}
	path := newDatabase(t, string(script))
	before := fileHash(t, path)
	d := openSet(t, map[string]string{"c": path})
	conn := d.dbs["c"].sql
	for _, q := range []string{
		"ATTACH ':memory:' AS m",
		"ATTACH '" + filepath.Join(t.TempDir(), "x.db") + "' AS x",
		"INSERT INTO singer VALUES (9, 'x', 'y', 'z', 1)",
		"DELETE FROM singer",
		"CREATE TEMP TABLE t (a)",
		"PRAGMA query_only = 0",
		"PRAGMA query_only(0)",
		"BEGIN IMMEDIATE",
		"SAVEPOINT a",
		"SELECT 1; DELETE FROM singer",
	} {
		if _, err := conn.Exec(q); err == nil {
			t.Errorf("%q succeeded on a raw connection", q)
		}
	}
	var n int
	if err := conn.QueryRow("SELECT count(*) FROM singer").Scan(&n); err != nil || n != 6 {
		t.Fatalf("count %d, %v", n, err)
	}
	d.Close()
	if fileHash(t, path) != before {
		t.Fatal("the database file changed")
	}
}
