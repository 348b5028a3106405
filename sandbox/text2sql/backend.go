package text2sql

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
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

// Provision reads apis.text2sql ({databases: {id: path}}, AgentFlow's db_paths
// too, query_timeout_s, max_answer_bytes, max_cell_bytes) and opens every
// database read-only. Errors name the JSON
// path of the setting at fault.
func (b *Backend) Provision(ctx context.Context, env sandbox.Env) error {
	paths, sources, err := databasePaths(env.Config)
	if err != nil {
		return err
	}
	b.timeout = DefaultQueryTimeout
	if d, ok, err := sandbox.SecondsSetting(env.Config, "apis.text2sql", "query_timeout_s", sandbox.MinSeconds, sandbox.MaxSeconds); err != nil {
		return err
	} else if ok {
		b.timeout = d
	}
	b.limits = Limits{MaxAnswerBytes: DefaultMaxAnswerBytes, MaxCellBytes: DefaultMaxCellBytes}
	for _, l := range []struct {
		key string
		dst *int
	}{{"max_answer_bytes", &b.limits.MaxAnswerBytes}, {"max_cell_bytes", &b.limits.MaxCellBytes}} {
		if n, ok, err := sandbox.IntSetting(env.Config, "apis.text2sql", l.key, 256, maxRowBytes); err != nil {
			return err
		} else if ok {
			*l.dst = int(n)
		}
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

// databasePaths merges apis.text2sql.databases and db_paths into id → path, and
// says which of the two sections each id came from.
func databasePaths(cfg map[string]any) (map[string]string, map[string]string, error) {
	paths := map[string]string{}
	sources := map[string]string{}
	for _, key := range []string{"databases", "db_paths"} {
		section := "apis.text2sql." + key
		v, ok := cfg[key]
		if !ok || v == nil {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, nil, &sandbox.ConfigError{Path: section, Reason: "must be an object of database id to SQLite file path"}
		}
		ids := make([]string, 0, len(m))
		for id := range m {
			ids = append(ids, id)
		}
		sort.Strings(ids) // the first error reported is the same on every start
		for _, id := range ids {
			path, ok := m[id].(string)
			if !ok || path == "" {
				return nil, nil, &sandbox.ConfigError{Path: section + "." + id, Reason: "must be the path of a SQLite file"}
			}
			if id == "" {
				return nil, nil, &sandbox.ConfigError{Path: section, Reason: "a database id is empty"}
			}
			if prev, dup := paths[id]; dup && prev != path {
				return nil, nil, &sandbox.ConfigError{Path: section + "." + id, Reason: fmt.Sprintf("also in %s.%s with another path", sources[id], id)}
			}
			paths[id] = path
			if _, seen := sources[id]; !seen {
				sources[id] = section
			}
		}
	}
	if len(paths) == 0 {
		return nil, nil, &sandbox.ConfigError{Path: "apis.text2sql.databases", Reason: "no databases configured (want {\"id\": \"path/to/file.sqlite\"})"}
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
