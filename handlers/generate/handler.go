package generate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/handlers/generate/simulated"
	"github.com/flockrun/flock/internal/keyring"
	"github.com/flockrun/flock/operations"
)

// Modes accepted in Options.Mode.
const (
	// ModeLive sends generates to the provider each model declares.
	ModeLive = "live"
	// ModeSimulated answers every generate of an openai-provider model with
	// the built-in simulated policy (scripted models keep their script: they
	// need no network either).
	ModeSimulated = "simulated"
)

// Provider names (configs.Model.Provider).
const (
	ProviderOpenAI    = "openai"
	ProviderSimulated = "simulated"
	ProviderScripted  = "scripted"
)

// Environment variables read for models that are not declared in settings
// (and for declared ones that leave base_url / api_key_env empty).
const (
	EnvBaseURL = "OPENAI_BASE_URL"
	EnvAPIKey  = "OPENAI_API_KEY"
	// DefaultBaseURL is used when neither the model nor the environment names one.
	DefaultBaseURL = "https://api.openai.com/v1"
)

// Options configures a Handler. The zero value is usable: live mode,
// os.Getenv, a fresh HTTP transport, slog.Default and 1 s..60 s backoff.
type Options struct {
	// Mode is ModeLive (default) or ModeSimulated.
	Mode string
	// Getenv reads API keys and OPENAI_BASE_URL; default os.Getenv.
	Getenv func(string) string
	// HTTPClient is the client whose Transport carries requests to
	// OpenAI-compatible endpoints (proxies, TLS). Its Timeout is ignored:
	// every request is bounded by its model's timeout_s through the context.
	// Default: a client over a clone of http.DefaultTransport.
	HTTPClient *http.Client
	// Logger receives retry warnings (API keys are scrubbed); default slog.Default().
	Logger *slog.Logger
	// BackoffBase is the first retry delay before jitter (default 1 s); each
	// further retry doubles it up to BackoffMax (default 60 s). A Retry-After
	// header from the endpoint takes precedence. Every wait is further
	// bounded by the model's max_retry_wait_s and the run's remaining time
	// (see the package doc).
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// ModelLimits are the operator's limits per model name or base URL
	// (configs.Server.Models), shared by all runs; a run's own
	// requests_per_minute and max_concurrency can only tighten them for
	// that run. Nil: no shared limits.
	ModelLimits map[string]configs.ModelLimits
	// Journal, when set, lets the scripted provider rebuild a run's place
	// in its script from the run's journal after a restart (the cursor is
	// otherwise in memory only).
	Journal handlers.Journal
	// Open opens a scripted model's script for the run working in workDir
	// (empty at the start-up check). The server sets it to files.Access.Open,
	// so that a script resolves like any file a run reads: relative to the
	// work directory, beneath it or a read root. Nil opens the path as is
	// (relative to the process working directory).
	Open func(workDir, path string) (*os.File, error)
}

// Handler runs generate operations. It is safe for concurrent use by many
// runs; its rate limiters, HTTP clients and scripted cursors are shared by
// all of them.
type Handler struct {
	opts   Options
	getenv func(string) string
	log    *slog.Logger

	mu sync.Mutex
	// clients caches one go-openai client per (base URL, key env); guarded by mu.
	clients map[clientKey]*clientEntry
	// serverLimits indexes Options.ModelLimits; read-only.
	serverLimits serverLimits
	// shared holds the operator's limiters, created on first use; guarded by mu.
	shared map[sharedKey]*limiter
	// runLimiters holds each run's own limiters by model key; guarded by mu.
	runLimiters map[string]map[string]*limiter
	// transport is the shared, header-capturing transport; set once under mu.
	transport *captureTransport

	scripts *scripts
	replays *replays
	// notice is the shortest limiter wait announced through Env.Waiting
	// (waitingNotice; tests shorten it). Read-only after New.
	notice time.Duration
}

// New returns a Handler. It does no I/O: clients, limiters and scripts are
// created on first use.
func New(opts Options) *Handler {
	h := &Handler{}
	h.init(opts)
	return h
}

// init sets h up from opts, defaults applied; h must be unused.
func (h *Handler) init(opts Options) {
	if opts.Mode == "" {
		opts.Mode = ModeLive
	}
	if opts.BackoffBase <= 0 {
		opts.BackoffBase = time.Second
	}
	if opts.BackoffMax <= 0 {
		opts.BackoffMax = time.Minute
	}
	if opts.BackoffMax < opts.BackoffBase {
		opts.BackoffMax = opts.BackoffBase
	}
	h.opts = opts
	h.getenv = opts.Getenv
	h.log = opts.Logger
	h.clients = map[clientKey]*clientEntry{}
	h.serverLimits = newServerLimits(opts.ModelLimits)
	h.shared = map[sharedKey]*limiter{}
	h.runLimiters = map[string]map[string]*limiter{}
	h.scripts = newScripts()
	h.replays = newReplays()
	h.notice = waitingNotice
	if h.getenv == nil {
		h.getenv = os.Getenv
	}
	if h.log == nil {
		h.log = slog.Default()
	}
}

