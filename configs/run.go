package configs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/flockrun/flock/operations"
)

// RunSettings is the part of a run's settings that the engine and the
// handlers read. It mirrors the top level of settings.example.json.
type RunSettings struct {
	// WorkflowType names the workflow (Flock's key). A start request that
	// also names one in its "workflow" field (or flock's --workflow) must
	// name the same workflow, or the run is refused naming both.
	WorkflowType string `json:"workflow_type,omitempty"`
	// Limits cap the run's usage; exceeding one ends the run with
	// end_reason limit_tokens|limit_actions|limit_time|limit_cost.
	Limits operations.RunLimits `json:"limits,omitempty"`
	// Models declares model endpoints by name. A generate whose model is
	// not declared uses OPENAI_BASE_URL / OPENAI_API_KEY, or the simulated
	// provider when the name is "simulated".
	Models map[string]Model `json:"models,omitempty"`
	// Isolation asks for more isolation of the run's programs than the
	// server's policy gives (package isolation).
	Isolation Isolation `json:"isolation,omitempty"`
	// Sandbox is the deprecated name of Isolation, kept so that old
	// settings documents still work: ParseRunSettings moves it into
	// Isolation (it is nil afterwards) and refuses a document that sets
	// both; SettingsWarnings tells the run to use "isolation". The word
	// belongs to the AgentFlow-compatible sandbox service.
	Sandbox *Isolation `json:"sandbox,omitempty" settings:"renamed:isolation"`
	Python  Python     `json:"python,omitempty"`
	Bash    Bash       `json:"bash,omitempty"`
	Scoring Scoring    `json:"scoring,omitempty"`
	// SandboxURL is the base URL of a flock or AgentFlow sandbox service
	// (e.g. "http://127.0.0.1:18890") on which the run's sandbox
	// operations ("text2sql:execute", "bash:run"...) run, with the run's
	// id as worker_id. Empty: they run on the sandbox service the server
	// hosts (flock serve --sandbox-config); a run with sandbox operations
	// and neither is refused at start. Its host must be a public address
	// unless the operator allows it (server settings
	// sandbox_url_allow_hosts, sandbox_url_allow_private).
	SandboxURL string `json:"sandbox_url,omitempty"`
	// SandboxTokenEnv names the environment variable, of the server that
	// runs the run, holding the bearer token of the sandbox at SandboxURL
	// (a flock sandbox started with --auth-token). The token itself never
	// belongs in settings, which are stored with the run: it is read from
	// the environment at each call and sent only as "Authorization: Bearer".
	// Only a variable the operator lists in the server setting
	// sandbox_token_envs may be named; a run naming another, or a listed
	// one that is not set, is refused at start.
	SandboxTokenEnv string `json:"sandbox_token_env,omitempty"`
	// ReplayFrom names a recorded run whose generate results answer this
	// run's generates with the same request (same prompt → same recorded
	// reply, no tokens paid); a request the recorded run never made goes
	// to the live model. Usage counts replay_hits and replay_misses.
	ReplayFrom string `json:"replay_from,omitempty"`
}

