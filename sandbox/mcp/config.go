package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/flockrun/flock/phases/settings"
	"github.com/flockrun/flock/sandbox"
)

// configPath is the JSON path of the backend's section in the sandbox config file; config
// errors name it so that an operator finds the faulty line.
const configPath = "resources.mcp.config"

// WorkspacePlaceholder in a server's args, env values or cwd is replaced by the absolute
// path of the session's workspace when the server starts (AgentFlow's manifests write
// ${agent_workspace}, which the core's ${VAR} expansion would consume).
const WorkspacePlaceholder = "{workspace}"

// Defaults applied by parseConfig.
const (
	DefaultStartupTimeout = 30 * time.Second
	// stopGrace is how long Cleanup waits for a server to exit after its stdin closes
	// before it is signalled; the whole process group is killed afterwards in any case.
	stopGrace = 2 * time.Second
)

// ServerConfig is one MCP stdio server: the command flock starts per session.
type ServerConfig struct {
	// Name is the server's key in the config; tools are named mcp:<Name>.<tool>.
	// Letters, digits, '_' and '-' only (no '.', which separates it from the tool).
	Name string
	// Command is the executable: an absolute path or a name looked up on flock's PATH.
	Command string
	// Args are passed as is, after WorkspacePlaceholder substitution.
	Args []string
	// Env is the server's whole environment beyond PATH, HOME (the workspace) and the
	// locale: flock's own environment (API keys included) is never passed on. Values may
	// hold secrets (the core expands ${VAR} before the backend sees them); they are
	// redacted from any text the backend reports.
	Env map[string]string
	// Cwd is the server's working directory: empty for the session workspace, a relative
	// path for a directory beneath it (created, never escaping it), or an absolute path
	// the operator chose.
	Cwd string
}

// Config is the backend's parsed section.
type Config struct {
	// Servers sorted by name.
	Servers []ServerConfig
	// StartupTimeout bounds one server's start and MCP initialisation handshake
	// (startup_timeout_s, default 30).
	StartupTimeout time.Duration
}

var serverNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// section is the backend's section as written, for the settings decoder
// (package phases/settings).
type section struct {
	StartupTimeout *sandbox.Seconds       `json:"startup_timeout_s" default:"30"` // DefaultStartupTimeout
	Servers        map[string]serverEntry `json:"servers"`
	// Enabled is AgentFlow's key: an object of servers (an alias of
	// servers) or a list of names selecting which of servers start; read
	// by Normalize (parseSelection) into the fields below.
	Enabled json.RawMessage `json:"enabled_mcp_servers"`

	enabledServers map[string]serverEntry // the object form
	enabledNames   []string               // the list form
}

// serverEntry is one entry of servers.
type serverEntry struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Cwd     string            `json:"cwd"`
}

// Validate checks the entry's command, variable names and cwd.
func (e serverEntry) Validate() error {
	if strings.TrimSpace(e.Command) == "" {
		return settings.Errorf("command", "required: the server's executable")
	}
	for _, k := range sortedKeys(e.Env) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return settings.Errorf("env", "bad variable name %q", k)
		}
	}
	if s := e.Cwd; s != "" && !filepath.IsAbs(s) && !strings.HasPrefix(s, WorkspacePlaceholder) && !filepath.IsLocal(s) {
		return settings.Errorf("cwd", "a relative cwd must stay inside the session workspace")
	}
	return nil
}

// parseSelection reads enabled_mcp_servers: an object of servers (each
// checked) or a list of names (non-nil when given, even empty). An
// error's path is relative to the key.
func parseSelection(raw json.RawMessage) (servers map[string]serverEntry, names []string, err error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil, nil, nil
	case raw[0] == '{':
		if err := settings.Unmarshal(raw, &servers); err != nil {
			return nil, nil, err
		}
		for _, name := range sortedKeys(servers) {
			if err := servers[name].Validate(); err != nil {
				return nil, nil, settings.At(name, err)
			}
		}
		return servers, nil, nil
	case raw[0] == '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, nil, err
		}
		names = make([]string, len(items))
		for i, item := range items {
			if len(item) == 0 || item[0] != '"' || json.Unmarshal(item, &names[i]) != nil {
				return nil, nil, settings.Errorf(fmt.Sprintf("[%d]", i), "want a server name")
			}
		}
		return nil, names, nil
	}
	return nil, nil, errors.New("want a list of names or an object of servers")
}

