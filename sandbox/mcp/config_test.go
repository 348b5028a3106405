package mcp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	srv := func() map[string]any { return map[string]any{"command": "srv"} }
	for _, tc := range []struct {
		name    string
		raw     map[string]any
		servers []string // want, sorted
		err     string   // substring of the error, "" for none
	}{
		{"servers map", map[string]any{"servers": map[string]any{"b": srv(), "a": srv()}}, []string{"a", "b"}, ""},
		{"agentflow map", map[string]any{"enabled_mcp_servers": map[string]any{"fs": srv()}}, []string{"fs"}, ""},
		{"agentflow list selects", map[string]any{"servers": map[string]any{"a": srv(), "b": srv()}, "enabled_mcp_servers": []any{"b"}}, []string{"b"}, ""},
		{"list names unknown", map[string]any{"servers": map[string]any{"a": srv()}, "enabled_mcp_servers": []any{"a", "zz"}}, nil, "resources.mcp.config.enabled_mcp_servers[1]: no server \"zz\""},
		{"both maps", map[string]any{"servers": map[string]any{"a": srv()}, "enabled_mcp_servers": map[string]any{"b": srv()}}, nil, "give one of them"},
		{"none", map[string]any{}, nil, "resources.mcp.config.servers: required"},
		{"no command", map[string]any{"servers": map[string]any{"a": map[string]any{"args": []any{"x"}}}}, nil, "resources.mcp.config.servers.a.command: required"},
		{"bad name", map[string]any{"servers": map[string]any{"a.b": srv()}}, nil, "resources.mcp.config.servers.a.b: bad server name"},
		{"bad args", map[string]any{"servers": map[string]any{"a": map[string]any{"command": "x", "args": []any{"ok", 3.0}}}}, nil, "servers.a.args[1]: want a string"},
		{"bad env", map[string]any{"servers": map[string]any{"a": map[string]any{"command": "x", "env": map[string]any{"K": 1.0}}}}, nil, "servers.a.env.K: want a string"},
		{"escaping cwd", map[string]any{"servers": map[string]any{"a": map[string]any{"command": "x", "cwd": "../up"}}}, nil, "servers.a.cwd: a relative cwd must stay inside"},
		{"bad timeout", map[string]any{"servers": map[string]any{"a": srv()}, "startup_timeout_s": "soon"}, nil, "startup_timeout_s"},
		{"bad servers type", map[string]any{"servers": []any{"a"}}, nil, "resources.mcp.config.servers: want an object, got JSON array"},
		{"bad selection type", map[string]any{"servers": map[string]any{"a": srv()}, "enabled_mcp_servers": "a"}, nil, "resources.mcp.config.enabled_mcp_servers: want a list of names or an object of servers"},
		{"bad selection item", map[string]any{"servers": map[string]any{"a": srv()}, "enabled_mcp_servers": []any{"a", 1.0}}, nil, "resources.mcp.config.enabled_mcp_servers[1]: want a server name"},
		{"agentflow map no command", map[string]any{"enabled_mcp_servers": map[string]any{"fs": map[string]any{"args": []any{}}}}, nil, "resources.mcp.config.enabled_mcp_servers.fs.command: required"},
		{"agentflow map bad args", map[string]any{"enabled_mcp_servers": map[string]any{"fs": map[string]any{"command": "x", "args": "y"}}}, nil, "resources.mcp.config.enabled_mcp_servers.fs.args: want a list, got JSON string"},
		{"agentflow map bad name", map[string]any{"enabled_mcp_servers": map[string]any{"f s": srv()}}, nil, "resources.mcp.config.enabled_mcp_servers.f s: bad server name"},
		{"bad env name", map[string]any{"servers": map[string]any{"a": map[string]any{"command": "x", "env": map[string]any{"K=": "v"}}}}, nil, `resources.mcp.config.servers.a.env: bad variable name "K="`},
		{"unknown key left to the warnings", map[string]any{"servers": map[string]any{"a": srv()}, "colour": 1.0}, []string{"a"}, ""},
		{"empty list", map[string]any{"servers": map[string]any{"a": srv()}, "enabled_mcp_servers": []any{}}, nil, "resources.mcp.config.enabled_mcp_servers: an empty list starts no server"},
		{"list repeats a name", map[string]any{"servers": map[string]any{"a": srv(), "b": srv()}, "enabled_mcp_servers": []any{"b", "a", "b"}}, []string{"a", "b"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseConfig(tc.raw)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range cfg.Servers {
				got = append(got, s.Name)
			}
			if strings.Join(got, ",") != strings.Join(tc.servers, ",") {
				t.Errorf("servers = %v, want %v", got, tc.servers)
			}
			if cfg.StartupTimeout != DefaultStartupTimeout {
				t.Errorf("timeout = %v", cfg.StartupTimeout)
			}
		})
	}
	cfg, err := parseConfig(map[string]any{"servers": map[string]any{"a": map[string]any{
		"command": "x", "args": []any{"{workspace}/db"}, "env": map[string]any{"K": "v"}, "cwd": "sub/dir",
	}}, "startup_timeout_s": 2.5})
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Servers[0]
	if s.Command != "x" || s.Args[0] != "{workspace}/db" || s.Env["K"] != "v" || s.Cwd != "sub/dir" || cfg.StartupTimeout != 2500*time.Millisecond {
		t.Errorf("parsed = %+v, %v", s, cfg.StartupTimeout)
	}
}