// Model is one model endpoint.
type Model struct {
	// Provider is "openai" (any OpenAI-compatible endpoint, the default),
	// "simulated" (built-in deterministic policy) or "scripted" (replies
	// from Script).
	Provider string `json:"provider,omitempty"`
	// Name is the model name sent to the endpoint; defaults to the map key.
	Name string `json:"name,omitempty"`
	// BaseURL of the endpoint, e.g. "http://localhost:8000/v1". Default:
	// $OPENAI_BASE_URL, then the OpenAI API.
	BaseURL string `json:"base_url,omitempty"`
	// APIKeyEnv names the environment variable holding the key (never the key
	// itself). Default OPENAI_API_KEY.
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// InputPrice and OutputPrice are USD per million tokens.
	InputPrice  float64 `json:"input_price,omitempty"`
	OutputPrice float64 `json:"output_price,omitempty"`
	// RequestsPerMinute and MaxConcurrency limit this run's own calls
	// through this model; 0 means no limit of the run's own. They can only
	// tighten the operator's limits (the server settings' models), never
	// raise them, and they never slow other runs.
	RequestsPerMinute int `json:"requests_per_minute,omitempty"`
	MaxConcurrency    int `json:"max_concurrency,omitempty"`
	// TimeoutS bounds one HTTP request (default 600).
	TimeoutS float64 `json:"timeout_s,omitempty"`
	// MaxRetries bounds retries on 429/5xx/timeouts (default 6).
	MaxRetries *int `json:"max_retries,omitempty"`
	// MaxRetryWaitS bounds each wait of a generate through this model: a
	// retry's backoff, the endpoint's Retry-After and the wait for a
	// requests_per_minute token (default 60; 0 means the default). A
	// Retry-After or token wait longer than this fails the generate at once,
	// naming the model, the wait asked and this setting.
	MaxRetryWaitS float64 `json:"max_retry_wait_s,omitempty"`
	// Vision declares that the model accepts images (the OpenAI wire's
	// image_url content parts): a tool's screenshot (vm:screenshot) then
	// reaches it as an image. Without it the model gets a short text
	// placeholder instead.
	Vision bool `json:"vision,omitempty"`
	// TokenIDs asks the endpoint, on every call through this model (the
	// run's generates and an external agent's gateway calls), for the
	// prompt's and the completion's token ids: return_token_ids, which
	// vLLM and SGLang answer with prompt_token_ids and token_ids. The
	// results and episode steps then carry them. An endpoint without the
	// field (OpenAI's API) may refuse requests that have it.
	TokenIDs bool `json:"token_ids,omitempty"`
	// Logprobs asks, on every call through this model, for the log
	// probability of each completion token; TopLogprobs > 0 also for that
	// many alternatives per token (and implies Logprobs).
	Logprobs    bool `json:"logprobs,omitempty"`
	TopLogprobs int  `json:"top_logprobs,omitempty"`
	// Script is the JSONL file of replies for the scripted provider:
	// relative to the run's work directory, and beneath it or a read root
	// of the server (see package handlers/files).
	Script string `json:"script,omitempty"`
	// API is the endpoint's API flock calls: "chat_completions" (POST
	// /chat/completions, the default, which every OpenAI-compatible
	// endpoint has) or "responses" (POST /responses, OpenAI's Responses
	// API, for an endpoint that has one). Either way a call is journaled
	// as the same generate.
	API string `json:"api,omitempty"`
}

// Model.API values.
const (
	APIChatCompletions = "chat_completions"
	APIResponses       = "responses"
)

// Isolation selects how bash and python are isolated from the host (see
// package isolation for what each kind does and does not protect).
type Isolation struct {
	// Kind is "bwrap" or "none"; unset, the server's isolation policy
	// decides (bwrap with the network where bwrap runs, by default). A run
	// may ask for bwrap under any policy but for none only where the
	// policy does not isolate.
	Kind string `json:"kind,omitempty"`
	// Network allows network access inside bwrap when Kind is "bwrap".
	Network bool `json:"network,omitempty"`
	// HostTmp shares the host's /tmp, writable, instead of a private one.
	// Only the operator's default isolation sets it (isolation.Policy);
	// settings cannot.
	HostTmp bool `json:"-"`
}

// Python configures the python operation.
type Python struct {
	// Interpreter is the python binary; default: the first real python3
	// found (pyenv shims resolved).
	Interpreter string `json:"interpreter,omitempty"`
	// TimeoutS is the default timeout (default 600). A workflow's own
	// per-command timeout wins over it (react's tool_timeout_s); triframe
	// and modular, whose "timeout" times every command, and rollout, which
	// runs no python, refuse it at start.
	TimeoutS float64 `json:"timeout_s,omitempty"`
}

// Bash configures the bash operation.
type Bash struct {
	// TimeoutS is the default timeout (default 600). A workflow's own
	// per-command timeout wins over it (react's tool_timeout_s, script's
	// timeout_s); triframe and modular, whose "timeout" times every
	// command, and rollout, whose commands are verifiers timed by
	// verifier.timeout_s, refuse it at start.
	TimeoutS float64 `json:"timeout_s,omitempty"`
	// OutputLimit caps each stream in bytes, head and tail kept (default
	// 100000), for bash and python. It is what the journal keeps; a
	// workflow's output_limit then clips what the model is shown.
	OutputLimit int `json:"output_limit,omitempty"`
}

