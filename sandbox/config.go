package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Config is AgentFlow's sandbox-server JSON config, as is:
//
//	{"server": {"session_ttl": 300, "cleanup_interval": 60, ...},
//	 "resources": {"bash": {"enabled": true, "config": {...}}},
//	 "apis": {"text2sql": {"databases": {"concert": "data/concert.db"}}},
//	 "warmup": {"enabled": true, "resources": ["rag"]}}
//
// Every string in the file may use ${VAR} and ${VAR:-default}, expanded from
// the environment (the default also replaces an empty value); an unset
// ${VAR} without a default, and any other "${" (${VAR-x}, ${}, an unclosed
// reference), is an error naming its JSON path. There is no escape for a
// literal "${". Keys AgentFlow has and flock does not use (backend_class,
// description, security, server.url/port/title) are accepted and ignored.
type Config struct {
	Server ServerConfig
	// Resources are the enabled resources: name → config section.
	Resources map[string]map[string]any
	// APIs are the api groups: name → section.
	APIs   map[string]map[string]any
	Warmup WarmupConfig
}

// ServerConfig is the config's server section.
type ServerConfig struct {
	// SessionTTL is how long a session lives without activity (300 s).
	SessionTTL time.Duration
	// CleanupInterval is the period of the expired-session sweeper (60 s).
	CleanupInterval time.Duration
	// DefaultTimeout bounds a call that names no timeout (600 s).
	DefaultTimeout time.Duration
	// DataDir, when set, is the service's data dir (relative to the config
	// file's directory); Options.DataDir overrides it.
	DataDir string
	// MaxWorkspaceBytes bounds the disk a session's workspace may take for
	// a fork (2 GiB): a larger source is not forked, and a copy stops
	// there. Holes of sparse files take none.
	MaxWorkspaceBytes int64
	// MaxBatchParallel bounds the actions of one parallel batch running at
	// once (8); the others wait their turn.
	MaxBatchParallel int
	// MaxWorkerParallel bounds the calls of one worker (caller and
	// worker_id) running at once, batches and single calls alike (16).
	MaxWorkerParallel int
	// MaxBodyBytes, HeaderTimeout and BodyTimeout, when set
	// (max_body_bytes, header_timeout_s, body_timeout_s), are the listener's
	// bounds under `flock sandbox` (configs.Server's; its defaults
	// otherwise). Under `flock serve` the server's settings govern.
	MaxBodyBytes               int64
	HeaderTimeout, BodyTimeout time.Duration
}

// DefaultMaxWorkspaceBytes is server.max_workspace_bytes's default.
const DefaultMaxWorkspaceBytes = 2 << 30

// WarmupConfig is the config's warmup section.
type WarmupConfig struct {
	Enabled bool
	// Resources lists the backends warmed at start; empty means all.
	Resources []string
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// LoadConfig reads and parses the config file at path, expanding ${VAR} from
// the process environment.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return ParseConfig(data, os.LookupEnv)
}

