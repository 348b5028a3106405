package configs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// Server is the configuration of a flock server process.
//
// It is built from command-line flags, optionally on top of a server
// settings file (flock serve --config FILE, JSON or YAML, keys as tagged
// below); flags given explicitly win over the file.
type Server struct {
	// Addr is the listen address (default 127.0.0.1:46397).
	Addr string `json:"addr,omitempty"`
	// DataDir holds flock.db and the runs' work directories (default ./flock-data).
	DataDir string `json:"data,omitempty"`
	// Mode is "live" (default) or "simulated"; simulated routes every
	// generate to the built-in simulated provider.
	Mode string `json:"mode,omitempty"`
	// PluginDirs are searched for *.so phase plugins at start-up.
	PluginDirs []string `json:"plugin_dirs,omitempty"`
	// WorkflowDirs are searched for *.yaml/*.yml/*.json workflow files.
	WorkflowDirs []string `json:"workflow_dirs,omitempty"`
	// AuthToken, when set, is required as a bearer token on every route but
	// /health. Required when Addr is not a loopback address. A settings
	// file names an environment variable instead (auth_token_env): tokens
	// do not belong in files.
	AuthToken string `json:"-"`
	// AuthTokenEnv names the environment variable holding AuthToken.
	AuthTokenEnv string `json:"auth_token_env,omitempty"`
	// MaxBodyBytes caps request bodies (default 100 MB).
	MaxBodyBytes int64 `json:"max_body_bytes,omitempty"`
	// Concurrency caps concurrent operations per kind across all runs
	// (defaults in DefaultConcurrency).
	Concurrency map[string]int `json:"concurrency,omitempty"`

	// AllowedOrigins lists the browser origins (scheme://host[:port]) that
	// may call the API besides the server's own. A request carrying any
	// other Origin header is refused with 403.
	AllowedOrigins []string `json:"allowed_origins,omitempty"`
	// PublicNames lists the host names (or addresses) the server answers to
	// besides loopback names and addresses. A request whose Host header is
	// anything else is refused on every route (DNS-rebinding defence).
	PublicNames []string `json:"public_names,omitempty"`
	// ReadRoots lists directories that runs may read files from besides
	// their own work directory (read_file, react's system_prompt_file,
	// rollout's data_path, the scripted provider's script). Writes stay
	// beneath the work directory.
	ReadRoots []string `json:"read_roots,omitempty"`
	// Models holds the operator's limits per model, keyed by model name or
	// by base URL. They protect a shared endpoint: a run's own settings may
	// only tighten them for itself.
	Models map[string]ModelLimits `json:"models,omitempty"`
}

// ModelLimits are the operator's server-wide limits for one model
// endpoint; 0 means unlimited.
type ModelLimits struct {
	RequestsPerMinute int `json:"requests_per_minute,omitempty"`
	MaxConcurrency    int `json:"max_concurrency,omitempty"`
}

// LoadServerFile reads a server settings file (.json, .yaml or .yml).
// Unknown keys are errors, naming the key.
func LoadServerFile(path string) (Server, error) {
	var s Server
	b, err := os.ReadFile(path)
	if err != nil {
		return s, fmt.Errorf("read server settings: %w", err)
	}
	doc, err := ToJSON(path, b)
	if err != nil {
		return s, err
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("%w: %s: %s", ErrInvalid, path, describeJSONError(err))
	}
	if s.AuthTokenEnv != "" {
		s.AuthToken = os.Getenv(s.AuthTokenEnv)
		if s.AuthToken == "" {
			return s, fmt.Errorf("%w: %s: auth_token_env: environment variable %s is not set", ErrInvalid, path, s.AuthTokenEnv)
		}
	}
	return s, nil
}

// Server defaults.
const (
	DefaultAddr         = "127.0.0.1:46397"
	DefaultDataDir      = "flock-data"
	DefaultMaxBodyBytes = 100 << 20
)

// DefaultConcurrency caps concurrent operations per kind.
func DefaultConcurrency() map[string]int {
	return map[string]int{"bash": 64, "python": 32, "generate": 256, "score": 8, "sandbox": 64}
}

// ApplyDefaults fills zero fields.
func (s *Server) ApplyDefaults() {
	if s.Addr == "" {
		s.Addr = DefaultAddr
	}
	if s.DataDir == "" {
		s.DataDir = DefaultDataDir
	}
	if s.Mode == "" {
		s.Mode = "live"
	}
	if s.MaxBodyBytes == 0 {
		s.MaxBodyBytes = DefaultMaxBodyBytes
	}
	c := DefaultConcurrency()
	for k, v := range s.Concurrency {
		c[k] = v
	}
	s.Concurrency = c
}

// Validate checks the configuration, including the rule that a
// non-loopback address needs an auth token.
func (s *Server) Validate() error {
	if s.Mode != "live" && s.Mode != "simulated" {
		return fmt.Errorf("%w: --mode %q is not one of live, simulated", ErrInvalid, s.Mode)
	}
	host, _, err := net.SplitHostPort(s.Addr)
	if err != nil {
		return fmt.Errorf("%w: --addr %q: %v", ErrInvalid, s.Addr, err)
	}
	if !IsLoopback(host) && s.AuthToken == "" {
		return fmt.Errorf("%w: --addr %s is not a loopback address: set an auth token (--auth-token or FLOCK_AUTH_TOKEN) to expose the server", ErrInvalid, s.Addr)
	}
	if s.DataDir == "" {
		return fmt.Errorf("%w: --data must not be empty", ErrInvalid)
	}
	return nil
}

// DBPath is the bbolt file inside DataDir.
func (s *Server) DBPath() string { return filepath.Join(s.DataDir, "flock.db") }

// RunsDir holds the runs' work directories.
func (s *Server) RunsDir() string { return filepath.Join(s.DataDir, "runs") }

// IsLoopback reports whether host (a name or IP) only reaches this machine.
// The empty host (all interfaces) is not loopback.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
