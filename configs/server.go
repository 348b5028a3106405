package configs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
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
	// /health. Required when Addr is not a loopback address; at least
	// MinAuthTokenLen bytes. A settings file names an environment variable
	// instead (auth_token_env): tokens do not belong in files.
	AuthToken string `json:"-"`
	// AuthTokenEnv names the environment variable holding AuthToken.
	AuthTokenEnv string `json:"auth_token_env,omitempty"`
	// AuthTokenFile names a file holding AuthToken (surrounding white
	// space ignored): the token then appears in no process's environment
	// or command line (see ReadTokenFile). A relative name is relative to
	// the settings file; LoadServerFile sets the name it read.
	AuthTokenFile string `json:"auth_token_file,omitempty"`
	// MaxBodyBytes caps request bodies (default 16 MiB, DefaultMaxBodyBytes);
	// the operator raises it here for larger uploads (code:write of a file
	// near the code backend's max_file_size, a very large task).
	MaxBodyBytes int64 `json:"max_body_bytes,omitempty"`
	// HeaderTimeoutS bounds, in seconds, reading a request's line and
	// header (default 10); BodyTimeoutS bounds reading its body, from the
	// end of the header (default 60). A client slower than either loses
	// its connection, token or not. They apply to every listener flock
	// opens (package internal/httpserver).
	HeaderTimeoutS float64 `json:"header_timeout_s,omitempty"`
	BodyTimeoutS   float64 `json:"body_timeout_s,omitempty"`
	// Concurrency caps concurrent operations per kind across all runs
	// (defaults in DefaultConcurrency; 0 lifts a kind's cap).
	Concurrency map[string]int `json:"concurrency,omitempty"`

	// AllowedOrigins lists the browser origins (scheme://host[:port], as
	// in an Origin header) that may call the API besides the server's own.
	// A request carrying any other Origin header, "null" included, is
	// refused with 403. Compared after NormalizeOrigin (case, default
	// ports); there are no wildcards.
	AllowedOrigins []string `json:"allowed_origins,omitempty"`
	// PublicNames lists the host names (or addresses), without port, that
	// the server answers to besides loopback names and addresses and the
	// host of Addr. A request whose Host header names anything else is
	// refused with 403 on every route, /health included: this defeats DNS
	// rebinding. List the name clients use when the server is reached
	// through a proxy or by a DNS name.
	PublicNames []string `json:"public_names,omitempty"`
	// ReadRoots lists directories that runs may read files from besides
	// their own work directory (read_file, react's system_prompt_file,
	// rollout's data_path, the scripted provider's script). Each must
	// exist. Writes stay beneath the work directory, and the data
	// directory stays unreadable (but for a run's own work directory) even
	// when a read root contains it.
	ReadRoots []string `json:"read_roots,omitempty"`
	// WriteRoots lists directories that runs may write (and read) beneath
	// besides their work directory. Only flock run and flock rollout set
	// it, for the output directory the person at the terminal named; it
	// cannot come from a settings file: a server's runs write only in their
	// work directory.
	WriteRoots []string `json:"-"`
	// Models holds the operator's limits per model, keyed by model name or
	// by base URL. They protect a shared endpoint: a run's own settings may
	// only tighten them for itself.
	Models map[string]ModelLimits `json:"models,omitempty"`
	// Snapshots bounds the work-dir snapshots that forks restore.
	Snapshots Snapshots `json:"snapshots,omitzero"`
	// Hidden lists paths besides DataDir that the programs flock starts
	// must not see (flock serve --cluster adds --jetstream-dir, which holds
	// every run's records). Only the command line sets it.
	Hidden []string `json:"-"`
	// Isolation is the operator's isolation of every program flock starts
	// (package isolation): "auto" (default: bwrap where it can run, else
	// unisolated with a warning at start-up), "bwrap" (refuse to start
	// without it) or "none" (opt out). Runs may ask for more isolation,
	// never for less.
	Isolation string `json:"isolation,omitempty"`
	// PassEnv lists the variables of the server's environment that a run
	// may hand to the programs it starts by naming them (the external
	// workflow's pass_env). No other variable of the server's environment
	// reaches them but a small base set (isolation.Environ).
	PassEnv []string `json:"pass_env,omitempty"`
	// SandboxTokenEnvs lists the variables a run's sandbox_token_env may
	// name; a run naming another is refused without saying whether it is
	// set.
	SandboxTokenEnvs []string `json:"sandbox_token_envs,omitempty"`
	// SandboxURLAllowHosts lists the hosts (names, IP addresses, CIDR
	// prefixes) a run's sandbox_url may name besides public addresses;
	// SandboxURLAllowPrivate allows every address. Without them a
	// sandbox_url on a loopback, private or link-local address is refused,
	// as the web tools refuse them.
	SandboxURLAllowHosts   []string `json:"sandbox_url_allow_hosts,omitempty"`
	SandboxURLAllowPrivate bool     `json:"sandbox_url_allow_private,omitempty"`
	// NewStore lets the server start with a missing or empty database
	// (flock.db) although the data directory holds run directories of an
	// earlier store. Without it, that start is refused: the database was
	// probably lost, and an empty store would silently forget those runs.
	NewStore bool `json:"new_store,omitempty"`
}

