package text2sql

import (
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"time"
	"unicode/utf8"
)

// Result is what execute answers: AgentFlow's {columns, rows, row_count, truncated}.
// Rows hold JSON-ready values (int64, float64, string, nil). RowCount is len(Rows).
// Truncated is true only when the query had more than MaxRows rows (AgentFlow sets it
// whenever exactly 100 rows come back, even when there are no more).
type Result struct {
	Columns   []string `json:"columns"`
	Rows      [][]any  `json:"rows"`
	RowCount  int      `json:"row_count"`
	Truncated bool     `json:"truncated"`
}

// Execute runs one read-only query on database id and returns at most MaxRows rows.
// A query that is not a single SELECT, WITH or PRAGMA statement, or that tries to
// write or attach, fails with ErrRejected; an SQL error fails with ErrQuery; an
// unknown id with ErrUnknownDatabase; a query past ctx's deadline with ErrTimeout.
func (d *Databases) Execute(ctx context.Context, id, query string) (*Result, error) {
	one, err := d.get(id)
	if err != nil {
		return nil, err
	}
	if err := checkStatement(query); err != nil {
		return nil, err
	}
	rows, err := one.sql.QueryContext(ctx, query)
	if err != nil {
		return nil, classify(ctx, err)
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
	for rows.Next() {
		if len(res.Rows) == MaxRows {
			res.Truncated = true
			break
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, classify(ctx, err)
		}
		row := make([]any, len(vals))
		for i, v := range vals {
			row[i] = jsonValue(v)
		}
		res.Rows = append(res.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(ctx, err)
	}
	res.RowCount = len(res.Rows)
	return res, nil
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
