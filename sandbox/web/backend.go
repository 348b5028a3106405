package web

import (
	"context"
	"errors"

	"github.com/flockrun/flock/internal/netguard"
	"github.com/flockrun/flock/sandbox"
)

// Name is the backend's API group: the config section apis.web and the
// tools' prefix "web:".
const Name = "web"

func init() {
	sandbox.RegisterBackend(sandbox.BackendInfo{
		Name: Name,
		New:  func() sandbox.Backend { return new(Backend) },
	})
}

// Backend is the web API group: web:search and web:visit, stateless.
type Backend struct {
	web *Web
}

// Provision reads apis.web (see Config) and sets up the providers and the
// disk cache in env.DataDir/cache. A missing search key fails here, naming
// apis.web.serper_api_key.
func (b *Backend) Provision(_ context.Context, env sandbox.Env) error {
	cfg, err := parseConfig("apis."+Name, env.Decode)
	if err != nil {
		return err
	}
	b.web = New(cfg, env.DataDir, env.Logger)
	if env.Logger != nil {
		// The keys are never logged; only whether they are set.
		env.Logger.Info("web providers ready", "search", cfg.SearchProvider, "search_url", cfg.SearchURL,
			"reader", cfg.ReaderProvider, "reader_url", cfg.ReaderURL, "reader_key_set", cfg.ReaderKey != "",
			"cache_ttl", cfg.CacheTTL)
	}
	return nil
}

// Tools returns web:search and web:visit.
func (b *Backend) Tools() []sandbox.Tool {
	return []sandbox.Tool{
		{
			Name: Name + ":search",
			Description: "Search the web. Give one query or several; each answers with its top results " +
				"(title, link, snippet) as markdown.",
			Parameters: sandbox.ObjectSchema(map[string]any{
				"query": map[string]any{
					"description": "A search query, or an array of queries run together.",
					"anyOf": []any{
						map[string]any{"type": "string"},
						map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "minItems": 1},
					},
				},
			}, "query"),
			Stateless: true,
			Run:       b.search,
		},
		{
			Name: Name + ":visit",
			Description: "Read web pages (http or https) and return their text as markdown, " +
				"each cut at the configured content limit.",
			Parameters: sandbox.ObjectSchema(map[string]any{
				"urls": map[string]any{
					"description": "A page URL, or an array of URLs.",
					"anyOf": []any{
						map[string]any{"type": "string"},
						map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "minItems": 1},
					},
				},
				"goal": map[string]any{"type": "string", "description": "What you are looking for on the pages."},
			}, "urls"),
			Stateless: true,
			Run:       b.visit,
		},
	}
}

func (b *Backend) search(ctx context.Context, c *sandbox.Call) (any, error) {
	if b.web == nil {
		return nil, notProvisioned()
	}
	queries, err := c.Strings("query")
	if err != nil {
		return nil, err
	}
	data, err := b.web.Search(ctx, queries)
	if err != nil {
		return nil, toolError(err)
	}
	data["inputs"] = inputs(c, "query")
	return data, nil
}

func (b *Backend) visit(ctx context.Context, c *sandbox.Call) (any, error) {
	if b.web == nil {
		return nil, notProvisioned()
	}
	urls, err := c.Strings("urls")
	if err != nil {
		return nil, err
	}
	goal := ""
	if c.Has("goal") {
		if goal, err = c.String("goal"); err != nil {
			return nil, err
		}
	}
	data, err := b.web.Visit(ctx, urls, goal)
	if err != nil {
		return nil, toolError(err)
	}
	data["inputs"] = inputs(c, "urls", "goal")
	return data, nil
}

// inputs echoes the tool's own parameters as the caller sent them, and the
// worker id, as AgentFlow's BaseApiTool does, bounded (sandbox.Echo);
// other params are left out.
func inputs(c *sandbox.Call, names ...string) map[string]any {
	in := map[string]any{}
	for _, n := range names {
		if c.Has(n) {
			in[n] = c.Params[n]
		}
	}
	if c.WorkerID != "" {
		in["worker_id"] = c.WorkerID
	}
	return sandbox.Echo(in).(map[string]any)
}

// toolError maps the package's errors to AgentFlow codes: a destination
// that is not allowed 4001, bad input 4000, a provider failure 5000 (as
// AgentFlow's web tools), the call's deadline 5006.
func toolError(err error) error {
	switch {
	case errors.Is(err, netguard.ErrBlocked):
		return sandbox.Errorf(sandbox.CodeBusinessFailure, "%s", err.Error())
	case errors.Is(err, ErrInvalidInput):
		return sandbox.Errorf(sandbox.CodeInvalidInput, "%s", err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return sandbox.Errorf(sandbox.CodeTimeout, "%s", err.Error())
	default:
		return sandbox.Errorf(sandbox.CodeExecutionError, "%s", err.Error())
	}
}

func notProvisioned() error {
	return sandbox.Errorf(sandbox.CodeBackendNotInitialized, "the web backend is not provisioned")
}

var (
	_ sandbox.Backend     = (*Backend)(nil)
	_ sandbox.Provisioner = (*Backend)(nil)
)