// Snapshots bounds the work-dir snapshots the executor takes after each
// step with operations (see the README's "Fork"). 0 takes the default.
type Snapshots struct {
	// MaxFileBytes: a file holding more data than this (holes are free)
	// is not snapshotted; the manifest records it as "not snapshotted:
	// too large" and a fork says it could not restore it. Default 64 MiB.
	MaxFileBytes int64 `json:"max_file_bytes,omitempty"`
	// MaxRunBytes caps what one run adds to the snapshot store (the data
	// of new contents and the manifests, in 4 KiB blocks). Once spent,
	// changed files are not snapshotted, then the run's snapshots stop.
	// Default 1 GiB.
	MaxRunBytes int64 `json:"max_run_bytes,omitempty"`
	// Off turns the snapshots off: forks then start with an empty work
	// directory.
	Off bool `json:"off,omitempty"`
}

// ModelLimits are the operator's server-wide limits for one model
// endpoint; 0 means unlimited. A key matches a generate's model by the
// name sent to the endpoint (models.NAME.name, default the map key) first;
// a key equal to the model's base_url (trailing slashes ignored) applies
// when no name key does, and is one budget shared by every model at that
// URL. A name key counts each base_url separately.
type ModelLimits struct {
	RequestsPerMinute int `json:"requests_per_minute,omitempty"`
	MaxConcurrency    int `json:"max_concurrency,omitempty"`
}

// ParseServer decodes a server settings document, read from path (package
// configfile reads the file, JSON or YAML). Unknown keys are errors, naming
// the key; auth_token_env and auth_token_file are resolved into AuthToken,
// a relative auth_token_file from path's directory.
func ParseServer(path string, doc json.RawMessage) (Server, error) {
	var s Server
	var err error
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("%w: %s: %s", ErrInvalid, path, describeJSONError(err))
	}
	if s.AuthTokenEnv != "" && s.AuthTokenFile != "" {
		return s, fmt.Errorf("%w: %s: auth_token_env and auth_token_file are both set; keep one", ErrInvalid, path)
	}
	if s.AuthTokenEnv != "" {
		s.AuthToken = os.Getenv(s.AuthTokenEnv)
		if s.AuthToken == "" {
			return s, fmt.Errorf("%w: %s: auth_token_env: environment variable %s is not set", ErrInvalid, path, s.AuthTokenEnv)
		}
	}
	if s.AuthTokenFile != "" {
		if !filepath.IsAbs(s.AuthTokenFile) {
			s.AuthTokenFile = filepath.Join(filepath.Dir(path), s.AuthTokenFile)
		}
		if s.AuthToken, err = ReadTokenFile(s.AuthTokenFile); err != nil {
			return s, fmt.Errorf("%w: %s: auth_token_file: %w", ErrInvalid, path, err)
		}
	}
	return s, nil
}