// Scoring configures score and get_task.
type Scoring struct {
	// Command is run in the work directory by score; its last line is
	// {"score": x, "message": "..."} or a number.
	Command string `json:"command,omitempty"`
	// TimeoutS bounds the scorer (default 300).
	TimeoutS float64 `json:"timeout_s,omitempty"`
	// Intermediate tells the agent it may score before submitting.
	Intermediate   bool `json:"intermediate,omitempty"`
	VisibleToAgent bool `json:"visible_to_agent,omitempty"`
}

// Defaults for run settings.
const (
	DefaultBashTimeoutS    = 600
	DefaultBashOutputLimit = 100_000
	DefaultPythonTimeoutS  = 600
	DefaultScoringTimeoutS = 300
	DefaultModelTimeoutS   = 600
	DefaultModelRetries    = 6
	// DefaultModelMaxRetryWaitS is models.NAME.max_retry_wait_s's default.
	DefaultModelMaxRetryWaitS = 60
)

// ApplyDefaults fills zero fields with their defaults.
func (s *RunSettings) ApplyDefaults() {
	if s.Bash.TimeoutS == 0 {
		s.Bash.TimeoutS = DefaultBashTimeoutS
	}
	if s.Bash.OutputLimit == 0 {
		s.Bash.OutputLimit = DefaultBashOutputLimit
	}
	if s.Python.TimeoutS == 0 {
		s.Python.TimeoutS = DefaultPythonTimeoutS
	}
	if s.Scoring.TimeoutS == 0 {
		s.Scoring.TimeoutS = DefaultScoringTimeoutS
	}
	for name, m := range s.Models {
		if m.Name == "" {
			m.Name = name
		}
		if m.Provider == "" {
			m.Provider = "openai"
		}
		if m.APIKeyEnv == "" && m.Provider == "openai" {
			m.APIKeyEnv = "OPENAI_API_KEY"
		}
		if m.TimeoutS == 0 {
			m.TimeoutS = DefaultModelTimeoutS
		}
		if m.MaxRetries == nil {
			n := DefaultModelRetries
			m.MaxRetries = &n
		}
		if m.MaxRetryWaitS == 0 {
			m.MaxRetryWaitS = DefaultModelMaxRetryWaitS
		}
		s.Models[name] = m
	}
}

// Validate reports the first invalid field by its JSON path.
func (s *RunSettings) Validate() error {
	l := s.Limits
	switch {
	case l.Tokens < 0:
		return fieldErr("limits.tokens", "must be >= 0")
	case l.Actions < 0:
		return fieldErr("limits.actions", "must be >= 0")
	case l.Seconds < 0:
		return fieldErr("limits.seconds", "must be >= 0")
	case l.Cost < 0:
		return fieldErr("limits.cost", "must be >= 0")
	case !validIsolationKind(s.Isolation.Kind):
		return fieldErr("isolation.kind", fmt.Sprintf("%q is not one of none, bwrap", s.Isolation.Kind))
	case s.Sandbox != nil && !validIsolationKind(s.Sandbox.Kind):
		return fieldErr("sandbox.kind", fmt.Sprintf("%q is not one of none, bwrap", s.Sandbox.Kind))
	case s.Bash.TimeoutS < 0:
		return fieldErr("bash.timeout_s", "must be >= 0")
	case s.Bash.OutputLimit < 0:
		return fieldErr("bash.output_limit", "must be >= 0")
	case s.Python.TimeoutS < 0:
		return fieldErr("python.timeout_s", "must be >= 0")
	case s.Scoring.TimeoutS < 0:
		return fieldErr("scoring.timeout_s", "must be >= 0")
	}
	names := make([]string, 0, len(s.Models))
	for n := range s.Models {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		m := s.Models[n]
		p := "models." + n
		switch m.Provider {
		case "", "openai", "simulated", "scripted":
		default:
			return fieldErr(p+".provider", fmt.Sprintf("%q is not one of openai, simulated, scripted", m.Provider))
		}
		if m.Provider == "scripted" && m.Script == "" {
			return fieldErr(p+".script", "required for the scripted provider")
		}
		if m.InputPrice < 0 || m.OutputPrice < 0 {
			return fieldErr(p+".input_price", "prices must be >= 0")
		}
		if m.RequestsPerMinute < 0 {
			return fieldErr(p+".requests_per_minute", "must be >= 0")
		}
		if m.MaxConcurrency < 0 {
			return fieldErr(p+".max_concurrency", "must be >= 0")
		}
		if m.TopLogprobs < 0 {
			return fieldErr(p+".top_logprobs", "must be >= 0")
		}
		switch m.API {
		case "", APIChatCompletions, APIResponses:
		default:
			return fieldErr(p+".api", fmt.Sprintf("%q is not %s or %s", m.API, APIChatCompletions, APIResponses))
		}
		if m.MaxRetryWaitS < 0 || math.IsNaN(m.MaxRetryWaitS) || math.IsInf(m.MaxRetryWaitS, 0) {
			return fieldErr(p+".max_retry_wait_s", "must be a number of seconds >= 0")
		}
		if strings.HasPrefix(m.APIKeyEnv, "sk-") {
			return fieldErr(p+".api_key_env", "must name an environment variable, not hold the key")
		}
	}
	if s.SandboxTokenEnv != "" {
		// The value is never quoted: it may be the token itself.
		if !envName.MatchString(s.SandboxTokenEnv) {
			return fieldErr("sandbox_token_env", "must name an environment variable (letters, digits and _), not hold the token")
		}
		if s.SandboxURL == "" {
			return fieldErr("sandbox_token_env", "is set but sandbox_url is not: the token is only sent to the sandbox at sandbox_url")
		}
	}
	return nil
}

