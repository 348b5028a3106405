package text2sql

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/flockrun/flock/sandbox"
)

// Name is the backend's API group: the config section apis.text2sql and the tools'
// prefix "text2sql:".
const Name = "text2sql"

// DefaultQueryTimeout bounds one query when the call itself carries no earlier
// deadline (apis.text2sql.query_timeout_s overrides it).
const DefaultQueryTimeout = 30 * time.Second

func init() {
	sandbox.RegisterBackend(sandbox.BackendInfo{
		Name: Name,
		New:  func() sandbox.Backend { return new(Backend) },
	})
}

// Backend is the text2sql API group: stateless tools over the configured SQLite
// databases, opened once at Provision and closed at Shutdown.
type Backend struct {
	dbs     *Databases
	timeout time.Duration
	limits  Limits
}

// config is apis.text2sql.
type config struct {
	// Databases maps a database id to its SQLite file; DBPaths is
	// AgentFlow's name for the same map (both may be given, without an id
	// naming two files).
	Databases map[string]string `json:"databases"`
	DBPaths   map[string]string `json:"db_paths"`
	// QueryTimeout bounds one query (DefaultQueryTimeout when absent).
	QueryTimeout *sandbox.Seconds `json:"query_timeout_s"`
	// MaxAnswerBytes and MaxCellBytes bound an answer and one of its cells
	// (DefaultMaxAnswerBytes, DefaultMaxCellBytes when absent).
	MaxAnswerBytes *sandbox.Count `json:"max_answer_bytes" min:"256" max:"67108864"` // maxRowBytes
	MaxCellBytes   *sandbox.Count `json:"max_cell_bytes" min:"256" max:"67108864"`   // maxRowBytes
}

// section is the backend's JSON path in the sandbox config, named in errors.
const section = "apis." + Name

// Provision reads apis.text2sql ({databases: {id: path}}, AgentFlow's db_paths
// too, query_timeout_s, max_answer_bytes, max_cell_bytes) and opens every
// database read-only. Errors name the JSON
// path of the setting at fault.
func (b *Backend) Provision(ctx context.Context, env sandbox.Env) error {
	var c config
	if err := env.Decode(&c); err != nil {
		return sandbox.Within(section, err)
	}
	paths, sources, err := c.databasePaths()
	if err != nil {
		return err
	}
	b.timeout = DefaultQueryTimeout
	if c.QueryTimeout != nil {
		b.timeout = c.QueryTimeout.Duration()
	}
	b.limits = Limits{MaxAnswerBytes: DefaultMaxAnswerBytes, MaxCellBytes: DefaultMaxCellBytes}
	if c.MaxAnswerBytes != nil {
		b.limits.MaxAnswerBytes = int(c.MaxAnswerBytes.Int())
	}
	if c.MaxCellBytes != nil {
		b.limits.MaxCellBytes = int(c.MaxCellBytes.Int())
	}
	dbs, err := Open(ctx, paths)
	if err != nil {
		var pe *PathError
		if errors.As(err, &pe) {
			return &sandbox.ConfigError{Path: sources[pe.ID] + "." + pe.ID, Reason: pe.Err.Error()}
		}
		return err
	}
	b.dbs = dbs
	if env.Logger != nil {
		env.Logger.Info("text2sql databases opened", "databases", dbs.IDs())
	}
	return nil
}

// databasePaths merges databases and db_paths into id → path, and says
// which of the two sections each id came from.
func (c *config) databasePaths() (map[string]string, map[string]string, error) {
	paths := map[string]string{}
	sources := map[string]string{}
	for _, s := range []struct {
		key string
		m   map[string]string
	}{{"databases", c.Databases}, {"db_paths", c.DBPaths}} {
		path := section + "." + s.key
		for _, id := range slices.Sorted(maps.Keys(s.m)) { // the first error reported is the same on every start
			p := s.m[id]
			switch prev, dup := paths[id]; {
			case id == "":
				return nil, nil, &sandbox.ConfigError{Path: path, Reason: "a database id is empty"}
			case p == "":
				return nil, nil, &sandbox.ConfigError{Path: path + "." + id, Reason: "must be the path of a SQLite file"}
			case dup && prev != p:
				return nil, nil, &sandbox.ConfigError{Path: path + "." + id, Reason: fmt.Sprintf("also in %s.%s with another path", sources[id], id)}
			}
			paths[id] = p
			if _, seen := sources[id]; !seen {
				sources[id] = path
			}
		}
	}
	if len(paths) == 0 {
		return nil, nil, &sandbox.ConfigError{Path: section + ".databases", Reason: "no databases configured (want {\"id\": \"path/to/file.sqlite\"})"}
	}
	return paths, sources, nil
}

// Shutdown closes the databases.
func (b *Backend) Shutdown(context.Context) error {
	if b.dbs == nil {
		return nil
	}
	return b.dbs.Close()
}

// Data is the data of every text2sql envelope, as AgentFlow's BaseApiTool builds it:
// the tool's result and the inputs it was called with.
type Data struct {
	Result any            `json:"result"`
	Inputs map[string]any `json:"inputs"`
}