// Normalize reads enabled_mcp_servers.
func (s *section) Normalize() error {
	var err error
	s.enabledServers, s.enabledNames, err = parseSelection(s.Enabled)
	return settings.At("enabled_mcp_servers", err)
}

// Validate checks that there is a server, that names are well formed and
// that a list names configured servers.
func (s *section) Validate() error {
	servers, key := s.Servers, "servers"
	if s.enabledServers != nil {
		if s.Servers != nil {
			return settings.Errorf("enabled_mcp_servers", "an object here replaces \"servers\"; give one of them")
		}
		servers, key = s.enabledServers, "enabled_mcp_servers"
	}
	if s.enabledNames != nil && len(s.enabledNames) == 0 {
		return settings.Errorf("enabled_mcp_servers", "an empty list starts no server: name at least one, or leave the key out to start all of servers")
	}
	for i, name := range s.enabledNames {
		if _, ok := servers[name]; !ok {
			return settings.Errorf(fmt.Sprintf("enabled_mcp_servers[%d]", i), "no server %q in %s.servers", name, configPath)
		}
	}
	if len(servers) == 0 {
		return settings.Errorf("servers", "required: at least one MCP server")
	}
	for _, name := range sortedKeys(servers) {
		if !serverNameRE.MatchString(name) {
			return settings.Errorf(key+"."+name, "bad server name: use letters, digits, '_' and '-'")
		}
	}
	return nil
}

// parseConfig reads the backend's section from a map (see decodeConfig).
func parseConfig(raw map[string]any) (Config, error) {
	return decodeConfig(func(v any) error { return sandbox.DecodeConfig(raw, v) })
}

// decodeConfig reads the backend's section with decode (Env.Decode at
// Provision). It accepts flock's shape
//
//	{"servers": {"fs": {"command": "...", "args": [...], "env": {...}, "cwd": "..."}}}
//
// and AgentFlow's key: "enabled_mcp_servers" either as the same map (an alias of
// "servers") or as a list of names selecting which entries of "servers" start.
// Errors name the JSON path of the bad value in the file.
func decodeConfig(decode func(any) error) (Config, error) {
	var s section
	if err := decode(&s); err != nil {
		return Config{}, sandbox.Within(configPath, err)
	}
	cfg := Config{StartupTimeout: s.StartupTimeout.Duration()}
	servers := s.Servers
	if s.enabledServers != nil {
		servers = s.enabledServers
	}
	names := sortedKeys(servers)
	if s.enabledNames != nil {
		names = slices.Compact(slices.Sorted(slices.Values(s.enabledNames)))
	}
	for _, name := range names {
		e := servers[name]
		cfg.Servers = append(cfg.Servers, ServerConfig{Name: name, Command: e.Command, Args: e.Args, Env: e.Env, Cwd: e.Cwd})
	}
	return cfg, nil
}

// sessionServers reads a session's config: the core passes the backend's section merged
// with the request's session_config, so only an "enabled_mcp_servers" list is read
// (naming which configured servers start in that session); the backend's own "servers"
// and an "enabled_mcp_servers" object are its config and select nothing. A client can
// select servers, never add or change one. Nil selection means all.
func sessionServers(cfg map[string]any, all []ServerConfig) ([]ServerConfig, error) {
	const key = "enabled_mcp_servers"
	v, ok := cfg[key]
	if !ok || v == nil {
		return all, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("session_config.%s: %w", key, err)
	}
	if raw[0] == '{' {
		return all, nil
	}
	_, names, err := parseSelection(raw)
	if err != nil {
		var se *settings.Error
		if errors.As(err, &se) && se.Path != "" {
			return nil, fmt.Errorf("session_config.%w", settings.At(key, err))
		}
		return nil, fmt.Errorf("session_config.%s: want a list of server names", key)
	}
	want := map[string]bool{}
	for i, name := range names {
		if !slices.ContainsFunc(all, func(s ServerConfig) bool { return s.Name == name }) {
			return nil, fmt.Errorf("session_config.%s[%d]: %w: %q", key, i, ErrUnknownServer, name)
		}
		want[name] = true
	}
	var out []ServerConfig
	for _, sc := range all {
		if want[sc.Name] {
			out = append(out, sc)
		}
	}
	return out, nil
}

// sortedKeys returns m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
