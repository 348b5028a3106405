package text2sql

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Result is what execute answers: AgentFlow's {columns, rows, row_count, truncated}.
// Rows hold JSON-ready values (int64, float64, string, nil). RowCount is len(Rows).
// Truncated is true when the answer is not the whole result: the query had more
// than MaxRows rows (AgentFlow sets it whenever exactly 100 rows come back, even
// when there are no more), the rows reached Limits.MaxAnswerBytes, or a cell was
// cut at Limits.MaxCellBytes; Truncation then says which, naming the setting.
type Result struct {
	Columns    []string `json:"columns"`
	Rows       [][]any  `json:"rows"`
	RowCount   int      `json:"row_count"`
	Truncated  bool     `json:"truncated"`
	Truncation string   `json:"truncation,omitempty"`
}

// Default bounds of an execute answer (apis.text2sql.max_answer_bytes and
// max_cell_bytes set them).
const (
	DefaultMaxAnswerBytes = 1 << 20
	DefaultMaxCellBytes   = 64 << 10
	// maxRowBytes bounds what SQLite may build for one row: each value of a
	// query with n result columns may be at most max(MaxCellBytes+1,
	// maxRowBytes/n) bytes (SQLITE_LIMIT_LENGTH on the query's
	// connection), so that neither SQLite nor the driver's copy of a row
	// holds more than about this much; a longer value fails the query.
	maxRowBytes = 64 << 20
)

// Limits bound the answer of Execute. Zero fields take the defaults.
type Limits struct {
	// MaxAnswerBytes bounds the JSON size of the answer's rows: reading
	// stops before the row that would pass it.
	MaxAnswerBytes int
	// MaxCellBytes bounds the JSON size of one cell: a longer text or blob
	// is cut (on a character boundary) and ends with "…[N bytes cut]".
	MaxCellBytes int
}

