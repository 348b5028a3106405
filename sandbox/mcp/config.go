package mcp

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

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

// parseConfig reads the backend's section. It accepts flock's shape
//
//	{"servers": {"fs": {"command": "...", "args": [...], "env": {...}, "cwd": "..."}}}
//
// and AgentFlow's key: "enabled_mcp_servers" either as the same map (an alias of
// "servers") or as a list of names selecting which entries of "servers" start.
// Errors name the JSON path of the bad value.
func parseConfig(raw map[string]any) (Config, error) {
	cfg := Config{StartupTimeout: DefaultStartupTimeout}
	if d, ok, err := sandbox.SecondsSetting(raw, configPath, "startup_timeout_s", sandbox.MinSeconds, sandbox.MaxSeconds); err != nil {
		return cfg, err
	} else if ok {
		cfg.StartupTimeout = d
	}

	servers := map[string]any{}
	serversKey := "servers"
	if v, ok := raw["servers"]; ok {
		m, ok := v.(map[string]any)
		if !ok {
			return cfg, fmt.Errorf("%s.servers: want an object {name: {command, args, env, cwd}}", configPath)
		}
		servers = m
	}
	var enabled []string
	if v, ok := raw["enabled_mcp_servers"]; ok {
		switch ev := v.(type) {
		case map[string]any:
			if _, both := raw["servers"]; both {
				return cfg, fmt.Errorf("%s.enabled_mcp_servers: an object here replaces \"servers\"; give one of them", configPath)
			}
			servers, serversKey = ev, "enabled_mcp_servers"
		case []any:
			enabled = make([]string, 0, len(ev))
			for i, n := range ev {
				name, ok := n.(string)
				if !ok {
					return cfg, fmt.Errorf("%s.enabled_mcp_servers[%d]: want a server name", configPath, i)
				}
				if _, ok := servers[name]; !ok {
					return cfg, fmt.Errorf("%s.enabled_mcp_servers[%d]: no server %q in %s.servers", configPath, i, name, configPath)
				}
				enabled = append(enabled, name)
			}
		default:
			return cfg, fmt.Errorf("%s.enabled_mcp_servers: want a list of names or an object of servers", configPath)
		}
	}
	if len(servers) == 0 {
		return cfg, fmt.Errorf("%s.servers: required: at least one MCP server", configPath)
	}
	names := enabled
	if names == nil {
		for name := range servers {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for i, name := range names {
		if i > 0 && names[i-1] == name {
			continue
		}
		sc, err := parseServer(name, servers[name], configPath+"."+serversKey+"."+name)
		if err != nil {
			return cfg, err
		}
		cfg.Servers = append(cfg.Servers, sc)
	}
	return cfg, nil
}

func parseServer(name string, v any, path string) (ServerConfig, error) {
	sc := ServerConfig{Name: name}
	if !serverNameRE.MatchString(name) {
		return sc, fmt.Errorf("%s: bad server name: use letters, digits, '_' and '-'", path)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return sc, fmt.Errorf("%s: want an object {command, args, env, cwd}", path)
	}
	if sc.Command, ok = m["command"].(string); !ok || strings.TrimSpace(sc.Command) == "" {
		return sc, fmt.Errorf("%s.command: required: the server's executable", path)
	}
	if v, ok := m["args"]; ok {
		list, ok := v.([]any)
		if !ok {
			return sc, fmt.Errorf("%s.args: want a list of strings", path)
		}
		for i, a := range list {
			s, ok := a.(string)
			if !ok {
				return sc, fmt.Errorf("%s.args[%d]: want a string", path, i)
			}
			sc.Args = append(sc.Args, s)
		}
	}
	if v, ok := m["env"]; ok {
		env, ok := v.(map[string]any)
		if !ok {
			return sc, fmt.Errorf("%s.env: want an object {NAME: value}", path)
		}
		sc.Env = make(map[string]string, len(env))
		for k, ev := range env {
			s, ok := ev.(string)
			if !ok {
				return sc, fmt.Errorf("%s.env.%s: want a string", path, k)
			}
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return sc, fmt.Errorf("%s.env: bad variable name %q", path, k)
			}
			sc.Env[k] = s
		}
	}
	if v, ok := m["cwd"]; ok {
		s, ok := v.(string)
		if !ok {
			return sc, fmt.Errorf("%s.cwd: want a string", path)
		}
		if !filepath.IsAbs(s) && !strings.HasPrefix(s, WorkspacePlaceholder) && !filepath.IsLocal(s) {
			return sc, fmt.Errorf("%s.cwd: a relative cwd must stay inside the session workspace", path)
		}
		sc.Cwd = s
	}
	return sc, nil
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
	if _, isMap := v.(map[string]any); isMap {
		return all, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("session_config.%s: want a list of server names", key)
	}
	want := map[string]bool{}
	for i, n := range list {
		name, ok := n.(string)
		if !ok {
			return nil, fmt.Errorf("session_config.%s[%d]: want a server name", key, i)
		}
		found := false
		for _, sc := range all {
			if sc.Name == name {
				found = true
			}
		}
		if !found {
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