// Handle runs one generate operation. Failures (unknown model, missing key,
// endpoint errors after retries, malformed replies, an exhausted script) are
// reported in Result.Error, on one line that names the model and the
// endpoint's host, with Result.Code saying what kind of failure it is (see
// classify); the error text never contains an API key.
func (h *Handler) Handle(ctx context.Context, env handlers.Env, req operations.Request) (res operations.Result) {
	defer func() {
		if p := recover(); p != nil {
			res = operations.Failed(req, "generate: internal error: %v\n%s", p, debug.Stack())
		}
	}()
	g := operations.Generate.Params(req)
	if g == nil {
		return operations.Failed(req, "generate: %v", operations.ErrMissingParams)
	}
	m, err := h.resolve(env.Settings, g.Model)
	if err != nil {
		return operations.FailedWith(req, operations.CodeModelError, "generate: %v", err)
	}
	start := time.Now()
	var out *operations.GenerateResult
	replay := ""
	if src := replayFrom(env); src != "" {
		hit, ok, err := h.replays.reply(ctx, h.opts.Journal, src, env.RunID, env.WorkDir, env.OpID, g)
		if err != nil {
			return operations.Failed(req, "generate: %v", err)
		}
		if ok {
			hit.DurationMS = time.Since(start).Milliseconds()
			return operations.Result{Kind: operations.KindGenerate, Meta: req.Meta, Data: hit}
		}
		replay = operations.ReplayMiss
	}
	switch m.provider {
	case ProviderSimulated:
		outs := simulated.Reply(simulated.Input{Task: env.Task, Meta: req.Meta, Request: g})
		out = &operations.GenerateResult{Outputs: outs, Model: simulated.Model,
			Usage: operations.Usage{PromptTokens: estimatePrompt(g.Messages, g.Tools), CompletionTokens: estimateOutputs(outs)}}
	case ProviderScripted:
		out, err = h.scripts.reply(ctx, h.opts.Journal, h.opts.Open, env.WorkDir, env.RunID, env.OpID, m, g)
	default:
		out, err = h.callOpenAI(ctx, env, m, g)
	}
	if err != nil {
		return operations.FailedWith(req, failureCode(err), "%s", err.Error())
	}
	out.Usage.Cost = m.cost(out.Usage.PromptTokens, out.Usage.CompletionTokens)
	out.DurationMS = time.Since(start).Milliseconds()
	out.Replay = replay
	return operations.Result{Kind: operations.KindGenerate, Meta: req.Meta, Data: out}
}

// failureCode is the op's failure code for err: the code of an endpoint
// failure (callError), model_error for a live model without its key, none
// for anything else (a cancelled call, a scripted reply's error).
func failureCode(err error) operations.Code {
	var ce *callError
	switch {
	case errors.As(err, &ce):
		return ce.code
	case errors.Is(err, ErrMissingKey):
		return operations.CodeModelError
	}
	return ""
}

// replayFrom is the run's replay_from setting.
func replayFrom(env handlers.Env) string {
	if env.Settings == nil {
		return ""
	}
	return env.Settings.ReplayFrom
}

// CheckSettings reports, for the models a workflow will use, the problems
// that would make every generate fail: a live model whose API key variable
// is unset (the message names the variable, never a key) or a scripted
// model whose script cannot be read. The executor calls it at run start.
// All problems are reported, joined.
func (h *Handler) CheckSettings(s *configs.RunSettings, models []string) error {
	return h.checkSettings(s, models, "")
}

