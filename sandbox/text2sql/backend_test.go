package text2sql

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flockrun/flock/sandbox"
)

// provision returns a provisioned Backend over cfg (apis.text2sql), shut down at the
// end of the test.
func provision(tb testing.TB, cfg map[string]any) *Backend {
	tb.Helper()
	b := new(Backend)
	err := b.Provision(context.Background(), sandbox.Env{Config: cfg, DataDir: tb.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { b.Shutdown(context.Background()) })
	return b
}

func tool(tb testing.TB, b *Backend, name string) sandbox.Tool {
	tb.Helper()
	for _, t := range b.Tools() {
		if t.Name == name {
			return t
		}
	}
	tb.Fatalf("no tool %s", name)
	return sandbox.Tool{}
}

// run calls tool name with params as a worker would and returns the data as JSON.
func run(tb testing.TB, b *Backend, name string, params map[string]any) (string, error) {
	tb.Helper()
	if params == nil {
		params = map[string]any{}
	}
	// Params arrive decoded from JSON: round-trip them so types are JSON's.
	raw, _ := json.Marshal(params)
	var decoded map[string]any
	json.Unmarshal(raw, &decoded)
	data, err := tool(tb, b, name).Run(context.Background(), &sandbox.Call{WorkerID: "w1", Params: decoded})
	if err != nil {
		return "", err
	}
	out, err := json.Marshal(data)
	if err != nil {
		tb.Fatal(err)
	}
	return string(out), nil
}

func toolCode(tb testing.TB, err error) *sandbox.Error {
	tb.Helper()
	var se *sandbox.Error
	if !errors.As(err, &se) {
		tb.Fatalf("error %v (%T) is not a *sandbox.Error", err, err)
	}
	return se
}

func TestTools(t *testing.T) {
	b := provision(t, map[string]any{"databases": map[string]any{"concert": sampleDB}})
	tools := b.Tools()
	if len(tools) != 3 {
		t.Fatalf("%d tools", len(tools))
	}
	for _, tl := range tools {
		if !tl.Stateless || !strings.HasPrefix(tl.Name, "text2sql:") || tl.Run == nil {
			t.Fatalf("tool %+v", tl)
		}
		var s struct {
			Type       string         `json:"type"`
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
		}
		if err := json.Unmarshal(tl.Parameters, &s); err != nil || s.Type != "object" || s.Properties == nil {
			t.Fatalf("%s parameters %s: %v", tl.Name, tl.Parameters, err)
		}
	}
	if !strings.Contains(string(tool(t, b, "text2sql:execute").Parameters), `"required":["db_id","query"]`) {
		t.Fatalf("execute schema %s", tool(t, b, "text2sql:execute").Parameters)
	}
	if !strings.Contains(string(tool(t, b, "text2sql:get_schema").Parameters), "one of: concert") {
		t.Fatal("db_id's description does not name the databases")
	}
}

func TestListDatabasesTool(t *testing.T) {
	b := provision(t, map[string]any{
		"databases": map[string]any{"concert": sampleDB},
		"db_paths":  map[string]any{"again": sampleDB, "concert": sampleDB},
	})
	got, err := run(t, b, "text2sql:list_databases", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"result":{"databases":["again","concert"]},"inputs":{"worker_id":"w1"}}`; got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

func TestGetSchemaTool(t *testing.T) {
	b := provision(t, map[string]any{"databases": map[string]any{"concert": sampleDB}})
	got, err := run(t, b, "text2sql:get_schema", map[string]any{"db_id": "concert", "table_names": []string{"concert", "nope"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"result":{"db_id":"concert","schema":{"concert":{"columns":[` +
		`{"name":"concert_id","type":"INTEGER","pk":true},{"name":"name","type":"TEXT","pk":false},` +
		`{"name":"theme","type":"TEXT","pk":false},{"name":"stadium_id","type":"INTEGER","pk":false},` +
		`{"name":"year","type":"INTEGER","pk":false}],` +
		`"foreign_keys":[{"to_table":"stadium","from_col":"stadium_id","to_col":"stadium_id"}]}}},` +
		`"inputs":{"db_id":"concert","table_names":["concert","nope"],"worker_id":"w1"}}`
	if got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	// table_names may be one string (AgentFlow's str|[str] helpers accept it).
	got, err = run(t, b, "text2sql:get_schema", map[string]any{"db_id": "concert", "table_names": "singer_in_concert"})
	if err != nil || !strings.Contains(got, `"foreign_keys":[{"to_table":"concert","from_col":"concert_id","to_col":"concert_id"},{"to_table":"singer","from_col":"singer_id","to_col":"singer_id"}]`) {
		t.Fatalf("singer_in_concert: %s, %v", got, err)
	}
	_, err = run(t, b, "text2sql:get_schema", map[string]any{"db_id": "concert", "table_names": 7})
	if se := toolCode(t, err); se.Code != sandbox.CodeInvalidParameterType {
		t.Fatalf("table_names 7: %+v", se)
	}
}

func TestExecuteTool(t *testing.T) {
	b := provision(t, map[string]any{"databases": map[string]any{"concert": sampleDB}})
	got, err := run(t, b, "text2sql:execute", map[string]any{"db_id": "concert",
		"query": "SELECT name, capacity FROM stadium WHERE capacity > 40000 ORDER BY capacity DESC"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"result":{"columns":["name","capacity"],"rows":[["Glass Dome",55000],["Harbour Arena",42000]],"row_count":2,"truncated":false},` +
		`"inputs":{"db_id":"concert","query":"SELECT name, capacity FROM stadium WHERE capacity \u003e 40000 ORDER BY capacity DESC","worker_id":"w1"}}`
	if got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}

	got, err = run(t, b, "text2sql:execute", map[string]any{"db_id": "concert",
		"query": "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 1000) SELECT i FROM c"})
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Result Result `json:"result"`
	}
	json.Unmarshal([]byte(got), &d)
	if len(d.Result.Rows) != MaxRows || d.Result.RowCount != MaxRows || !d.Result.Truncated {
		t.Fatalf("1000 rows: %d rows, row_count %d, truncated %v", len(d.Result.Rows), d.Result.RowCount, d.Result.Truncated)
	}
}

// TestExecuteToolErrors checks the code and message of every failure of execute.
func TestExecuteToolErrors(t *testing.T) {
	b := provision(t, map[string]any{"databases": map[string]any{"concert": sampleDB}, "query_timeout_s": json.Number("0.2")})
	tests := []struct {
		name   string
		params map[string]any
		code   int
		want   string
	}{
		{"insert", map[string]any{"db_id": "concert", "query": "INSERT INTO singer VALUES (9, 'x', 'y', 'z', 1)"}, 4000, "only SELECT, WITH and PRAGMA statements are allowed, not INSERT"},
		{"update", map[string]any{"db_id": "concert", "query": "UPDATE singer SET age = 0"}, 4000, "not UPDATE"},
		{"attach", map[string]any{"db_id": "concert", "query": "ATTACH ':memory:' AS m"}, 4000, "not ATTACH"},
		{"select then drop", map[string]any{"db_id": "concert", "query": "SELECT 1; DROP TABLE singer"}, 4000, "only one statement is allowed"},
		{"cte delete", map[string]any{"db_id": "concert", "query": "WITH x AS (SELECT 1) DELETE FROM singer"}, 4000, "read-only"},
		{"pragma write", map[string]any{"db_id": "concert", "query": "PRAGMA query_only = 0"}, 4000, "read-only"},
		{"no such table", map[string]any{"db_id": "concert", "query": "SELECT * FROM nope"}, 4000, "no such table: nope"},
		{"unknown db", map[string]any{"db_id": "spider", "query": "SELECT 1"}, 4000, `unknown database "spider" (known: concert)`},
		{"missing db_id", map[string]any{"query": "SELECT 1"}, 4003, "db_id"},
		{"missing query", map[string]any{"db_id": "concert"}, 4003, "query"},
		{"query not a string", map[string]any{"db_id": "concert", "query": 1}, 4004, "query"},
		{"timeout", map[string]any{"db_id": "concert", "query": "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) SELECT count(*) FROM c"}, 5006, "timed out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := run(t, b, "text2sql:execute", tt.params)
			if err == nil {
				t.Fatalf("succeeded: %s", data)
			}
			se := toolCode(t, err)
			if se.Code != tt.code || !strings.Contains(se.Message, tt.want) {
				t.Fatalf("code %d %q, want %d containing %q", se.Code, se.Message, tt.code, tt.want)
			}
		})
	}
	// The unknown-db error carries the known ids as data.
	_, err := run(t, b, "text2sql:get_schema", map[string]any{"db_id": "spider"})
	se := toolCode(t, err)
	if b, _ := json.Marshal(se.Data); se.Code != 4000 || string(b) != `{"databases":["concert"],"db_id":"spider"}` {
		t.Fatalf("get_schema unknown db: %d %s", se.Code, b)
	}
}

func TestProvisionErrors(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.sqlite")
	os.WriteFile(junk, []byte(strings.Repeat("not sqlite ", 20)), 0o644)
	tests := []struct {
		name string
		cfg  map[string]any
		path string
		want string
	}{
		{"missing file", map[string]any{"databases": map[string]any{"concert": sampleDB, "gone": filepath.Join(dir, "gone.sqlite")}},
			"apis.text2sql.databases.gone", "file not found"},
		{"missing file in db_paths", map[string]any{"db_paths": map[string]any{"old": filepath.Join(dir, "old.db")}},
			"apis.text2sql.db_paths.old", "file not found"},
		{"not sqlite", map[string]any{"databases": map[string]any{"j": junk}}, "apis.text2sql.databases.j", "not a readable SQLite database"},
		{"no databases", map[string]any{}, "apis.text2sql.databases", "no databases configured"},
		{"databases not an object", map[string]any{"databases": []any{"a.db"}}, "apis.text2sql.databases", "want an object, got JSON array"},
		{"path not a string", map[string]any{"databases": map[string]any{"a": 1.0}}, "apis.text2sql.databases.a", "want a string, got JSON number"},
		{"empty path", map[string]any{"databases": map[string]any{"a": ""}}, "apis.text2sql.databases.a", "must be the path"},
		{"conflicting ids", map[string]any{"databases": map[string]any{"a": sampleDB}, "db_paths": map[string]any{"a": junk}},
			"apis.text2sql.db_paths.a", "another path"},
		{"bad timeout", map[string]any{"databases": map[string]any{"a": sampleDB}, "query_timeout_s": "soon"},
			"apis.text2sql.query_timeout_s", "want a number of seconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := new(Backend)
			err := b.Provision(context.Background(), sandbox.Env{Config: tt.cfg, DataDir: t.TempDir()})
			var ce *sandbox.ConfigError
			if !errors.As(err, &ce) || ce.Path != tt.path || !strings.Contains(ce.Reason, tt.want) {
				t.Fatalf("%v, want a ConfigError at %s containing %q", err, tt.path, tt.want)
			}
		})
	}
}

func TestRegistered(t *testing.T) {
	info, ok := sandbox.LookupBackend(Name)
	if !ok {
		t.Fatal("text2sql is not registered")
	}
	if _, ok := info.New().(*Backend); !ok {
		t.Fatalf("New returns %T", info.New())
	}
}

// TestOfflineConfig provisions the text2sql section of the README's offline example
// config from the repository root, as `flock sandbox --config
// configs/sandbox/offline.json` does, and queries the bundled database.
func TestOfflineConfig(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "configs", "sandbox", "offline.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var cfg struct {
		APIs map[string]map[string]any `json:"apis"`
	}
	if err := dec.Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join("..", ".."))
	b := provision(t, cfg.APIs[Name])
	got, err := run(t, b, "text2sql:execute", map[string]any{"db_id": "concert", "query": "SELECT count(*) FROM concert WHERE year = 2022"})
	if err != nil || !strings.Contains(got, `"rows":[[2]]`) {
		t.Fatalf("%s, %v", got, err)
	}
}