// ReadTokenFile reads a token from a file (flock serve --auth-token-file,
// FLOCK_AUTH_TOKEN_FILE, auth_token_file, a client's --token-file): its
// content without surrounding white space, which must leave something. The
// file must be a regular file only its owner may read or write (mode 0600
// or stricter): a token other users can read guards nothing. Errors name
// the file, never its content.
func ReadTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("token file %s is not a regular file", path)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("token file %s: other users may read or change it (mode %04o): chmod 600 %s", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	if len(b) > maxTokenFileBytes {
		return "", fmt.Errorf("token file %s is larger than %d KiB: it holds no token", path, maxTokenFileBytes>>10)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("token file %s is empty", path)
	}
	return tok, nil
}

// Server defaults and limits.
const (
	DefaultAddr         = "127.0.0.1:46397"
	DefaultDataDir      = "flock-data"
	DefaultMaxBodyBytes = 16 << 20
	// DefaultHeaderTimeoutS and DefaultBodyTimeoutS are header_timeout_s's
	// and body_timeout_s's defaults, in seconds.
	DefaultHeaderTimeoutS = 10
	DefaultBodyTimeoutS   = 60
	// MinAuthTokenLen is the shortest auth token Validate accepts, in bytes.
	MinAuthTokenLen = 16
	// maxTokenFileBytes bounds what ReadTokenFile reads of a token file.
	maxTokenFileBytes = 64 << 10
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
	if s.HeaderTimeoutS == 0 {
		s.HeaderTimeoutS = DefaultHeaderTimeoutS
	}
	if s.BodyTimeoutS == 0 {
		s.BodyTimeoutS = DefaultBodyTimeoutS
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
		return fmt.Errorf("%w: --addr %s is not a loopback address: set an auth token of at least 16 bytes to expose the server, best in a file only you can read (--auth-token-file, FLOCK_AUTH_TOKEN_FILE or auth_token_file in --config; else FLOCK_AUTH_TOKEN)", ErrInvalid, s.Addr)
	}
	if s.AuthToken != "" && len(s.AuthToken) < MinAuthTokenLen {
		// The token itself is never quoted, nor its length.
		return fieldErr("auth token (--auth-token, FLOCK_AUTH_TOKEN or auth_token_env)",
			fmt.Sprintf("shorter than %d bytes; use a long random value (for example: openssl rand -hex 32)", MinAuthTokenLen))
	}
	if s.DataDir == "" {
		return fmt.Errorf("%w: --data must not be empty", ErrInvalid)
	}
	for name, v := range map[string]float64{"header_timeout_s": s.HeaderTimeoutS, "body_timeout_s": s.BodyTimeoutS} {
		if v < 0.001 || v > 86400 || v != v {
			return fieldErr(name, fmt.Sprintf("want a number of seconds from 0.001 to 86400, got %g", v))
		}
	}
	if s.MaxBodyBytes < 0 {
		return fieldErr("max_body_bytes", "must not be negative")
	}
	if s.Snapshots.MaxFileBytes < 0 {
		return fieldErr("snapshots.max_file_bytes", "must not be negative (0: the default, 64 MiB)")
	}
	if s.Snapshots.MaxRunBytes < 0 {
		return fieldErr("snapshots.max_run_bytes", "must not be negative (0: the default, 1 GiB)")
	}
	kinds := make([]string, 0, len(s.Concurrency))
	for k := range s.Concurrency {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		if s.Concurrency[k] < 0 {
			return fieldErr("concurrency."+k, fmt.Sprintf("must be >= 0 (0: no cap), got %d", s.Concurrency[k]))
		}
	}
	for i, o := range s.AllowedOrigins {
		if _, err := NormalizeOrigin(o); err != nil {
			return fieldErr(fmt.Sprintf("allowed_origins[%d]", i), err.Error())
		}
	}
	for i, n := range s.PublicNames {
		if _, err := NormalizeHostName(n); err != nil {
			return fieldErr(fmt.Sprintf("public_names[%d]", i), err.Error())
		}
	}
	if err := s.validatePrograms(); err != nil {
		return err
	}
	return s.validateModels()
}

