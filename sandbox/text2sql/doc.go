// Package text2sql is the sandbox's text2sql API group: stateless tools that let an
// agent read configured SQLite databases, with AgentFlow's names, parameters and
// result shapes (wire §5):
//
//	text2sql:list_databases {}                       → {result: {databases: [id…]}, inputs}
//	text2sql:get_schema     {db_id★, table_names?}   → {result: {db_id, schema: {table: {columns: [{name, type, pk}], foreign_keys: [{to_table, from_col, to_col}]}}}, inputs}
//	text2sql:execute        {db_id★, query★}         → {result: {columns, rows, row_count, truncated, truncation?}, inputs}
//
// inputs echoes the call's params plus worker_id, as AgentFlow's BaseApiTool does, bounded
// by sandbox.Echo (a long string is cut, saying how much).
//
// # Configuration
//
// The section apis.text2sql of the sandbox config:
//
//	"apis": {"text2sql": {
//	    "databases": {"concert": "configs/sandbox/data/concert.sqlite"},
//	    "query_timeout_s": 30,
//	    "max_answer_bytes": 1048576,
//	    "max_cell_bytes": 65536
//	}}
//
// databases maps an id to a SQLite file; AgentFlow's db_paths is read too (the two
// are merged; one id with two paths is an error). Relative paths are taken from the
// working directory. Every file is opened at Provision, so a missing or unreadable
// file fails start-up with its path named (apis.text2sql.databases.<id>: file not
// found); at least one database is required. query_timeout_s (default 30) bounds a
// query when the call's own timeout is later; max_answer_bytes (1 MiB) and
// max_cell_bytes (64 KiB) bound an answer (below).
//
// # Read-only, three times over
//
// A query must be one statement starting with SELECT, WITH or PRAGMA after comments
// and whitespace; anything else, or a second statement after a ';', is refused with
// code 4000 before SQLite sees it. Every connection is opened with mode=ro (SQLite
// refuses writes and never creates the file), the query_only pragma and defensive
// mode, and carries an authorizer that allows only reads, functions (not
// load_extension) and pragmas that read (no "= value", an argument only for
// table_info and its kin): ATTACH, DETACH, writes through a CTE, DDL, transactions
// and pragma changes are denied when the statement is prepared.
//
// # Results and errors
//
// execute returns at most MaxRows (100) rows and at most max_answer_bytes of JSON
// rows: reading stops, and the query with it, before the row that would pass
// either. A text or blob cell longer than max_cell_bytes keeps its head (whole
// characters) and ends with "…[N bytes cut]". truncated is true when any of these
// cut the answer (AgentFlow sets it whenever exactly 100 rows come back), and
// truncation then says which, naming the setting. So that neither SQLite nor the
// driver builds a huge row before it can be cut, each value of a query with n
// result columns may hold at most max(max_cell_bytes, 64 MiB / n) bytes
// (SQLITE_LIMIT_LENGTH on the query's connection): a longer one, computed or
// stored, fails the query with 4000 naming the limit. Values are JSON's:
// integers, floats, text, null; a blob is its text when it is UTF-8, else x'hex';
// ±Inf is "Infinity"/"-Infinity"; DATE/DATETIME/TIMESTAMP text comes back in
// SQLite's form. get_schema skips unknown table names, as AgentFlow does, and
// matches names case-insensitively; a foreign key declared without a column
// references the target's primary key, which to_col names.
//
// Codes: a rejected statement, an SQL error (syntax, no such table or column) and an
// unknown db_id are 4000 with a message naming the problem (the unknown-db error
// lists the known ids, also in data). AgentFlow answers an SQL error 5000 "Internal
// system error"; flock treats it as the caller's input, so the client sees HTTP 400
// and the model reads what is wrong with its query. A query past its deadline is
// interrupted and answered 5006; a missing parameter is the core's 4003, a
// parameter of the wrong type 4004; anything else 5000.
//
// The bundled sample configs/sandbox/data/concert.sqlite (a few KB, after Spider's
// concert_singer) is built from concert.sql next to it; TestSampleDatabase checks it
// and rebuilds it with -update.
package text2sql