func (l Limits) withDefaults() Limits {
	if l.MaxAnswerBytes <= 0 {
		l.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	if l.MaxCellBytes <= 0 {
		l.MaxCellBytes = DefaultMaxCellBytes
	}
	return l
}

// Execute runs one read-only query on database id and returns at most MaxRows rows
// and lim.MaxAnswerBytes of them, each cell cut at lim.MaxCellBytes; the query is
// stopped where the answer ends. A query that is not a single SELECT, WITH or PRAGMA
// statement, or that tries to write or attach, fails with ErrRejected; an SQL error
// (a value longer than a row may hold included) fails with ErrQuery; an unknown id
// with ErrUnknownDatabase; a query past ctx's deadline with ErrTimeout.
func (d *Databases) Execute(ctx context.Context, id, query string, lim Limits) (*Result, error) {
	lim = lim.withDefaults()
	one, err := d.get(id)
	if err != nil {
		return nil, err
	}
	if err := checkStatement(query); err != nil {
		return nil, err
	}
	conn, err := one.sql.Conn(ctx)
	if err != nil {
		return nil, classify(ctx, err)
	}
	defer conn.Close()
	valueMax, restore, err := limitValues(ctx, conn, query, lim)
	if err != nil {
		return nil, err
	}
	defer restore()
	rows, err := conn.QueryContext(ctx, query)
	if err != nil {
		return nil, classify(ctx, tooBig(err, valueMax))
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, classify(ctx, err)
	}
	res := &Result{Columns: cols, Rows: [][]any{}}
	if res.Columns == nil {
		res.Columns = []string{}
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	size, cut := 0, 0
	var stop string
	for rows.Next() {
		if len(res.Rows) == MaxRows {
			stop = fmt.Sprintf("the query has more than %d rows", MaxRows)
			break
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, classify(ctx, tooBig(err, valueMax))
		}
		row := make([]any, len(vals))
		rowSize := 2 + max(len(vals)-1, 0) // [ , ]
		for i, v := range vals {
			var n int
			var was bool
			row[i], n, was = cell(jsonValue(v), lim.MaxCellBytes)
			vals[i] = nil // let the driver's copy go
			rowSize += n
			if was {
				cut++
			}
		}
		if size+rowSize+1 > lim.MaxAnswerBytes {
			stop = fmt.Sprintf("the rows reached %d bytes (max_answer_bytes)", lim.MaxAnswerBytes)
			break
		}
		size += rowSize + 1
		res.Rows = append(res.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(ctx, tooBig(err, valueMax))
	}
	res.RowCount = len(res.Rows)
	var notes []string
	if stop != "" {
		notes = append(notes, fmt.Sprintf("stopped after %d rows: %s", res.RowCount, stop))
	}
	if cut > 0 {
		notes = append(notes, fmt.Sprintf("%d cells cut at %d bytes (max_cell_bytes)", cut, lim.MaxCellBytes))
	}
	if len(notes) > 0 {
		res.Truncated, res.Truncation = true, strings.Join(notes, "; ")
	}
	return res, nil
}

// limitValues sets SQLITE_LIMIT_LENGTH on conn for query, whose result
// columns it counts first (a prepare, not a step), and returns the limit
// and how to put the connection's own back.
func limitValues(ctx context.Context, conn *sql.Conn, query string, lim Limits) (int, func(), error) {
	ncols := 0
	err := conn.Raw(func(dc any) error {
		ci, ok := dc.(interface {
			ColumnInfo(string) ([]sqlite.ColumnInfo, error)
		})
		if !ok {
			return fmt.Errorf("the sqlite driver cannot describe a query (%T)", dc)
		}
		info, err := ci.ColumnInfo(query)
		ncols = len(info)
		return err
	})
	if err != nil {
		return 0, nil, classify(ctx, err)
	}
	valueMax := max(lim.MaxCellBytes+1, maxRowBytes/max(ncols, 1))
	prev, err := sqlite.Limit(conn, sqlite3.SQLITE_LIMIT_LENGTH, valueMax)
	if err != nil {
		return 0, nil, err
	}
	return valueMax, func() { _, _ = sqlite.Limit(conn, sqlite3.SQLITE_LIMIT_LENGTH, prev) }, nil
}

// tooBig words SQLite's "string or blob too big" with the limit that was hit.
func tooBig(err error, valueMax int) error {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_TOOBIG {
		return fmt.Errorf("%w: a value of the query is longer than %d bytes, the most one value may hold here (the values of one row may total about %d bytes): select less, e.g. substr(column, 1, n)",
			ErrQuery, valueMax, maxRowBytes)
	}
	return err
}

// cell cuts v, a JSON-ready value, to at most max bytes of JSON: a longer
// string keeps its head (whole characters) followed by "…[N bytes cut]".
// It returns the value, its JSON size and whether it was cut.
func cell(v any, maxBytes int) (any, int, bool) {
	switch x := v.(type) {
	case string:
		n := jsonLen(x)
		if n <= maxBytes {
			return x, n, false
		}
		keep := cutAt(x, maxBytes-32)
		out := strings.Clone(x[:keep]) + fmt.Sprintf("…[%d bytes cut]", len(x)-keep)
		return out, jsonLen(out), true
	case nil:
		return nil, 4, false
	case int64:
		return x, len(strconv.FormatInt(x, 10)), false
	case float64:
		return x, 24, false
	}
	return v, 24, false
}

// cutAt returns the length of the longest prefix of s made of whole
// characters whose JSON form fits in budget bytes (quotes included).
func cutAt(s string, budget int) int {
	n := 2
	for i, r := range s {
		w := runeJSONLen(r, s[i:])
		if n+w > budget {
			return i
		}
		n += w
	}
	return len(s)
}

// jsonLen is the length of s encoded as a JSON string by encoding/json
// (HTML-safe escaping, invalid UTF-8 replaced).
func jsonLen(s string) int {
	n := 2
	for i, r := range s {
		n += runeJSONLen(r, s[i:])
	}
	return n
}

func runeJSONLen(r rune, at string) int {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t' || r == '\b' || r == '\f':
		return 2
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
		return 6
	case r == utf8.RuneError:
		if _, w := utf8.DecodeRuneInString(at); w == 1 {
			return 6 // \ufffd
		}
		return 3
	}
	return utf8.RuneLen(r)
}

// jsonValue is v as a value encoding/json writes the way Python's json writes what
// sqlite3 returns: text as string, blobs as text when they are UTF-8 (else x'hex'),
// ±Inf as "Infinity"/"-Infinity" strings (JSON has no infinities), and the times the
// driver parses out of DATE/DATETIME/TIMESTAMP columns back as SQLite's text form.
func jsonValue(v any) any {
	switch x := v.(type) {
	case []byte:
		if utf8.Valid(x) {
			return string(x)
		}
		return "x'" + hex.EncodeToString(x) + "'"
	case float64:
		if math.IsInf(x, 1) {
			return "Infinity"
		}
		if math.IsInf(x, -1) {
			return "-Infinity"
		}
		if math.IsNaN(x) {
			return nil
		}
		return x
	case time.Time:
		return sqliteTime(x)
	default:
		return v
	}
}

// sqliteTime formats t as SQLite's date functions do: "YYYY-MM-DD" for a bare UTC
// date, else "YYYY-MM-DD HH:MM:SS" with fractional seconds when present and the
// offset when not UTC.
func sqliteTime(t time.Time) string {
	_, off := t.Zone()
	if off == 0 && t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0 {
		return t.Format(time.DateOnly)
	}
	s := t.Format("2006-01-02 15:04:05.999999999")
	if off != 0 {
		s += t.Format("-07:00")
	}
	return s
}

// Schema is what get_schema answers: AgentFlow's {db_id, schema:{table:{columns,
// foreign_keys}}}.
type Schema struct {
	DBID   string                 `json:"db_id"`
	Tables map[string]TableSchema `json:"schema"`
}

// TableSchema is one table's columns and foreign keys.
type TableSchema struct {
	Columns     []Column     `json:"columns"`
	ForeignKeys []ForeignKey `json:"foreign_keys"`
}

// Column is one column of a table; PK is true for the columns of the primary key.
type Column struct {
	Name string `json:"name"`
	Type string `json:"type"`
	PK   bool   `json:"pk"`
}

// ForeignKey is one column of a foreign key: FromCol of this table references
// ToTable.ToCol (the referenced primary key when the declaration names no column).
type ForeignKey struct {
	ToTable string `json:"to_table"`
	FromCol string `json:"from_col"`
	ToCol   string `json:"to_col"`
}

// Schema returns the tables of database id (all user tables, or those of tables;
// names match case-insensitively as in SQLite, unknown names are skipped as
// AgentFlow does).
func (d *Databases) Schema(ctx context.Context, id string, tables []string) (*Schema, error) {
	one, err := d.get(id)
	if err != nil {
		return nil, err
	}
	all, err := one.tableNames(ctx)
	if err != nil {
		return nil, err
	}
	names := all
	if len(tables) > 0 {
		byLower := make(map[string]string, len(all))
		for _, n := range all {
			byLower[lower(n)] = n
		}
		names = nil
		seen := map[string]bool{}
		for _, t := range tables {
			if n, ok := byLower[lower(t)]; ok && !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	s := &Schema{DBID: id, Tables: make(map[string]TableSchema, len(names))}
	for _, n := range names {
		ts, err := one.table(ctx, n)
		if err != nil {
			return nil, err
		}
		s.Tables[n] = ts
	}
	return s, nil
}

func (one *db) tableNames(ctx context.Context) ([]string, error) {
	rows, err := one.sql.QueryContext(ctx,
		"SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
	if err != nil {
		return nil, classify(ctx, err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, classify(ctx, err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(ctx, err)
	}
	return names, nil
}

func (one *db) table(ctx context.Context, name string) (TableSchema, error) {
	ts := TableSchema{Columns: []Column{}, ForeignKeys: []ForeignKey{}}
	rows, err := one.sql.QueryContext(ctx, "SELECT name, type, pk FROM pragma_table_info(?) ORDER BY cid", name)
	if err != nil {
		return ts, classify(ctx, err)
	}
	for rows.Next() {
		var c Column
		var pk int
		if err := rows.Scan(&c.Name, &c.Type, &pk); err != nil {
			rows.Close()
			return ts, classify(ctx, err)
		}
		c.PK = pk > 0
		ts.Columns = append(ts.Columns, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return ts, classify(ctx, err)
	}

	rows, err = one.sql.QueryContext(ctx,
		`SELECT "table", "from", coalesce("to", '') FROM pragma_foreign_key_list(?) ORDER BY id DESC, seq`, name)
	if err != nil {
		return ts, classify(ctx, err)
	}
	for rows.Next() {
		var fk ForeignKey
		if err := rows.Scan(&fk.ToTable, &fk.FromCol, &fk.ToCol); err != nil {
			rows.Close()
			return ts, classify(ctx, err)
		}
		ts.ForeignKeys = append(ts.ForeignKeys, fk)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return ts, classify(ctx, err)
	}
	// SQLite numbers foreign keys from the last declared; ORDER BY id DESC is the
	// declaration order.
	for i, fk := range ts.ForeignKeys {
		if fk.ToCol != "" {
			continue
		}
		col, err := one.primaryKey(ctx, fk.ToTable)
		if err != nil {
			return ts, err
		}
		ts.ForeignKeys[i].ToCol = col
	}
	return ts, nil
}

// primaryKey is the first primary-key column of table, "" when it has none (or the
// table does not exist).
func (one *db) primaryKey(ctx context.Context, table string) (string, error) {
	var col string
	err := one.sql.QueryRowContext(ctx,
		"SELECT coalesce((SELECT name FROM pragma_table_info(?) WHERE pk = 1), '')", table).Scan(&col)
	if err != nil {
		return "", fmt.Errorf("primary key of %s: %w", table, classify(ctx, err))
	}
	return col, nil
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
