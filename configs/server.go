package configs

import (
	"fmt"
	"net"
	"path/filepath"
)

// Server is the configuration of a flock server process.
type Server struct {
	// Addr is the listen address (default 127.0.0.1:46397).
	Addr string
	// DataDir holds flock.db and the runs' work directories (default ./flock-data).
	DataDir string
	// Mode is "live" (default) or "simulated"; simulated routes every
	// generate to the built-in simulated provider.
	Mode string
	// PluginDirs are searched for *.so phase plugins at start-up.
	PluginDirs []string
	// WorkflowDirs are searched for *.yaml/*.yml/*.json workflow files.
	WorkflowDirs []string
	// AuthToken, when set, is required as a bearer token on every route but
	// /health. Required when Addr is not a loopback address.
	AuthToken string
	// MaxBodyBytes caps request bodies (default 100 MB).
	MaxBodyBytes int64
	// Concurrency caps concurrent operations per kind across all runs
	// (defaults in DefaultConcurrency).
	Concurrency map[string]int
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