// validatePrograms checks the settings about the programs flock starts and
// the variables runs may name.
func (s *Server) validatePrograms() error {
	switch s.Isolation {
	case "", "auto", "bwrap", "none":
	default:
		return fieldErr("isolation", fmt.Sprintf("%q is not one of auto, bwrap, none", s.Isolation))
	}
	for _, l := range []struct {
		key   string
		names []string
	}{{"pass_env", s.PassEnv}, {"sandbox_token_envs", s.SandboxTokenEnvs}} {
		for i, n := range l.names {
			if !envName.MatchString(n) {
				return fieldErr(fmt.Sprintf("%s[%d]", l.key, i), "must name an environment variable (letters, digits and _)")
			}
		}
	}
	for i, h := range s.SandboxURLAllowHosts {
		if strings.TrimSpace(h) == "" || strings.ContainsAny(h, "@? ") || strings.Contains(h, "://") {
			return fieldErr(fmt.Sprintf("sandbox_url_allow_hosts[%d]", i), "want a host name, an IP address or a CIDR prefix")
		}
	}
	return nil
}

// validateModels checks the operator's per-model limits.
func (s *Server) validateModels() error {
	keys := make([]string, 0, len(s.Models))
	for k := range s.Models {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		l := s.Models[k]
		switch {
		case strings.TrimSpace(k) == "":
			return fieldErr("models", "an empty key names no model or base_url")
		case l.RequestsPerMinute < 0:
			return fieldErr("models."+k+".requests_per_minute", "must be >= 0")
		case l.MaxConcurrency < 0:
			return fieldErr("models."+k+".max_concurrency", "must be >= 0")
		}
	}
	return nil
}

// NormalizeOrigin returns origin (a browser Origin value such as
// "https://Example.com:443") as scheme://host[:port] with scheme and host
// lowercased and the scheme's default port dropped, so that equal origins
// compare equal. Only http and https origins with a host and nothing after
// it (no path, query or user) are valid; "null" and "*" are not.
func NormalizeOrigin(origin string) (string, error) {
	if origin == "*" {
		return "", fmt.Errorf("%q: wildcards are not supported; list each origin as scheme://host[:port]", origin)
	}
	u, err := url.Parse(origin)
	if err != nil {
		return "", fmt.Errorf("%q is not an origin (scheme://host[:port])", origin)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", fmt.Errorf("%q is not an origin: want scheme://host[:port] with scheme http or https", origin)
	}
	if u.Host == "" || u.User != nil || u.Opaque != "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q is not an origin: want scheme://host[:port] and nothing else", origin)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if host == "" {
		return "", fmt.Errorf("%q is not an origin: the host is empty", origin)
	}
	if port != "" {
		if n, err := strconv.ParseUint(port, 10, 16); err != nil {
			return "", fmt.Errorf("%q is not an origin: bad port %q", origin, port)
		} else if scheme == "http" && n == 80 || scheme == "https" && n == 443 {
			port = ""
		} else {
			port = strconv.FormatUint(n, 10)
		}
	}
	if port != "" {
		return scheme + "://" + net.JoinHostPort(host, port), nil
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host, nil
}

// NormalizeHostName returns name (a host name or IP address without port,
// IPv6 with or without brackets) lowercased and without brackets, as
// public_names entries are compared with Host headers.
func NormalizeHostName(name string) (string, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	switch {
	case n == "":
		return "", fmt.Errorf("empty host name")
	case strings.ContainsAny(n, "/@?# \t"):
		return "", fmt.Errorf("%q is not a host name: give the name alone (no scheme, path or port)", name)
	}
	if strings.HasPrefix(n, "[") && strings.HasSuffix(n, "]") {
		n = n[1 : len(n)-1]
	}
	if strings.Contains(n, ":") && net.ParseIP(n) == nil {
		return "", fmt.Errorf("%q is not a host name: give the name alone, without a port", name)
	}
	return n, nil
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

// HeaderTimeout is HeaderTimeoutS as a duration.
func (s *Server) HeaderTimeout() time.Duration { return secondsDuration(s.HeaderTimeoutS) }

// BodyTimeout is BodyTimeoutS as a duration.
func (s *Server) BodyTimeout() time.Duration { return secondsDuration(s.BodyTimeoutS) }

func secondsDuration(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
