package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases/settings"
)

// Defaults of the config that code reads; the others (AgentFlow's
// dataclass defaults, §1.9, plus flock's own) are the default tags of
// Config.
const (
	// DefaultModel is model_name's default.
	DefaultModel = "gpt-4.1-2025-04-14"
	// DefaultMinDepth is min_depth's default, unless max_depth is less.
	DefaultMinDepth = 2
)

// Proposal formats.
const (
	// FormatTools offers the tools to the model natively (OpenAI tools);
	// the intent is the reply's text.
	FormatTools = "tools"
	// FormatXML asks for AgentFlow's <intent>, <tool_name> and <parameters>
	// tags in the reply's text.
	FormatXML = "xml"
)

// Config is a synthesis config: AgentFlow's SynthesisConfig keys as they
// are (§1.9), plus flock's own. Parse applies the defaults and validates;
// every field below is documented with its default.
type Config struct {
	// SeedsFile is the seeds file (JSONL {content, kwargs?}, a JSON list,
	// or plain text lines). Relative to the run's work directory (flock
	// synthesize resolves it against the config file first). Seeds, when
	// set, gives the seeds inline instead (strings or {content, kwargs}).
	SeedsFile string          `json:"seeds_file,omitempty"`
	Seeds     json.RawMessage `json:"seeds,omitempty"`
	// OutputDir receives synthesized_qa.jsonl, trajectories.jsonl,
	// trees.jsonl, seeds_done.jsonl and summary.json. Required.
	OutputDir string `json:"output_dir,omitempty"`
	// AvailableTools are the sandbox tools the sampler may use: full names
	// ("rag:search") or "resource:*" wildcards, resolved against the
	// sandbox's registry when the run starts (an unknown name refuses it).
	AvailableTools []string `json:"available_tools,omitempty"`
	// ModelName is the model of sampling and QA (default
	// "gpt-4.1-2025-04-14"); with BaseURL and APIKey ("${VAR}" only: flock
	// stores no keys) it declares an OpenAI-compatible endpoint unless
	// models already declares it.
	ModelName string `json:"model_name,omitempty" default:"gpt-4.1-2025-04-14"`
	BaseURL   string `json:"base_url,omitempty"`
	APIKey    string `json:"api_key,omitempty"`
	// Tree shape (defaults 5, 2, 3): a node below MaxDepth gets
	// BranchingFactor children while its depth < DepthThreshold, else one.
	MaxDepth        int  `json:"max_depth,omitempty" default:"5" min:"1" max:"50"`
	BranchingFactor int  `json:"branching_factor,omitempty" default:"2" min:"1" max:"16"`
	DepthThreshold  *int `json:"depth_threshold,omitempty" default:"3" min:"0"`
	// Selection (defaults 2, 3, 0.7): paths of depth >= MinDepth, at most
	// MaxSelectedTraj per seed, none more similar than
	// PathSimilarityThreshold to one picked before.
	MinDepth                int      `json:"min_depth,omitempty"`
	MaxSelectedTraj         int      `json:"max_selected_traj,omitempty" default:"3" min:"1"`
	PathSimilarityThreshold *float64 `json:"path_similarity_threshold,omitempty" default:"0.7" min:"0" max:"1"`
	// SelectionWeights weigh the score's depth, richness and diversity
	// parts (default 40, 30, 30, AgentFlow's).
	SelectionWeights *Weights `json:"selection_weights,omitempty" default:"{\"depth\": 40, \"richness\": 30, \"diversity\": 30}"`
	// NumberOfSeed limits the seeds processed (0: all).
	NumberOfSeed int `json:"number_of_seed,omitempty" min:"0"`
	// Prompting. SamplingTips and SynthesisTips are a string or a list of
	// strings (joined with newlines).
	SeedDescription string          `json:"seed_description,omitempty"`
	SamplingTips    json.RawMessage `json:"sampling_tips,omitempty"`
	SynthesisTips   json.RawMessage `json:"synthesis_tips,omitempty"`
	QAExamples      []QAExample     `json:"qa_examples,omitempty"`
	// SandboxServerURL is a remote (flock or AgentFlow) sandbox; empty
	// means the sandbox the server hosts in-process (flock serve
	// --sandbox-config, or flock synthesize's sandbox_config_path).
	SandboxServerURL string `json:"sandbox_server_url,omitempty"`
	// SandboxConfigPath is the sandbox-server config flock synthesize
	// hosts in-process when SandboxServerURL is empty.
	SandboxConfigPath string `json:"sandbox_config_path,omitempty"`
	// SandboxTimeout is each tool call's timeout in seconds (default 120).
	SandboxTimeout float64 `json:"sandbox_timeout,omitempty" default:"120" min:"0"`
	// Accepted AgentFlow keys with nothing to do in flock: sessions are
	// created per branch on first use, and the sandbox is started by the
	// server (or flock synthesize), not by the pipeline.
	ResourceTypes       []string        `json:"resource_types,omitempty"`
	ResourceInitConfigs json.RawMessage `json:"resource_init_configs,omitempty"`
	SandboxAutoStart    *bool           `json:"sandbox_auto_start,omitempty"`

	// MaxConcurrency caps the model and tool calls in flight across all
	// seeds (default 16); see the package doc for how.
	MaxConcurrency int `json:"max_concurrency,omitempty" default:"16" min:"1"`
	// MaxRetries bounds QA attempts per selected path (default 3).
	MaxRetries int `json:"max_retries,omitempty" default:"3" min:"1"`
	// MaxReasks bounds the re-asks of one proposal that was a duplicate
	// action or did not parse (default 2); then the branch ends.
	MaxReasks *int `json:"max_reasks,omitempty" default:"2" min:"0" max:"10"`
	// ProposalFormat is "tools" (native tool calls, default) or "xml"
	// (AgentFlow's tags). Replies are parsed both ways either way.
	ProposalFormat string `json:"proposal_format,omitempty" default:"tools" enum:"tools,xml"`
	// Temperature of proposals (default 0.7; QA attempts add 0.1 each).
	Temperature *float64 `json:"temperature,omitempty" default:"0.7" min:"0" max:"2"`
	// ObservationChars cuts observations in proposal prompts (default
	// 500; QA prompts show 800, package qa's).
	ObservationChars int `json:"observation_chars,omitempty" default:"500" min:"0"`
	// MinHops is the fewest reasoning steps a QA may have (default 3).
	MinHops int `json:"min_hops,omitempty" default:"3" min:"1"`
	// ClosedBook turns on the closed-book filter: a model that sees no
	// trajectory must fail to answer the question (default off).
	// ClosedBookModel is that model (default ModelName).
	ClosedBook      bool   `json:"closed_book,omitempty"`
	ClosedBookModel string `json:"closed_book_model,omitempty"`

	// Limits is the budget of the whole synthesis (tokens, actions, cost,
	// seconds), flock's common "limits". The synthesis keeps within it
	// itself, so that it always ends with its summary: each lane gets an
	// equal share, each seed run its lane's remaining share as its
	// limits (with SeedLimits, the smaller of the two), and a lane whose
	// share is spent starts no more seeds (listed in the summary with
	// reason budget_spent; a re-run tries them again). Limits are checked
	// between steps: the step that crosses one finishes.
	Limits operations.RunLimits `json:"limits,omitempty"`
	// SeedLimits caps each seed's run (tokens, actions, seconds, cost): a
	// seed over one ends with end_reason limit_* and is not marked done (a
	// re-run tries it again).
	SeedLimits operations.RunLimits `json:"seed_limits,omitempty"`
	// Models declares model endpoints (see configs.RunSettings).
	Models json.RawMessage `json:"models,omitempty"`
}

