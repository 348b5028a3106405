package sandboxop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/flockrun/flock/handlers"
)

// remote runs calls on a flock or AgentFlow sandbox over its /api/v1 wire
// (the port handlers.Sandbox, like the hosted service).
type remote struct {
	base   string
	client *http.Client
	// token is the sandbox's bearer token, read from the variable tokenEnv
	// names (sandbox_token_env); empty without one. It is sent only in the
	// Authorization header and never appears in an error.
	token, tokenEnv string
}

// newRemote calls the sandbox at base with client, which dials through
// the operator's guard and has no timeout of its own: each request's ctx
// bounds it (the call's timeout plus a margin).
func newRemote(client *http.Client, base, token, tokenEnv string) remote {
	return remote{base: strings.TrimRight(base, "/"), client: client, token: token, tokenEnv: tokenEnv}
}

// redact removes the token from s (an answer quoted in an error).
func (r remote) redact(s string) string {
	if r.token == "" {
		return s
	}
	return strings.ReplaceAll(s, r.token, "[redacted]")
}

// refused explains a 401 or 403 of the sandbox, naming sandbox_token_env.
func (r remote) refused(req *http.Request, status int, msg string) error {
	hint := "set sandbox_token_env to the name of the environment variable holding its auth token"
	if r.tokenEnv != "" {
		hint = "the token in $" + r.tokenEnv + " (sandbox_token_env) was not accepted"
	}
	if msg = strings.TrimSpace(r.redact(msg)); len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	return fmt.Errorf("%w: sandbox at %s refused %s %s with HTTP %d (%s): %s", ErrRefused, r.base, req.Method, req.URL.Path, status, msg, hint)
}

// post sends body as JSON and decodes the JSON answer into out, whatever
// the HTTP status (the sandbox answers an envelope on every status).
func (r remote) post(ctx context.Context, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base+path, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("sandbox_url: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	return r.do(req, out)
}

func (r remote) do(req *http.Request, out any) error {
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		if b := blocked(err, r.base); b != err {
			// A redirect, or a name that now resolves elsewhere.
			return b
		}
		// A url.Error names the URL, never a header.
		return fmt.Errorf("sandbox at %s: %s", r.base, r.redact(err.Error()))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("sandbox at %s: read answer: %w", r.base, err)
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		var e struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(raw, &e) != nil || e.Message == "" {
			e.Message = string(raw)
		}
		return r.refused(req, resp.StatusCode, e.Message)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("sandbox at %s: %s %s answered HTTP %d that is not JSON: %w", r.base, req.Method, req.URL.Path, resp.StatusCode, err)
	}
	return nil
}

func (r remote) Tool(ctx context.Context, name string) (handlers.SandboxTool, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+"/api/v1/tools/"+url.PathEscape(name)+"/schema", nil)
	if err != nil {
		return handlers.SandboxTool{}, false, fmt.Errorf("sandbox_url: %w", err)
	}
	var info handlers.SandboxTool
	if err := r.do(req, &info); err != nil {
		if errors.Is(err, ErrRefused) {
			return handlers.SandboxTool{}, false, err
		}
		return handlers.SandboxTool{}, false, nil
	}
	if info.ResourceType == "" {
		return handlers.SandboxTool{}, false, nil
	}
	return info, true, nil
}

func (r remote) CreateSession(ctx context.Context, worker, rt string) (handlers.SandboxAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var e handlers.SandboxAnswer
	err := r.post(ctx, "/api/v1/session/create", map[string]any{"worker_id": worker, "resource_type": rt, "session_config": map[string]any{}}, &e)
	return e, err
}

func (r remote) ForkSession(ctx context.Context, worker, from, rt string) (handlers.SandboxAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var e handlers.SandboxAnswer
	if err := r.post(ctx, "/api/v1/session/fork", map[string]any{"worker_id": worker, "from_worker_id": from, "resource_type": rt}, &e); err != nil {
		return e, err
	}
	var m map[string]any
	if json.Unmarshal(e.Data, &m) != nil || m == nil || (m["session_id"] == nil && m["status"] == nil) {
		// No fork route (an AgentFlow sandbox): a fresh session.
		ce, err := r.CreateSession(ctx, worker, rt)
		var cm map[string]any
		if err == nil && json.Unmarshal(ce.Data, &cm) == nil && cm != nil {
			cm["forked"], cm["fork_note"] = false, "the sandbox at "+r.base+" cannot fork sessions"
			if b, merr := json.Marshal(cm); merr == nil {
				ce.Data = b
			}
		}
		return ce, err
	}
	return e, nil
}

func (r remote) ToolNames(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+"/api/v1/tools?include_hidden=true", nil)
	if err != nil {
		return nil, fmt.Errorf("sandbox_url: %w", err)
	}
	var e struct {
		Tools []handlers.SandboxTool `json:"tools"`
	}
	if err := r.do(req, &e); err != nil {
		return nil, err
	}
	var out []string
	for _, t := range e.Tools {
		if t.FullName != "" {
			out = append(out, t.FullName)
		}
	}
	return out, nil
}

func (r remote) Execute(ctx context.Context, worker string, a handlers.SandboxAction) (handlers.SandboxAnswer, error) {
	body := map[string]any{"worker_id": worker, "action": a.Action, "params": a.Params}
	wait := 10 * time.Minute
	if a.Timeout > 0 {
		// The wire's timeout is whole seconds.
		body["timeout"] = int(math.Ceil(a.Timeout.Seconds()))
		wait = a.Timeout + time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var e handlers.SandboxAnswer
	err := r.post(ctx, "/api/v1/execute", body, &e)
	return e, err
}

func (r remote) DestroySession(ctx context.Context, worker, rt string) {
	var e handlers.SandboxAnswer
	_ = r.post(ctx, "/api/v1/session/destroy", map[string]any{"worker_id": worker, "resource_type": rt}, &e)
}

var _ handlers.Sandbox = remote{}
