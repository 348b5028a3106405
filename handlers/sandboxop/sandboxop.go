package sandboxop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/internal/netguard"
	"github.com/flockrun/flock/operations"
	synthcfg "github.com/flockrun/flock/synthesis/config"
)

// ErrNoSandbox refuses a run that offers sandbox tools when the server
// hosts no sandbox service and the run names no sandbox_url.
var ErrNoSandbox = errors.New("sandbox: the run uses sandbox tools but the server hosts no sandbox service (flock serve --sandbox-config) and its settings set no sandbox_url")

// ErrUnknownTool refuses a run offering a sandbox tool the sandbox does
// not have.
var ErrUnknownTool = errors.New("sandbox: no such sandbox tool")

// ErrBadURL is a sandbox_url that is not an http(s) URL.
var ErrBadURL = errors.New("sandbox_url must be an http:// or https:// URL")

// ErrNoToken is a sandbox_token_env naming a variable that is not set (or
// empty) in the server's environment, among those the operator lists.
var ErrNoToken = errors.New("sandbox_token_env names an environment variable that is not set on the server")

// ErrTokenEnvNotAllowed is a sandbox_token_env naming a variable the
// operator does not list in the server setting sandbox_token_envs. Its
// message never says whether the variable is set.
var ErrTokenEnvNotAllowed = errors.New("sandbox_token_env names a variable the operator does not let runs name (server setting sandbox_token_envs)")

// ErrURLNotAllowed is a sandbox_url whose host is, or resolves to, an
// address that is not public (loopback, private, link-local...) and that
// the operator does not allow (server settings sandbox_url_allow_hosts,
// sandbox_url_allow_private).
var ErrURLNotAllowed = errors.New("sandbox_url is not allowed")

// ErrRefused is a 401 or 403 of the sandbox at sandbox_url: no token, or
// the wrong one.
var ErrRefused = errors.New("sandbox refused the call")

// markerDir is the directory of a run's work directory that remembers
// which resource types had a session, so that a resumed run knows when its
// session was lost.
const markerDir = ".sandbox-sessions"

// Handler runs sandbox operations on the hosted service or over HTTP.
type Handler struct {
	// svc is the sandbox the server hosts (app.Hosted), or nil.
	svc handlers.Sandbox
	// tokenEnvs are the variables a run's sandbox_token_env may name;
	// guard checks sandbox_url and every connection to it; client dials
	// through guard (the operator's server settings, set by Provision).
	tokenEnvs []string
	guard     *netguard.Policy
	client    *http.Client

	mu   sync.Mutex
	runs map[string]*runSessions // run id → its sessions
}

// runSessions are the sessions a run created, by worker and resource
// type, and where.
type runSessions struct {
	target handlers.Sandbox
	rts    map[workerRT]bool
}

// workerRT is one session of a run: its worker on the sandbox (the run id,
// or the run id and a named session) and its resource type.
type workerRT struct{ worker, rt string }

// sessionWorker is the worker id of the run's named session ("" the
// run's own).
func sessionWorker(runID, session string) string {
	if session == "" {
		return runID
	}
	return runID + "~" + session
}

// Provision takes the server's sandbox service, if it hosts one, and the
// operator's settings for sandbox_url and sandbox_token_env.
func (h *Handler) Provision(_ context.Context, deps handlers.Deps) error {
	h.svc = deps.Sandbox
	h.tokenEnvs = deps.Server.SandboxTokenEnvs
	g, err := netguard.NewClientPolicy(deps.Server.SandboxURLAllowHosts, deps.Server.SandboxURLAllowPrivate)
	if err != nil {
		return fmt.Errorf("server setting sandbox_url_allow_hosts: %w", err)
	}
	h.guard = g
	h.client = &http.Client{Transport: &http.Transport{
		// No proxy from the environment: the guard checks the address
		// actually dialled, which must be the sandbox's.
		Proxy:               nil,
		DialContext:         g.DialContext(&net.Dialer{Timeout: 30 * time.Second}),
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
	}}
	return nil
}

// ValidateRun checks sandbox_url and sandbox_token_env, and refuses a run
// whose settings offer a sandbox tool (a "resource:tool" name in the
// top-level tools list) when there is no sandbox to run it on.
func (h *Handler) ValidateRun(_ context.Context, run handlers.RunCheck) error {
	if run.Settings == nil {
		return nil
	}
	if u := run.Settings.SandboxURL; u != "" {
		if err := h.checkURL(context.Background(), u); err != nil {
			return err
		}
		_, err := h.token(run.Settings)
		return err
	}
	if h.svc == nil && usesSandboxTools(run.Raw) {
		return ErrNoSandbox
	}
	return nil
}

