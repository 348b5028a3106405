package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/isolation"
)

// Tool is one callable tool.
type Tool struct {
	// Name is the full name "resource:tool" (e.g. "text2sql:execute").
	Name        string
	Description string
	// Parameters is the JSON Schema (type object, properties, required) of
	// the params; the registry serves it at /api/v1/tools and agents offer it
	// to models. Required parameters missing from a call are answered 4003 by
	// the core before Run is called. Nil means no parameters.
	Parameters json.RawMessage
	// Stateless tools run without a session (text2sql, rag, doc, web).
	Stateless bool
	// Hidden tools are left out of /api/v1/tools unless include_hidden.
	Hidden bool
	// Run performs the call. It returns the envelope's data on success, a
	// *Error for a failure with an AgentFlow code, or any other error
	// (answered 5000). ctx carries the deadline of the call's timeout.
	Run func(ctx context.Context, c *Call) (any, error)
}

// ObjectSchema is the JSON Schema of a params object with these properties,
// for Tool.Parameters; "required" is left out when none are. It panics when
// props cannot be encoded, so give it static maps only.
func ObjectSchema(props map[string]any, required ...string) json.RawMessage {
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return b
}

// Session is one session of a caller's worker on a resource type.
type Session struct {
	ID           string
	Name         string
	WorkerID     string
	ResourceType string
	// Workspace is a per-session directory created by the core beneath the
	// service's data dir (sanitized names); the core removes it on destroy.
	Workspace string
	// MaxWorkspaceBytes is the most disk a copy into Workspace may take
	// (server.max_workspace_bytes; CopyWorkspace keeps to it); 0 is no
	// limit.
	MaxWorkspaceBytes int64
	// State is what the backend's Initialize returned.
	State any
}

// Backend is one registered module: a resource type (e.g. "bash") or an API
// group (e.g. "text2sql").
type Backend interface {
	// Tools lists the backend's tools. It is called once, after Provision.
	Tools() []Tool
}

// Env is what a backend gets at Provision.
type Env struct {
	// Config is the backend's section: resources.<name>.config or
	// apis.<name>, after ${VAR} expansion. Never nil.
	Config map[string]any
	// DataDir is a directory the backend owns beneath the service's data
	// dir (indexes, caches); it exists when Provision is called.
	DataDir string
	Logger  *slog.Logger
	// Hidden lists the paths the programs a backend starts must not see:
	// the service's data directory (every session's workspace, the
	// backends' data) and the host's (Options.Hidden). Pass it to
	// isolation.Wrap; a session's own workspace is bound back.
	Hidden []string
	// Policy is the service's isolation policy (Options.Isolation); use
	// Isolation to resolve it with the backend's own setting.
	Policy isolation.Policy

	// section is Config's JSON path in the file ("resources.bash.config");
	// warn collects the keys Decode finds that the backend does not read.
	// Both are set by the service; an Env built elsewhere warns of nothing.
	section string
	warn    func(...string)
}

// Isolation resolves how the backend isolates the programs of its
// sessions: kind is its section's "isolation" key as its config struct
// decoded it (declare it `json:"isolation" enum:"none,bwrap"`): "bwrap"
// (a private /tmp, no network) or "none" (the operator opting out by
// name), else, when "", the service's policy (bwrap with the network where
// bwrap can run, by default). The error is a *ConfigError naming the key.
func (e Env) Isolation(kind string) (configs.Isolation, error) {
	var run configs.Isolation
	switch kind {
	case "":
	case isolation.KindNone:
		return configs.Isolation{Kind: isolation.KindNone}, nil
	case isolation.KindBwrap:
		run.Kind = kind
	default:
		return run, &ConfigError{Path: "isolation", Reason: fmt.Sprintf("%q is not one of none, bwrap", kind)}
	}
	iso, err := e.Policy.Resolve(run)
	if err != nil {
		return iso, &ConfigError{Path: "isolation", Reason: err.Error(), Err: err}
	}
	return iso, nil
}