// envName is the form of an environment variable's name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func validIsolationKind(kind string) bool {
	return kind == "" || kind == "none" || kind == "bwrap"
}

// ParseRunSettings decodes the common settings from a run's settings
// document, applies defaults and validates. Unknown keys are ignored here
// (they belong to the workflow). The deprecated "sandbox" is moved into
// Isolation; a document that sets both "sandbox" and "isolation" is
// refused, naming both.
func ParseRunSettings(doc json.RawMessage) (*RunSettings, error) {
	s := &RunSettings{}
	if len(bytes.TrimSpace(doc)) > 0 && string(bytes.TrimSpace(doc)) != "null" {
		if err := json.Unmarshal(doc, s); err != nil {
			return nil, fmt.Errorf("%w: %s", ErrInvalid, describeJSONError(err))
		}
	}
	// The checks below read the top-level keys, decoded once; a malformed
	// document was reported by the typed decode above.
	var top map[string]json.RawMessage
	if json.Unmarshal(doc, &top) == nil {
		if err := rejectInlineKeys(doc, top); err != nil {
			return nil, err
		}
		if err := checkSandboxAlias(top); err != nil {
			return nil, err
		}
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.Sandbox != nil {
		s.Isolation, s.Sandbox = *s.Sandbox, nil
	}
	s.ApplyDefaults()
	return s, nil
}

// checkSandboxAlias refuses a document that sets both "isolation" and
// its deprecated name "sandbox" (even to null or {}): which one wins
// would be a guess.
func checkSandboxAlias(top map[string]json.RawMessage) error {
	_, hasSandbox := top["sandbox"]
	_, hasIsolation := top["isolation"]
	if hasSandbox && hasIsolation {
		return fieldErr("sandbox", `both "isolation" and its deprecated name "sandbox" are set; keep only "isolation"`)
	}
	return nil
}

// rejectInlineKeys refuses API keys written into a settings document:
// settings are stored with the run, and keys must never reach the store.
// top is doc's top level.
func rejectInlineKeys(doc json.RawMessage, top map[string]json.RawMessage) error {
	// Decoded as the typed decode does (its key matched case-insensitively).
	var typed struct {
		Models map[string]map[string]json.RawMessage `json:"models"`
	}
	if json.Unmarshal(doc, &typed) != nil {
		return nil // the typed decode reports malformed documents
	}
	names := make([]string, 0, len(typed.Models))
	for n := range typed.Models {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, k := range []string{"api_key", "key", "token", "authorization"} {
			if _, ok := typed.Models[n][k]; ok {
				return fieldErr("models."+n+"."+k, "API keys do not belong in settings (they are stored with the run): export the key and name the variable in api_key_env")
			}
		}
	}
	for _, k := range []string{"sandbox_token", "sandbox_auth_token", "sandbox_api_key"} {
		if _, ok := top[k]; ok {
			return fieldErr(k, "tokens do not belong in settings (they are stored with the run): export the token and name the variable in sandbox_token_env")
		}
	}
	return nil
}