// ParseConfig parses a config document; lookup resolves ${VAR}.
func ParseConfig(data []byte, lookup func(string) (string, bool)) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: not a JSON object: %w", ErrConfig, err)
	}
	if raw == nil {
		return nil, fmt.Errorf("%w: not a JSON object", ErrConfig)
	}
	expanded, err := expand(raw, "", lookup)
	if err != nil {
		return nil, err
	}
	raw = expanded.(map[string]any)
	cfg := &Config{
		Server: ServerConfig{SessionTTL: 300 * time.Second, CleanupInterval: 60 * time.Second, DefaultTimeout: 600 * time.Second,
			MaxWorkspaceBytes: DefaultMaxWorkspaceBytes, MaxBatchParallel: 8, MaxWorkerParallel: 16},
		Resources: map[string]map[string]any{},
		APIs:      map[string]map[string]any{},
	}
	if v, ok := raw["server"]; ok {
		srv, ok := v.(map[string]any)
		if !ok {
			return nil, cfgErr("server", "must be an object")
		}
		for key, dst := range map[string]*time.Duration{
			"session_ttl": &cfg.Server.SessionTTL, "cleanup_interval": &cfg.Server.CleanupInterval, "default_timeout": &cfg.Server.DefaultTimeout,
		} {
			if v, ok := srv[key]; ok {
				d, err := seconds(v, MinSeconds, MaxSeconds)
				if err != nil {
					return nil, cfgErr("server."+key, err.Error())
				}
				*dst = d
			}
		}
		if n, ok, err := IntSetting(srv, "server", "max_workspace_bytes", 1, 1<<50); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		} else if ok {
			cfg.Server.MaxWorkspaceBytes = n
		}
		if n, ok, err := IntSetting(srv, "server", "max_body_bytes", 1, 1<<40); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		} else if ok {
			cfg.Server.MaxBodyBytes = n
		}
		for key, dst := range map[string]*time.Duration{"header_timeout_s": &cfg.Server.HeaderTimeout, "body_timeout_s": &cfg.Server.BodyTimeout} {
			if d, ok, err := SecondsSetting(srv, "server", key, MinSeconds, 86400*time.Second); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrConfig, err)
			} else if ok {
				*dst = d
			}
		}
		for key, dst := range map[string]*int{"max_batch_parallel": &cfg.Server.MaxBatchParallel, "max_worker_parallel": &cfg.Server.MaxWorkerParallel} {
			if n, ok, err := IntSetting(srv, "server", key, 1, 1024); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrConfig, err)
			} else if ok {
				*dst = int(n)
			}
		}
		if v, ok := srv["data_dir"]; ok {
			s, ok := v.(string)
			if !ok {
				return nil, cfgErr("server.data_dir", "must be a string")
			}
			cfg.Server.DataDir = s
		}
	}
	if v, ok := raw["resources"]; ok {
		res, ok := v.(map[string]any)
		if !ok {
			return nil, cfgErr("resources", "must be an object")
		}
		for name, v := range res {
			path := "resources." + name
			sec, ok := v.(map[string]any)
			if !ok {
				return nil, cfgErr(path, "must be an object")
			}
			if _, ok := LookupBackend(name); !ok {
				return nil, cfgErr(path, fmt.Sprintf("unknown backend (registered: %v)", Backends()))
			}
			enabled := true
			if e, ok := sec["enabled"]; ok {
				b, ok := e.(bool)
				if !ok {
					return nil, cfgErr(path+".enabled", "must be a boolean")
				}
				enabled = b
			}
			if !enabled {
				continue
			}
			conf := map[string]any{}
			if c, ok := sec["config"]; ok && c != nil {
				m, ok := c.(map[string]any)
				if !ok {
					return nil, cfgErr(path+".config", "must be an object")
				}
				conf = m
			}
			cfg.Resources[name] = conf
		}
	}
	if v, ok := raw["apis"]; ok {
		apis, ok := v.(map[string]any)
		if !ok {
			return nil, cfgErr("apis", "must be an object")
		}
		for name, v := range apis {
			path := "apis." + name
			sec, ok := v.(map[string]any)
			if !ok {
				return nil, cfgErr(path, "must be an object")
			}
			if _, ok := LookupBackend(name); !ok {
				return nil, cfgErr(path, fmt.Sprintf("unknown backend (registered: %v)", Backends()))
			}
			if _, dup := cfg.Resources[name]; dup {
				return nil, cfgErr(path, "also configured under resources."+name)
			}
			if e, ok := sec["enabled"]; ok && e == false {
				continue
			}
			cfg.APIs[name] = sec
		}
	}
	if v, ok := raw["warmup"]; ok {
		w, ok := v.(map[string]any)
		if !ok {
			return nil, cfgErr("warmup", "must be an object")
		}
		if e, ok := w["enabled"]; ok {
			b, ok := e.(bool)
			if !ok {
				return nil, cfgErr("warmup.enabled", "must be a boolean")
			}
			cfg.Warmup.Enabled = b
		}
		if r, ok := w["resources"]; ok && r != nil {
			list, ok := r.([]any)
			if !ok {
				return nil, cfgErr("warmup.resources", "must be an array of backend names")
			}
			for i, e := range list {
				s, ok := e.(string)
				_, res := cfg.Resources[s]
				_, api := cfg.APIs[s]
				if !ok || !(res || api) {
					return nil, cfgErr(fmt.Sprintf("warmup.resources[%d]", i), fmt.Sprintf("%v is not an enabled backend", e))
				}
				cfg.Warmup.Resources = append(cfg.Warmup.Resources, s)
			}
		}
	}
	return cfg, nil
}

// sectionPath is the JSON path of backend name's section.
func (c *Config) sectionPath(name string) string {
	if _, ok := c.Resources[name]; ok {
		return "resources." + name + ".config"
	}
	return "apis." + name
}

// enabled lists the enabled backends, sorted.
func (c *Config) enabled() []string {
	var names []string
	for n := range c.Resources {
		names = append(names, n)
	}
	for n := range c.APIs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func cfgErr(path, reason string) error {
	return fmt.Errorf("%w: %w", ErrConfig, &ConfigError{Path: path, Reason: reason})
}

// expand replaces ${VAR} and ${VAR:-default} in every string of v, and
// turns json.Number into float64 as encoding/json would.
func expand(v any, path string, lookup func(string) (string, bool)) (any, error) {
	switch t := v.(type) {
	case string:
		if strings.Contains(varRef.ReplaceAllString(t, ""), "${") {
			return nil, cfgErr(trimDot(path), "malformed ${...} reference: use ${VAR} or ${VAR:-default}")
		}
		var bad string
		out := varRef.ReplaceAllStringFunc(t, func(m string) string {
			sub := varRef.FindStringSubmatch(m)
			if val, ok := lookup(sub[1]); ok && (val != "" || sub[2] == "") {
				return val
			}
			if sub[2] != "" {
				return sub[3]
			}
			if bad == "" {
				bad = sub[1]
			}
			return ""
		})
		if bad != "" {
			return nil, cfgErr(trimDot(path), "environment variable "+bad+" is not set")
		}
		return out, nil
	case json.Number:
		f, err := t.Float64()
		if err != nil {
			return nil, cfgErr(trimDot(path), "bad number "+t.String())
		}
		return f, nil
	case map[string]any:
		for k, e := range t {
			x, err := expand(e, path+"."+k, lookup)
			if err != nil {
				return nil, err
			}
			t[k] = x
		}
		return t, nil
	case []any:
		for i, e := range t {
			x, err := expand(e, fmt.Sprintf("%s[%d]", path, i), lookup)
			if err != nil {
				return nil, err
			}
			t[i] = x
		}
		return t, nil
	}
	return v, nil
}

func trimDot(p string) string {
	if len(p) > 0 && p[0] == '.' {
		return p[1:]
	}
	return p
}