// Provisioner is implemented by backends that read their config section or
// set up state before serving. A config error names its JSON path: return a
// *ConfigError or an error whose text starts with the path.
type Provisioner interface {
	Provision(ctx context.Context, env Env) error
}

// WarmUpper is implemented by backends with a global load (an index build);
// the service warms them at start when the config asks, or on POST
// /api/v1/warmup. It must be safe to call more than once.
type WarmUpper interface {
	WarmUp(ctx context.Context) error
}

// Initializer is implemented by backends with per-session state; its result
// becomes Session.State. A failed Initialize leaves no session behind.
type Initializer interface {
	Initialize(ctx context.Context, s *Session, cfg map[string]any) (any, error)
}

// Cleaner is implemented by backends that release per-session state; it runs
// when a session is destroyed, expires or its worker disconnects. Its error
// is logged and does not keep the session.
type Cleaner interface {
	Cleanup(ctx context.Context, s *Session) error
}

// Shutdowner is implemented by backends holding global resources; it runs
// once when the service closes.
type Shutdowner interface {
	Shutdown(ctx context.Context) error
}

// ConfigError is a configuration error at a JSON path of the sandbox config,
// e.g. Path "apis.text2sql.databases.concert", Reason "file not found".
type ConfigError struct {
	Path   string
	Reason string
	// Err, when set, is the sentinel the reason ends with (errors.Is).
	Err error
}

func (e *ConfigError) Error() string { return e.Path + ": " + e.Reason }

// Unwrap returns Err.
func (e *ConfigError) Unwrap() error { return e.Err }

// Classify gives a setting error from a section's decode the backend's
// sentinel: a *ConfigError in err whose cause is not missing gets bad as
// its Err, so errors.Is(err, bad) holds for every wrong value while a
// missing key keeps its own sentinel. err is returned, changed in place.
func Classify(err, missing, bad error) error {
	var ce *ConfigError
	if errors.As(err, &ce) && !errors.Is(err, missing) {
		ce.Err = bad
	}
	return err
}

// SettingError returns a ConfigError at path (relative to the backend's
// section) whose reason is detail, when given, followed by err.
func SettingError(path string, err error, detail string) *ConfigError {
	reason := err.Error()
	if detail != "" {
		reason = detail + ": " + reason
	}
	return &ConfigError{Path: path, Reason: reason, Err: err}
}

// BackendInfo registers a backend.
type BackendInfo struct {
	// Name is the resource type or API group ("bash", "text2sql"); the
	// config section resources.<Name> or apis.<Name> enables it.
	Name string
	// New returns a fresh, unprovisioned backend. It must have no side
	// effects.
	New func() Backend
}

var (
	backendsMu sync.RWMutex
	backends   = map[string]BackendInfo{} // guarded by backendsMu
)

// RegisterBackend registers a backend; call it from init(). It panics on an
// empty name, a nil New or a duplicate name.
func RegisterBackend(info BackendInfo) {
	if info.Name == "" {
		panic("sandbox: RegisterBackend with an empty name")
	}
	if info.New == nil {
		panic(fmt.Sprintf("sandbox: RegisterBackend %q with a nil New", info.Name))
	}
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if _, dup := backends[info.Name]; dup {
		panic(fmt.Sprintf("sandbox: backend %q registered twice", info.Name))
	}
	backends[info.Name] = info
}

// LookupBackend returns the registered backend of name.
func LookupBackend(name string) (BackendInfo, bool) {
	backendsMu.RLock()
	defer backendsMu.RUnlock()
	info, ok := backends[name]
	return info, ok
}

// Backends returns the names of the registered backends, sorted.
func Backends() []string {
	backendsMu.RLock()
	defer backendsMu.RUnlock()
	names := make([]string, 0, len(backends))
	for n := range backends {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
