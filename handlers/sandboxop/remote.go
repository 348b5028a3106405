package sandboxop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/flockrun/flock/sandbox"
)

// remote runs calls on a flock or AgentFlow sandbox over its /api/v1 wire.
type remote struct {
	base   string
	client *http.Client
}

// The HTTP client has no timeout of its own: each request's ctx bounds it
// (the call's timeout plus a margin).
var httpClient = &http.Client{}

func newRemote(base string) remote {
	return remote{base: strings.TrimRight(base, "/"), client: httpClient}
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
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("sandbox at %s: %w", r.base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("sandbox at %s: read answer: %w", r.base, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("sandbox at %s: %s %s answered HTTP %d that is not JSON: %w", r.base, req.Method, req.URL.Path, resp.StatusCode, err)
	}
	return nil
}

func (r remote) tool(ctx context.Context, name string) (sandbox.ToolInfo, bool) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+"/api/v1/tools/"+url.PathEscape(name)+"/schema", nil)
	if err != nil {
		return sandbox.ToolInfo{}, false
	}
	var info sandbox.ToolInfo
	if r.do(req, &info) != nil || info.ResourceType == "" {
		return sandbox.ToolInfo{}, false
	}
	return info, true
}

func (r remote) create(ctx context.Context, worker, rt string) (bool, sandbox.Envelope, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var e sandbox.Envelope
	if err := r.post(ctx, "/api/v1/session/create", map[string]any{"worker_id": worker, "resource_type": rt, "session_config": map[string]any{}}, &e); err != nil {
		return false, e, err
	}
	m, _ := e.Data.(map[string]any)
	return m["status"] == "exists", e, nil
}

func (r remote) execute(ctx context.Context, worker string, a sandbox.Action) (envelope, error) {
	body := map[string]any{"worker_id": worker, "action": a.Action, "params": a.Params}
	wait := 10 * time.Minute
	if a.Timeout > 0 {
		// The wire's timeout is whole seconds.
		body["timeout"] = int(math.Ceil(a.Timeout.Seconds()))
		wait = a.Timeout + time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var e envelope
	err := r.post(ctx, "/api/v1/execute", body, &e)
	return e, err
}

func (r remote) destroy(ctx context.Context, worker, rt string) {
	var e envelope
	_ = r.post(ctx, "/api/v1/session/destroy", map[string]any{"worker_id": worker, "resource_type": rt}, &e)
}