// Weights weigh the parts of a path's score.
type Weights struct {
	Depth     float64 `json:"depth" min:"0"`
	Richness  float64 `json:"richness" min:"0"`
	Diversity float64 `json:"diversity" min:"0"`
}

// QAExample is one example QA shown to the synthesizer.
type QAExample struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// RunKeys are the keys flock's engine and handlers add to or read from a
// run's settings document besides the config's own (the sandbox handler
// writes sandbox_tools with the schemas of the resolved available_tools).
var RunKeys = []string{"workflow_type", "sandbox_tools", "sandbox_url", "sandbox_token_env", "isolation", "python", "bash", "scoring", "sandbox"}

// Keys returns the config's top-level keys and RunKeys, sorted.
func Keys() []string {
	var keys []string
	t := reflect.TypeFor[Config]()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	keys = append(keys, RunKeys...)
	sort.Strings(keys)
	return keys
}

// Parse decodes a config document (JSON), refuses keys it does not know,
// at any depth (naming them, with the closest known key), applies the
// defaults and validates (package phases/settings). It does no I/O and
// expands no variables: a "${...}" left in a value other than api_key is
// an error naming the key (flock synthesize expands them from the
// environment before; see Expand).
func Parse(doc json.RawMessage) (Config, error) {
	var c Config
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(doc, &raw); err != nil || raw == nil {
		return c, fmt.Errorf("%w: the config must be a JSON object", ErrConfig)
	}
	for _, k := range sortedKeys(raw) {
		if k != "api_key" && k != "models" && bytes.Contains(raw[k], []byte("${")) {
			return c, fmt.Errorf("%w: %s holds an unexpanded ${...} reference (flock synthesize expands them from the environment; over HTTP send the value)", ErrConfig, k)
		}
	}
	if err := (settings.Decoder{Strict: true, Allow: RunKeys}).Decode(doc, &c); err != nil {
		return c, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return c, nil
}

// Normalize gives the defaults that depend on other keys: min_depth at
// most max_depth, closed_book_model the model.
func (c *Config) Normalize() error {
	if c.MinDepth == 0 {
		c.MinDepth = min(DefaultMinDepth, c.MaxDepth)
	}
	if c.ClosedBookModel == "" {
		c.ClosedBookModel = c.ModelName
	}
	return nil
}

// Validate checks what the tags of a config whose defaults are applied
// cannot: the seeds, output_dir and tools given, min_depth within
// max_depth, the tools' names, the tips, api_key and the sandbox's URL.
func (c *Config) Validate() error {
	switch {
	case c.SeedsFile == "" && len(c.Seeds) == 0:
		return settings.Errorf("seeds_file", "required (or seeds, a list given inline)")
	case c.SeedsFile != "" && len(c.Seeds) > 0:
		return settings.Errorf("", "seeds_file and seeds both given: give one")
	case strings.TrimSpace(c.OutputDir) == "":
		return settings.Errorf("output_dir", "required")
	case len(c.AvailableTools) == 0:
		return settings.Errorf("available_tools", "required: the sandbox tools to explore with (\"rag:search\", \"text2sql:*\")")
	case c.MinDepth < 1 || c.MinDepth > c.MaxDepth:
		return settings.Errorf("min_depth", "must be between 1 and max_depth (%d)", c.MaxDepth)
	}
	for i, t := range c.AvailableTools {
		r, tool, ok := strings.Cut(t, ":")
		if !ok || r == "" || tool == "" {
			return settings.Errorf(fmt.Sprintf("available_tools[%d]", i), "%q is not a sandbox tool \"resource:tool\" or \"resource:*\"", t)
		}
	}
	if _, err := Tips(c.SamplingTips); err != nil {
		return settings.At("sampling_tips", err)
	}
	if _, err := Tips(c.SynthesisTips); err != nil {
		return settings.At("synthesis_tips", err)
	}
	if _, err := keyEnv(c.APIKey); err != nil {
		return err
	}
	if u := c.SandboxServerURL; u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return settings.Errorf("sandbox_server_url", "%q is not an http:// or https:// URL", u)
	}
	return nil
}