// TestSessionServers: a session's enabled_mcp_servers list selects
// configured servers; an object selects nothing; anything else is refused
// naming the key.
func TestSessionServers(t *testing.T) {
	all := []ServerConfig{{Name: "a"}, {Name: "b"}}
	for _, tc := range []struct {
		name string
		cfg  map[string]any
		want string // server names, or the error
	}{
		{"none", map[string]any{}, "a,b"},
		{"null", map[string]any{"enabled_mcp_servers": nil}, "a,b"},
		{"object", map[string]any{"enabled_mcp_servers": map[string]any{"x": 1.0}}, "a,b"},
		{"list", map[string]any{"enabled_mcp_servers": []any{"b"}}, "b"},
		{"empty list", map[string]any{"enabled_mcp_servers": []any{}}, ""},
		{"string", map[string]any{"enabled_mcp_servers": "a"}, "session_config.enabled_mcp_servers: want a list of server names"},
		{"number in list", map[string]any{"enabled_mcp_servers": []any{"a", 3.0}}, "session_config.enabled_mcp_servers[1]: want a server name"},
		{"unknown", map[string]any{"enabled_mcp_servers": []any{"zz"}}, `session_config.enabled_mcp_servers[0]: unknown mcp server: "zz"`},
	} {
		got, err := sessionServers(tc.cfg, all)
		var names []string
		for _, s := range got {
			names = append(names, s.Name)
		}
		if s := strings.Join(names, ","); err != nil && err.Error() != tc.want || err == nil && s != tc.want {
			t.Errorf("%s: %v %v, want %s", tc.name, names, err, tc.want)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add(`{"servers":{"a":{"command":"x","args":["y"],"env":{"K":"v"},"cwd":"d"}}}`)
	f.Add(`{"enabled_mcp_servers":["a"],"servers":{"a":{"command":"x"}}}`)
	f.Add(`{"enabled_mcp_servers":{"a":{"command":"x"}},"startup_timeout_s":1}`)
	f.Fuzz(func(t *testing.T, s string) {
		var raw map[string]any
		if err := json.Unmarshal([]byte(s), &raw); err != nil {
			return
		}
		cfg, err := parseConfig(raw)
		if err == nil && len(cfg.Servers) == 0 {
			t.Fatal("no error and no servers")
		}
	})
}
