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

	"github.com/flockrun/flock/phases/settings"
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
// description, security, server.url/port/title) are accepted and ignored;
// any other key flock does not read is a warning naming the closest known
// key (Warnings), not an error, since AgentFlow ignores unknown keys.
type Config struct {
	Server ServerConfig
	// Resources are the enabled resources: name → config section.
	Resources map[string]map[string]any
	// APIs are the api groups: name → section.
	APIs   map[string]map[string]any
	Warmup WarmupConfig
	// Warnings name the keys of the file outside the backends' sections
	// that flock does not read, with the closest known key when one is
	// near (`unknown key "server.sesion_ttl" (did you mean
	// "server.session_ttl"?)`). The service adds those of each backend's
	// section (Service.Warnings).
	Warnings []string
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
	Enabled bool `json:"enabled"`
	// Resources lists the backends warmed at start; empty means all.
	Resources []string `json:"resources"`
}

// configFile is the config document as the settings decoder reads it
// (package phases/settings): the tags name the keys, give the defaults
// and bound the numbers; Validate checks the backends' names.
type configFile struct {
	Server    serverSection              `json:"server"`
	Resources map[string]resourceSection `json:"resources"`
	// APIs are kept raw: each backend decodes its own section.
	APIs   map[string]map[string]any `json:"apis"`
	Warmup WarmupConfig              `json:"warmup"`
	// Security is AgentFlow's (auth, rate_limit), never enforced there;
	// flock's listener has its own token.
	Security json.RawMessage `json:"security"`
}

// serverSection is the server section.
type serverSection struct {
	SessionTTL        *Seconds `json:"session_ttl" default:"300"`
	CleanupInterval   *Seconds `json:"cleanup_interval" default:"60"`
	DefaultTimeout    *Seconds `json:"default_timeout" default:"600"`
	DataDir           string   `json:"data_dir"`
	MaxWorkspaceBytes *Count   `json:"max_workspace_bytes" default:"2147483648" min:"1" max:"1125899906842624"` // DefaultMaxWorkspaceBytes, 1<<50
	MaxBodyBytes      *Count   `json:"max_body_bytes" min:"1" max:"1099511627776"`                              // 1<<40
	HeaderTimeout     *Seconds `json:"header_timeout_s" max:"86400"`
	BodyTimeout       *Seconds `json:"body_timeout_s" max:"86400"`
	MaxBatchParallel  *Count   `json:"max_batch_parallel" default:"8" min:"1" max:"1024"`
	MaxWorkerParallel *Count   `json:"max_worker_parallel" default:"16" min:"1" max:"1024"`
	// AgentFlow's listener settings: flock sandbox takes --addr, and the
	// title is FastAPI's.
	URL   json.RawMessage `json:"url"`
	Port  json.RawMessage `json:"port"`
	Title json.RawMessage `json:"title"`
}

// resourceSection is one entry of resources.
type resourceSection struct {
	// Enabled is true when absent.
	Enabled *bool          `json:"enabled"`
	Config  map[string]any `json:"config"`
	// AgentFlow's: the dotted Python class (flock's registry names the
	// backend) and a line for people.
	BackendClass json.RawMessage `json:"backend_class"`
	Description  json.RawMessage `json:"description"`
}

// Validate checks that each section names a registered backend, once,
// and that warmup lists enabled ones.
func (f *configFile) Validate() error {
	for _, name := range sortedKeys(f.Resources) {
		if _, ok := LookupBackend(name); !ok {
			return settings.Errorf("resources."+name, "unknown backend (registered: %v)", Backends())
		}
	}
	for _, name := range sortedKeys(f.APIs) {
		if _, ok := LookupBackend(name); !ok {
			return settings.Errorf("apis."+name, "unknown backend (registered: %v)", Backends())
		}
		if _, dup := f.Resources[name]; dup {
			return settings.Errorf("apis."+name, "also configured under resources.%s", name)
		}
	}
	for i, name := range f.Warmup.Resources {
		if !f.enabled(name) {
			return settings.Errorf(fmt.Sprintf("warmup.resources[%d]", i), "%s is not an enabled backend", name)
		}
	}
	return nil
}

// enabled reports whether backend name is configured and enabled.
func (f *configFile) enabled(name string) bool {
	if r, ok := f.Resources[name]; ok {
		return r.Enabled == nil || *r.Enabled
	}
	a, ok := f.APIs[name]
	return ok && a["enabled"] != false
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

// ParseConfig parses a config document; lookup resolves ${VAR}. An error
// wraps ErrConfig and, for a bad value, a *ConfigError naming its JSON
// path.
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
	if _, err := expand(raw, "", lookup); err != nil {
		return nil, err
	}
	doc, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	var f configFile
	if err := decodeSection(doc, &f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	s := f.Server
	cfg := &Config{
		Server: ServerConfig{
			SessionTTL: s.SessionTTL.Duration(), CleanupInterval: s.CleanupInterval.Duration(), DefaultTimeout: s.DefaultTimeout.Duration(),
			DataDir: s.DataDir, MaxWorkspaceBytes: s.MaxWorkspaceBytes.Int(),
			MaxBatchParallel: int(s.MaxBatchParallel.Int()), MaxWorkerParallel: int(s.MaxWorkerParallel.Int()),
		},
		Resources: map[string]map[string]any{},
		APIs:      map[string]map[string]any{},
		Warmup:    f.Warmup,
		Warnings:  keyWarnings(settings.KeysOf(f), doc, ""),
	}
	if s.MaxBodyBytes != nil {
		cfg.Server.MaxBodyBytes = s.MaxBodyBytes.Int()
	}
	if s.HeaderTimeout != nil {
		cfg.Server.HeaderTimeout = s.HeaderTimeout.Duration()
	}
	if s.BodyTimeout != nil {
		cfg.Server.BodyTimeout = s.BodyTimeout.Duration()
	}
	for name, r := range f.Resources {
		if f.enabled(name) {
			cfg.Resources[name] = r.Config
			if r.Config == nil {
				cfg.Resources[name] = map[string]any{}
			}
		}
	}
	for name, a := range f.APIs {
		if f.enabled(name) {
			if a == nil {
				a = map[string]any{}
			}
			cfg.APIs[name] = a
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