// Tools returns list_databases, get_schema and execute, all stateless.
func (b *Backend) Tools() []sandbox.Tool {
	ids := "none"
	if b.dbs != nil && len(b.dbs.ids) > 0 {
		ids = strings.Join(b.dbs.ids, ", ")
		if len(b.dbs.ids) > 20 {
			ids = strings.Join(b.dbs.ids[:20], ", ") + ", … (see text2sql:list_databases)"
		}
	}
	dbID := map[string]any{"type": "string", "description": "The database id (one of: " + ids + ")."}
	return []sandbox.Tool{
		{
			Name:        Name + ":list_databases",
			Description: "List the ids of the SQLite databases you can query.",
			Parameters:  sandbox.ObjectSchema(map[string]any{}),
			Stateless:   true,
			Run:         b.listDatabases,
		},
		{
			Name:        Name + ":get_schema",
			Description: "Show the tables of a database: columns (name, type, primary key) and foreign keys.",
			Parameters: sandbox.ObjectSchema(map[string]any{
				"db_id": dbID,
				"table_names": map[string]any{"type": "array", "items": map[string]any{"type": "string"},
					"description": "Only these tables (default: all); unknown names are skipped."},
			}, "db_id"),
			Stateless: true,
			Run:       b.getSchema,
		},
		{
			Name: Name + ":execute",
			Description: fmt.Sprintf("Run one read-only SQL query (SQLite dialect; SELECT, WITH or PRAGMA) on a database "+
				"and return its columns and at most %d rows; truncated is true when there were more.", MaxRows),
			Parameters: sandbox.ObjectSchema(map[string]any{
				"db_id": dbID,
				"query": map[string]any{"type": "string", "description": "One SELECT, WITH or PRAGMA statement."},
			}, "db_id", "query"),
			Stateless: true,
			Run:       b.execute,
		},
	}
}

func (b *Backend) listDatabases(_ context.Context, c *sandbox.Call) (any, error) {
	if b.dbs == nil {
		return nil, notProvisioned()
	}
	return &Data{Result: map[string]any{"databases": b.dbs.IDs()}, Inputs: inputs(c)}, nil
}

func (b *Backend) getSchema(ctx context.Context, c *sandbox.Call) (any, error) {
	if b.dbs == nil {
		return nil, notProvisioned()
	}
	id, err := c.String("db_id")
	if err != nil {
		return nil, err
	}
	var tables []string
	if c.Has("table_names") {
		if tables, err = c.Strings("table_names"); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	s, err := b.dbs.Schema(ctx, id, tables)
	if err != nil {
		return nil, b.toolError(id, err)
	}
	return &Data{Result: s, Inputs: inputs(c)}, nil
}

func (b *Backend) execute(ctx context.Context, c *sandbox.Call) (any, error) {
	if b.dbs == nil {
		return nil, notProvisioned()
	}
	id, err := c.String("db_id")
	if err != nil {
		return nil, err
	}
	query, err := c.String("query")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	res, err := b.dbs.Execute(ctx, id, query, b.limits)
	if err != nil {
		return nil, b.toolError(id, err)
	}
	return &Data{Result: res, Inputs: inputs(c)}, nil
}

// toolError maps the engine's errors to AgentFlow codes. A bad query (rejected
// statement, SQL error) and an unknown db_id are the caller's input: 4000, where
// AgentFlow answers an SQL error with 5000 "Internal system error". A query past its
// deadline is 5006.
func (b *Backend) toolError(id string, err error) error {
	switch {
	case errors.Is(err, ErrUnknownDatabase):
		return &sandbox.Error{Code: sandbox.CodeInvalidInput, Message: err.Error(),
			Data: map[string]any{"db_id": id, "databases": b.dbs.IDs()}}
	case errors.Is(err, ErrRejected), errors.Is(err, ErrQuery):
		return &sandbox.Error{Code: sandbox.CodeInvalidInput, Message: err.Error()}
	case errors.Is(err, ErrTimeout):
		return &sandbox.Error{Code: sandbox.CodeTimeout, Message: err.Error()}
	default:
		return &sandbox.Error{Code: sandbox.CodeExecutionError, Message: "text2sql: " + err.Error()}
	}
}

func notProvisioned() error {
	return sandbox.Errorf(sandbox.CodeBackendNotInitialized, "text2sql: the backend is not provisioned")
}

// inputs is AgentFlow's data.inputs: the params the tool was called with, plus the
// worker_id its executor injected, bounded (sandbox.Echo).
func inputs(c *sandbox.Call) map[string]any {
	in := make(map[string]any, len(c.Params)+1)
	maps.Copy(in, c.Params)
	if _, ok := in["worker_id"]; !ok && c.WorkerID != "" {
		in["worker_id"] = c.WorkerID
	}
	return sandbox.Echo(in).(map[string]any)
}

var (
	_ sandbox.Backend     = (*Backend)(nil)
	_ sandbox.Provisioner = (*Backend)(nil)
	_ sandbox.Shutdowner  = (*Backend)(nil)
)