// checkSettings is CheckSettings for a run that will work in workDir
// (empty: unknown), whose absolute script paths resolve as the run's
// would (its grants included).
func (h *Handler) checkSettings(s *configs.RunSettings, models []string, workDir string) error {
	var errs []error
	seen := map[string]bool{}
	for _, name := range models {
		if seen[name] {
			continue
		}
		seen[name] = true
		m, err := h.resolve(s, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		switch m.provider {
		case ProviderOpenAI:
			if h.getenv(m.keyEnv) == "" {
				errs = append(errs, m.missingKey())
			}
		case ProviderScripted:
			if h.opts.Open != nil && !filepath.IsAbs(m.script) {
				break // relative to the run's work directory: checked on first use
			}
			if _, err := h.scripts.load(h.opts.Open, workDir, m.script); err != nil {
				errs = append(errs, fmt.Errorf("model %q: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// CloseRun forgets the scripted cursors and the own rate limiters of a run.
func (h *Handler) CloseRun(_ context.Context, runID string) {
	h.scripts.closeRun(runID)
	h.replays.closeRun(runID)
	h.closeRunLimiters(runID)
}

// Close releases idle HTTP connections. The handler stays usable.
func (h *Handler) Close() error {
	h.mu.Lock()
	t := h.transport
	h.mu.Unlock()
	if t != nil {
		if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
	}
	return nil
}

// model is a resolved model declaration.
type model struct {
	// key is the name the request used; name is sent to the endpoint.
	key, name, provider string
	baseURL, keyEnv     string
	inPrice, outPrice   float64
	rpm, maxConc        int
	timeout             time.Duration
	maxRetries          int
	script              string
	// maxRetryWait bounds each retry or rate-limit wait (max_retry_wait_s).
	maxRetryWait time.Duration
	// vision: the model accepts image content parts (configs.Model.Vision).
	vision bool
	// tokenIDs, logprobs and topLogprobs ask for token data on every call
	// (configs.Model.TokenIDs, Logprobs, TopLogprobs).
	tokenIDs, logprobs bool
	topLogprobs        int
	// responses: the endpoint is called with the Responses API
	// (configs.Model.API).
	responses bool
}

func (m *model) cost(prompt, completion int) float64 {
	return float64(prompt)*m.inPrice/1e6 + float64(completion)*m.outPrice/1e6
}

func (m *model) missingKey() error {
	return fmt.Errorf("model %q: %w", m.key, &missingKeyError{env: m.keyEnv})
}

// keySource says where the model's API key came from, for an error: the
// environment variable, or the config file of the command that started
// the run (a keyring name, which the user never set and cannot look up).
func (m *model) keySource() string {
	if keyring.IsName(m.keyEnv) {
		return "the API key given in the config file"
	}
	return "the API key in $" + m.keyEnv
}

type missingKeyError struct{ env string }

func (e *missingKeyError) Error() string {
	if keyring.IsName(e.env) {
		return "its API key was given in the config file of the command that started this run and is kept only in that command's memory; run that command again to resume the run"
	}
	return "environment variable " + e.env + " is not set"
}
func (e *missingKeyError) Unwrap() error { return ErrMissingKey }

// resolve applies the model rules: a declared model uses its declaration
// (defaults filled as configs.ApplyDefaults would); an undeclared
// "simulated" is the simulated provider; any other undeclared name is an
// openai model at $OPENAI_BASE_URL with $OPENAI_API_KEY. In simulated mode
// openai models become simulated.
func (h *Handler) resolve(s *configs.RunSettings, name string) (*model, error) {
	if strings.TrimSpace(name) == "" {
		return nil, ErrNoModel
	}
	var decl configs.Model
	declared := false
	if s != nil {
		decl, declared = s.Models[name]
	}
	m := &model{key: name, name: name, provider: ProviderOpenAI}
	switch {
	case declared:
		if decl.Provider != "" {
			m.provider = decl.Provider
		}
		if decl.Name != "" {
			m.name = decl.Name
		}
		m.baseURL, m.keyEnv = decl.BaseURL, decl.APIKeyEnv
		m.inPrice, m.outPrice = decl.InputPrice, decl.OutputPrice
		m.rpm, m.maxConc = decl.RequestsPerMinute, decl.MaxConcurrency
		m.timeout = time.Duration(decl.TimeoutS * float64(time.Second))
		m.maxRetries = configs.DefaultModelRetries
		if decl.MaxRetries != nil {
			m.maxRetries = max(0, *decl.MaxRetries)
		}
		m.script = decl.Script
		m.vision = decl.Vision
		m.tokenIDs, m.logprobs, m.topLogprobs = decl.TokenIDs, decl.Logprobs, decl.TopLogprobs
		m.responses = decl.API == configs.APIResponses
		m.maxRetryWait = time.Duration(decl.MaxRetryWaitS * float64(time.Second))
	case name == ProviderSimulated:
		m.provider = ProviderSimulated
	default:
		m.maxRetries = configs.DefaultModelRetries
	}
	switch m.provider {
	case ProviderOpenAI, ProviderSimulated, ProviderScripted:
	default:
		return nil, fmt.Errorf("model %q: unknown provider %q", name, m.provider)
	}
	if m.provider == ProviderScripted && m.script == "" {
		return nil, fmt.Errorf("model %q: %w: the scripted provider needs a script", name, ErrScript)
	}
	if m.provider == ProviderOpenAI && h.opts.Mode == ModeSimulated {
		m.provider = ProviderSimulated
	}
	if m.provider != ProviderOpenAI {
		return m, nil
	}
	if m.baseURL == "" {
		m.baseURL = h.getenv(EnvBaseURL)
	}
	if m.baseURL == "" {
		m.baseURL = DefaultBaseURL
	}
	m.baseURL = strings.TrimRight(m.baseURL, "/")
	if m.keyEnv == "" {
		m.keyEnv = EnvAPIKey
	}
	if m.timeout <= 0 {
		m.timeout = configs.DefaultModelTimeoutS * time.Second
	}
	if m.maxRetryWait <= 0 {
		m.maxRetryWait = configs.DefaultModelMaxRetryWaitS * time.Second
	}
	return m, nil
}

var (
	_ handlers.Handler   = (*Handler)(nil)
	_ handlers.Closer    = (*Handler)(nil)
	_ handlers.RunCloser = (*Handler)(nil)
)