// DepthThresholdValue returns depth_threshold.
func (c *Config) DepthThresholdValue() int { return *c.DepthThreshold }

// Children is the number of children a node of depth d gets: 0 at
// max_depth, branching_factor while d < depth_threshold, else 1.
func (c *Config) Children(d int) int {
	switch {
	case d >= c.MaxDepth:
		return 0
	case d < *c.DepthThreshold:
		return c.BranchingFactor
	default:
		return 1
	}
}

// Width is the most nodes one level of a tree holds.
func (c *Config) Width() int {
	w, n := 1, 1
	for d := 0; d < c.MaxDepth; d++ {
		n *= c.Children(d)
		if n > w {
			w = n
		}
	}
	return w
}

// TreeNodes is the number of action nodes of a full tree (the root
// excluded): 2+4+8+8+8 = 30 with the defaults.
func (c *Config) TreeNodes() int {
	total, n := 0, 1
	for d := 0; d < c.MaxDepth; d++ {
		n *= c.Children(d)
		total += n
	}
	return total
}

// Tips joins a tips value: a string, or a list of strings joined with
// newlines.
func Tips(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var l []string
	if err := json.Unmarshal(raw, &l); err != nil {
		return "", fmt.Errorf("want a string or a list of strings")
	}
	return strings.Join(l, "\n"), nil
}