// checkURL refuses a sandbox_url that is not http(s), carries
// credentials, or names a host the operator's guard refuses.
func (h *Handler) checkURL(ctx context.Context, u string) error {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		if err == nil {
			u = p.Redacted()
		}
		return fmt.Errorf("%w, got %q", ErrBadURL, u)
	}
	if p.User != nil {
		return fmt.Errorf("%w without credentials in it (%s): name the environment variable holding the token in sandbox_token_env", ErrBadURL, p.Redacted())
	}
	if h.guard == nil {
		return fmt.Errorf("%w: the handler was not provisioned", ErrURLNotAllowed)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return blocked(h.guard.CheckURL(ctx, u), u)
}

// blocked turns a refusal of the guard into ErrURLNotAllowed naming the
// server settings that would allow it; other errors pass as they are.
func blocked(err error, u string) error {
	var be *netguard.BlockedError
	if !errors.As(err, &be) {
		return err
	}
	at := ""
	if be.Addr.IsValid() && be.Addr.String() != be.Host {
		at = " (" + be.Addr.String() + ")"
	}
	return fmt.Errorf("%w: %s: %s%s is not a public address (%s); the operator allows it by listing the host in the server setting sandbox_url_allow_hosts (or setting sandbox_url_allow_private)",
		ErrURLNotAllowed, redactURL(u), be.Host, at, be.Reason)
}

func redactURL(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Redacted()
	}
	return u
}

// PrepareRun fills in the settings key sandbox_tools with the schemas, from
// the sandbox's registry, of the sandbox tools named in the settings'
// top-level tools list (an agent's: react, triframe, modular), where the
// agent's phases read them. A name the sandbox does not know refuses the
// run. Settings without sandbox tools are returned as they are.
func (h *Handler) PrepareRun(ctx context.Context, run handlers.RunCheck) (json.RawMessage, error) {
	var doc map[string]json.RawMessage
	if json.Unmarshal(run.Raw, &doc) != nil {
		return run.Raw, nil
	}
	if run.Workflow == synthesisWorkflow {
		return h.prepareSynthesis(ctx, run, doc)
	}
	var names []string
	if json.Unmarshal(doc["tools"], &names) != nil {
		return run.Raw, nil
	}
	schemas := map[string]sandboxTool{}
	var t handlers.Sandbox
	for i, n := range names {
		if !isSandboxTool(n) {
			continue
		}
		if t == nil {
			var err error
			if t, err = h.target(handlers.Env{Settings: run.Settings}); err != nil {
				return nil, err
			}
		}
		info, ok, err := t.Tool(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("tools[%d]: %q: %w", i, n, err)
		}
		if !ok {
			return nil, fmt.Errorf("%w: tools[%d]: %q", ErrUnknownTool, i, n)
		}
		schemas[n] = sandboxTool{Description: info.Description, Parameters: info.Parameters}
	}
	if len(schemas) == 0 {
		return run.Raw, nil
	}
	b, err := json.Marshal(schemas)
	if err != nil {
		return nil, fmt.Errorf("sandbox: encode tool schemas: %w", err)
	}
	doc[sandboxToolsKey] = b
	return json.Marshal(doc)
}

// synthesisWorkflow is the synthesis workflow's name (phases/synthesis),
// whose tools are its available_tools, wildcards included.
const synthesisWorkflow = "synthesis"

// prepareSynthesis resolves a synthesis config's available_tools
// ("resource:*" wildcards against the sandbox's registry; an unknown name
// refuses the run) into sandbox_tools, the schemas of the concrete tools,
// which the sampler offers the model and whose names the selector counts
// diversity against.
func (h *Handler) prepareSynthesis(ctx context.Context, run handlers.RunCheck, doc map[string]json.RawMessage) (json.RawMessage, error) {
	var patterns []string
	if json.Unmarshal(doc["available_tools"], &patterns) != nil || len(patterns) == 0 {
		return run.Raw, nil // the workflow's CheckSettings names the problem
	}
	// AgentFlow's sandbox_server_url is the run's sandbox_url.
	var rs configs.RunSettings
	if run.Settings != nil {
		rs = *run.Settings
	}
	var url string
	if json.Unmarshal(doc["sandbox_server_url"], &url) == nil && url != "" && rs.SandboxURL == "" {
		rs.SandboxURL = url
	}
	t, err := h.target(handlers.Env{Settings: &rs})
	if err != nil {
		return nil, err
	}
	all, err := t.ToolNames(ctx)
	if err != nil {
		return nil, fmt.Errorf("sandbox: list tools: %w", err)
	}
	names, err := synthcfg.ExpandTools(patterns, all)
	if err != nil {
		return nil, err
	}
	schemas := map[string]sandboxTool{}
	for _, n := range names {
		info, ok, err := t.Tool(ctx, n)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: %q", ErrUnknownTool, n)
		}
		schemas[n] = sandboxTool{Description: info.Description, Parameters: info.Parameters}
	}
	b, err := json.Marshal(schemas)
	if err != nil {
		return nil, fmt.Errorf("sandbox: encode tool schemas: %w", err)
	}
	doc[sandboxToolsKey] = b
	return json.Marshal(doc)
}