var envRef = regexp.MustCompile(`^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))$`)

// keyEnv returns the variable api_key names; the error never quotes the
// value (it may be a key).
func keyEnv(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	m := envRef.FindStringSubmatch(strings.TrimSpace(v))
	if m == nil {
		return "", settings.Errorf("api_key", "flock takes no API key in a config (configs are stored with the run); "+
			"put the key in an environment variable and write api_key: \"${VAR}\"")
	}
	return m[1] + m[2], nil
}

// ModelsDoc returns the models section of the seed runs' settings: the
// config's models, plus model_name declared as an OpenAI-compatible
// endpoint when base_url or api_key is given and models does not declare
// it already.
func (c *Config) ModelsDoc() (json.RawMessage, error) {
	models := map[string]json.RawMessage{}
	if m := bytes.TrimSpace(c.Models); len(m) > 0 && string(m) != "null" {
		if err := json.Unmarshal(m, &models); err != nil {
			return nil, fmt.Errorf("%w: models: %v", ErrConfig, err)
		}
	}
	if _, ok := models[c.ModelName]; !ok && (c.BaseURL != "" || c.APIKey != "") {
		env, err := keyEnv(c.APIKey)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		e := map[string]string{"provider": "openai"}
		if c.BaseURL != "" {
			e["base_url"] = c.BaseURL
		}
		if env != "" {
			e["api_key_env"] = env
		}
		b, _ := json.Marshal(e)
		models[c.ModelName] = b
	}
	if len(models) == 0 {
		return nil, nil
	}
	return json.Marshal(models)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Expand replaces ${VAR} and $VAR references in the document's string
// values from lookup, except in api_key (which names the variable for the
// model's handler and is never expanded into the config). A reference to
// an unset variable is an error naming the key and the variable; "$$" is
// a literal "$".
func Expand(doc json.RawMessage, lookup func(string) (string, bool)) (json.RawMessage, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var v map[string]any
	if err := json.Unmarshal(doc, &v); err != nil || v == nil {
		return nil, fmt.Errorf("%w: the config must be a JSON object", ErrConfig)
	}
	for k, val := range v {
		if k == "api_key" {
			continue
		}
		x, err := expandValue(val, k, lookup)
		if err != nil {
			return nil, err
		}
		v[k] = x
	}
	return json.Marshal(v)
}

var refPattern = regexp.MustCompile(`\$\$|\$\{([^}]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)
var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func expandValue(v any, path string, lookup func(string) (string, bool)) (any, error) {
	switch x := v.(type) {
	case string:
		var err error
		out := refPattern.ReplaceAllStringFunc(x, func(m string) string {
			if m == "$$" {
				return "$"
			}
			name := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(m, "${"), "$"), "}")
			if !varName.MatchString(name) {
				if err == nil {
					err = fmt.Errorf("%w: %s: malformed reference %q", ErrConfig, path, m)
				}
				return m
			}
			val, ok := lookup(name)
			if !ok && err == nil {
				err = fmt.Errorf("%w: %s: environment variable %s is not set", ErrConfig, path, name)
			}
			return val
		})
		return out, err
	case []any:
		for i := range x {
			y, err := expandValue(x[i], fmt.Sprintf("%s[%d]", path, i), lookup)
			if err != nil {
				return nil, err
			}
			x[i] = y
		}
		return x, nil
	case map[string]any:
		for k := range x {
			y, err := expandValue(x[k], path+"."+k, lookup)
			if err != nil {
				return nil, err
			}
			x[k] = y
		}
		return x, nil
	}
	return v, nil
}