// sandboxTool and sandboxToolsKey are agent.SandboxTool and its key (the
// handler does not import phases).
type sandboxTool struct {
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

const sandboxToolsKey = "sandbox_tools"

func isSandboxTool(name string) bool {
	r, t, ok := strings.Cut(name, ":")
	return ok && r != "" && t != ""
}

// usesSandboxTools reports whether the settings' top-level tools list (an
// agent's) names a sandbox tool. Agents nested in a rollout's settings are
// checked when their own runs start.
func usesSandboxTools(raw json.RawMessage) bool {
	var doc struct {
		Tools []any `json:"tools"`
	}
	if json.Unmarshal(raw, &doc) != nil {
		return false
	}
	for _, n := range doc.Tools {
		if s, ok := n.(string); ok && isSandboxTool(s) {
			return true
		}
	}
	return false
}

// sessionData is what the sandbox operation reads of a session answer's
// data: "status": "exists" when the session was there already, and a
// fork that could not fork.
type sessionData struct {
	Status   string `json:"status"`
	Forked   *bool  `json:"forked"`
	ForkNote string `json:"fork_note"`
}

// token reads the sandbox's token from the variable sandbox_token_env
// names: "" without one, ErrTokenEnvNotAllowed (before looking at the
// environment) when the operator does not list the name, ErrNoToken when
// it is not set.
func (h *Handler) token(s *configs.RunSettings) (string, error) {
	if s.SandboxTokenEnv == "" {
		return "", nil
	}
	if !slices.Contains(h.tokenEnvs, s.SandboxTokenEnv) {
		return "", fmt.Errorf("%w: %s", ErrTokenEnvNotAllowed, s.SandboxTokenEnv)
	}
	tok := os.Getenv(s.SandboxTokenEnv)
	if tok == "" {
		return "", fmt.Errorf("%w: %s", ErrNoToken, s.SandboxTokenEnv)
	}
	return tok, nil
}

// target is where the run's calls go: the sandbox at sandbox_url (checked
// again, and reached only through the guard), else the hosted service.
func (h *Handler) target(env handlers.Env) (handlers.Sandbox, error) {
	if env.Settings != nil && env.Settings.SandboxURL != "" {
		if err := h.checkURL(context.Background(), env.Settings.SandboxURL); err != nil {
			return nil, err
		}
		tok, err := h.token(env.Settings)
		if err != nil {
			return nil, err
		}
		return newRemote(h.client, env.Settings.SandboxURL, tok, env.Settings.SandboxTokenEnv), nil
	}
	if h.svc != nil {
		return h.svc, nil
	}
	return nil, ErrNoSandbox
}

// Handle runs one sandbox call.
func (h *Handler) Handle(ctx context.Context, env handlers.Env, req operations.Request) operations.Result {
	p := operations.Sandbox.Params(req)
	if p == nil || strings.TrimSpace(p.Action) == "" {
		return operations.Failed(req, "sandbox: action is required (\"resource:tool\", e.g. \"text2sql:execute\")")
	}
	params := map[string]any{}
	if len(p.Params) > 0 && string(p.Params) != "null" {
		if err := json.Unmarshal(p.Params, &params); err != nil {
			return operations.Failed(req, "sandbox: params of %s must be a JSON object: %v", p.Action, err)
		}
	}
	if p.TimeoutS < 0 {
		return operations.Failed(req, "sandbox: timeout_s must not be negative, got %g", p.TimeoutS)
	}
	t, err := h.target(env)
	if err != nil {
		return operations.Failed(req, "%v", err)
	}
	recreated := ""
	worker := sessionWorker(env.RunID, p.Session)
	info, ok, err := t.Tool(ctx, p.Action)
	if err != nil {
		return operations.Failed(req, "sandbox: %s: %v", p.Action, err)
	}
	if ok && !info.Stateless {
		var fail *handlers.SandboxAnswer
		recreated, fail, err = h.session(ctx, t, env, worker, p, info.ResourceType)
		if err != nil {
			return operations.Failed(req, "sandbox: %s: %v", p.Action, err)
		}
		if fail != nil {
			return result(req, *fail)
		}
	}
	e, err := t.Execute(ctx, worker, handlers.SandboxAction{Action: p.Action, Params: params,
		Timeout: time.Duration(p.TimeoutS * float64(time.Second))})
	if err != nil {
		return operations.Failed(req, "sandbox: %s: %v", p.Action, err)
	}
	if recreated != "" {
		e.Message = recreated + " " + e.Message
	}
	return result(req, e)
}

func result(req operations.Request, e handlers.SandboxAnswer) operations.Result {
	return operations.Result{Kind: operations.KindSandbox, Meta: req.Meta,
		Data: &operations.SandboxResult{Code: e.Code, Message: e.Message, Data: e.Data, Meta: e.Meta}}
}

// session makes sure the run has its session of rt for worker, created
// on first use (forked from the first of p.ForkFrom that has one, where
// the backend can fork). It answers a note when the session had to be
// recreated (a resumed run whose session is gone) or could not be forked,
// or the envelope of a failed creation.
func (h *Handler) session(ctx context.Context, t handlers.Sandbox, env handlers.Env, worker string, p *operations.SandboxRequest, rt string) (string, *handlers.SandboxAnswer, error) {
	h.mu.Lock()
	rs := h.runs[env.RunID]
	if rs != nil && rs.rts[workerRT{worker, rt}] {
		h.mu.Unlock()
		return "", nil, nil
	}
	from := ""
	for _, f := range p.ForkFrom {
		if w := sessionWorker(env.RunID, f); rs != nil && rs.rts[workerRT{w, rt}] {
			from = w
			break
		}
	}
	h.mu.Unlock()
	var ce handlers.SandboxAnswer
	var err error
	if from != "" {
		ce, err = t.ForkSession(ctx, worker, from, rt)
	} else {
		ce, err = t.CreateSession(ctx, worker, rt)
	}
	if err != nil {
		return "", nil, err
	}
	if ce.Code != 0 {
		return "", &ce, nil
	}
	var sd sessionData
	_ = json.Unmarshal(ce.Data, &sd)
	existed := sd.Status == "exists"
	forkNote := ""
	if from != "" && sd.Forked != nil && !*sd.Forked && sd.ForkNote != "" {
		forkNote = "[session not forked: " + sd.ForkNote + "]"
	}
	note := forkNote
	marker := ""
	if env.WorkDir != "" {
		name := safeName(rt)
		if p.Session != "" {
			name = safeName(p.Session) + "@" + name
		}
		marker = filepath.Join(env.WorkDir, markerDir, name)
		if _, err := os.Stat(marker); err == nil && !existed {
			note = fmt.Sprintf("[session recreated: this run's %s session was gone (the run was resumed), so its earlier state (files, working directory, variables) is lost]", rt)
		}
		if err := os.MkdirAll(filepath.Dir(marker), 0o755); err == nil {
			_ = os.WriteFile(marker, nil, 0o644)
		}
	}
	h.mu.Lock()
	if h.runs == nil {
		h.runs = map[string]*runSessions{}
	}
	if h.runs[env.RunID] == nil {
		h.runs[env.RunID] = &runSessions{target: t, rts: map[workerRT]bool{}}
	}
	h.runs[env.RunID].rts[workerRT{worker, rt}] = true
	h.mu.Unlock()
	return note, nil, nil
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

func safeName(s string) string {
	s = unsafeChars.ReplaceAllString(s, "_")
	if s == "" || s == "." || s == ".." {
		return "_"
	}
	return s
}

// CloseRun destroys the sessions the run created, within 30 seconds.
func (h *Handler) CloseRun(ctx context.Context, runID string) {
	h.mu.Lock()
	rs := h.runs[runID]
	delete(h.runs, runID)
	h.mu.Unlock()
	if rs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for s := range rs.rts {
		rs.target.DestroySession(ctx, s.worker, s.rt)
	}
}

func init() {
	handlers.Register(handlers.Info{ID: "flock.sandbox", Kinds: []operations.Kind{operations.KindSandbox},
		New: func() handlers.Handler { return &Handler{} }})
}

var (
	_ handlers.Handler      = (*Handler)(nil)
	_ handlers.Provisioner  = (*Handler)(nil)
	_ handlers.RunValidator = (*Handler)(nil)
	_ handlers.RunCloser    = (*Handler)(nil)
	_ handlers.RunPreparer  = (*Handler)(nil)
)
