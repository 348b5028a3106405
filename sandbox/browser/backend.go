package browser

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"

	"github.com/flockrun/flock/internal/netguard"
	"github.com/flockrun/flock/sandbox"
)

// Name is the backend's resource type: the config section resources.browser
// and the tools' prefix "browser:".
const Name = "browser"

func init() {
	sandbox.RegisterBackend(sandbox.BackendInfo{
		Name: Name,
		New:  func() sandbox.Backend { return new(Backend) },
	})
}

// Backend is the browser resource: one headless chromium per session.
type Backend struct {
	opts Options
	log  *slog.Logger

	mu   sync.Mutex
	tabs map[string]*Tab // by session id; guarded by mu
}

// configPath is the JSON path of the backend's settings.
const configPath = "resources." + Name + ".config"

// config is resources.browser.config.
type config struct {
	ChromiumPath   string           `json:"chromium_path"`
	ActionTimeout  *sandbox.Seconds `json:"action_timeout_s" default:"15"`
	StartTimeout   *sandbox.Seconds `json:"start_timeout_s" default:"30"`
	Width          *sandbox.Count   `json:"width" default:"1280" min:"100" max:"16384"`
	Height         *sandbox.Count   `json:"height" default:"800" min:"100" max:"16384"`
	ContentLimit   *sandbox.Count   `json:"content_limit" default:"50000" min:"1" max:"1073741824"`          // sandbox.MaxOutputLimit
	InlineImageMax *sandbox.Count   `json:"inline_image_max_bytes" default:"65536" min:"0" max:"1073741824"` // sandbox.MaxOutputLimit
	netguard.Settings

	policy *netguard.Policy
}

// Validate reads the network policy.
func (c *config) Validate() error {
	pol, err := c.Settings.Policy()
	c.policy = pol
	return err
}

// Provision reads resources.browser.config: chromium_path (default
// /usr/bin/chromium, else chromium on PATH), action_timeout_s (15),
// start_timeout_s (30), width and height (1280x800), content_limit (50000),
// inline_image_max_bytes (65536; 0 never inlines), allow_hosts and
// allow_private (the destinations the browser may reach beyond public
// addresses). It fails, naming chromium_path, when no chromium is found.
func (b *Backend) Provision(_ context.Context, env sandbox.Env) error {
	b.log = env.Logger
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	var c config
	if err := env.Decode(&c); err != nil {
		return sandbox.Within(configPath, err)
	}
	b.opts = Options{
		ActionTimeout: c.ActionTimeout.Duration(), StartTimeout: c.StartTimeout.Duration(),
		Width: int(c.Width.Int()), Height: int(c.Height.Int()), ContentLimit: int(c.ContentLimit.Int()),
		InlineImageMax: int(c.InlineImageMax.Int()), Policy: c.policy,
	}
	exe, err := FindChromium(c.ChromiumPath)
	if err != nil {
		return &sandbox.ConfigError{Path: configPath + ".chromium_path", Reason: err.Error()}
	}
	b.opts.Chromium = exe
	b.opts.defaults()
	b.tabs = map[string]*Tab{}
	b.log.Info("browser backend ready", "chromium", exe)
	return nil
}

// Initialize starts the session's chromium; its profile lives in the
// session workspace. The session config is not read.
func (b *Backend) Initialize(ctx context.Context, s *sandbox.Session, _ map[string]any) (any, error) {
	if b.tabs == nil {
		return nil, notProvisioned()
	}
	tab, err := Start(ctx, s.Workspace, b.opts)
	if err != nil {
		return nil, sandbox.Errorf(sandbox.CodeResourceNotInitialized, "browser: %v", err)
	}
	b.mu.Lock()
	b.tabs[s.ID] = tab
	b.mu.Unlock()
	return tab, nil
}

// Cleanup stops the session's chromium; no chromium process of the session
// survives it.
func (b *Backend) Cleanup(_ context.Context, s *sandbox.Session) error {
	b.mu.Lock()
	tab := b.tabs[s.ID]
	delete(b.tabs, s.ID)
	b.mu.Unlock()
	if tab == nil {
		if t, ok := s.State.(*Tab); ok {
			tab = t
		}
	}
	if tab == nil {
		return nil
	}
	return tab.Close()
}

// Shutdown stops every session's chromium still running.
func (b *Backend) Shutdown(context.Context) error {
	b.mu.Lock()
	ids := make([]string, 0, len(b.tabs))
	for id := range b.tabs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	tabs := make([]*Tab, 0, len(ids))
	for _, id := range ids {
		tabs = append(tabs, b.tabs[id])
	}
	b.tabs = map[string]*Tab{}
	b.mu.Unlock()
	var errs []error
	for _, t := range tabs {
		errs = append(errs, t.Close())
	}
	return errors.Join(errs...)
}

// running returns how many sessions have a browser (for tests).
func (b *Backend) running() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.tabs)
}

// Tools returns navigate, click, type, extract and screenshot; each runs on
// the caller's browser session.
func (b *Backend) Tools() []sandbox.Tool {
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	return []sandbox.Tool{
		{
			Name:        Name + ":navigate",
			Description: "Open a web page (http or https) in the browser and wait for it to load; returns the final URL, title and HTTP status.",
			Parameters:  sandbox.ObjectSchema(map[string]any{"url": str("The http(s) URL to open.")}, "url"),
			Run: b.run(func(ctx context.Context, t *Tab, c *sandbox.Call) (any, error) {
				u, err := c.String("url")
				if err != nil {
					return nil, err
				}
				return t.Navigate(ctx, u)
			}),
		},
		{
			Name:        Name + ":click",
			Description: "Click the first element matching a CSS selector (waiting for it to appear) and wait for any page load it starts.",
			Parameters:  sandbox.ObjectSchema(map[string]any{"selector": str("A CSS selector.")}, "selector"),
			Run: b.run(func(ctx context.Context, t *Tab, c *sandbox.Call) (any, error) {
				sel, err := c.String("selector")
				if err != nil {
					return nil, err
				}
				return t.Click(ctx, sel)
			}),
		},
		{
			Name:        Name + ":type",
			Description: "Type text into the first element matching a CSS selector (an input or textarea), after its current text. \"\\n\" presses Enter.",
			Parameters:  sandbox.ObjectSchema(map[string]any{"selector": str("A CSS selector."), "text": str("The text to type.")}, "selector", "text"),
			Run: b.run(func(ctx context.Context, t *Tab, c *sandbox.Call) (any, error) {
				sel, err := c.String("selector")
				if err != nil {
					return nil, err
				}
				text, err := c.String("text")
				if err != nil {
					return nil, err
				}
				return t.Type(ctx, sel, text)
			}),
		},
		{
			Name:        Name + ":extract",
			Description: "Return the visible text and the HTML of the first element matching a CSS selector (default: the whole body).",
			Parameters:  sandbox.ObjectSchema(map[string]any{"selector": str("A CSS selector (default \"body\").")}),
			Run: b.run(func(ctx context.Context, t *Tab, c *sandbox.Call) (any, error) {
				sel := ""
				if c.Has("selector") {
					var err error
					if sel, err = c.String("selector"); err != nil {
						return nil, err
					}
				}
				return t.Extract(ctx, sel)
			}),
		},
		{
			Name:        Name + ":screenshot",
			Description: "Take a PNG screenshot of the page (the viewport, or the full page); it is saved in the session workspace.",
			Parameters: sandbox.ObjectSchema(map[string]any{"full_page": map[string]any{"type": "boolean",
				"description": "Capture the whole page, not only the viewport (default false)."}}),
			Run: b.run(func(ctx context.Context, t *Tab, c *sandbox.Call) (any, error) {
				full := false
				if c.Has("full_page") {
					var err error
					if full, err = c.Bool("full_page"); err != nil {
						return nil, err
					}
				}
				return t.Screenshot(ctx, full)
			}),
		},
	}
}

// run adapts a tab action to a tool: it finds the session's tab and maps
// the errors to AgentFlow codes.
func (b *Backend) run(fn func(context.Context, *Tab, *sandbox.Call) (any, error)) func(context.Context, *sandbox.Call) (any, error) {
	return func(ctx context.Context, c *sandbox.Call) (any, error) {
		if c.Session == nil {
			return nil, sandbox.Errorf(sandbox.CodeResourceNotInitialized, "browser tools need a browser session")
		}
		tab, ok := c.Session.State.(*Tab)
		if !ok || tab == nil {
			return nil, sandbox.Errorf(sandbox.CodeResourceNotInitialized, "the session has no browser")
		}
		data, err := fn(ctx, tab, c)
		if err != nil {
			return nil, toolError(err)
		}
		return data, nil
	}
}

func toolError(err error) error {
	var se *sandbox.Error
	switch {
	case errors.As(err, &se):
		return se
	case errors.Is(err, netguard.ErrBlocked):
		return sandbox.Errorf(sandbox.CodeBusinessFailure, "%v", err)
	case errors.Is(err, ErrNotAllowed), errors.Is(err, ErrNoElement):
		return sandbox.Errorf(sandbox.CodeInvalidInput, "%v", err)
	case errors.Is(err, ErrClosed):
		return sandbox.Errorf(sandbox.CodeResourceNotInitialized, "%v", err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return sandbox.Errorf(sandbox.CodeTimeout, "%v", err)
	}
	return sandbox.Errorf(sandbox.CodeExecutionError, "%v", err)
}

func notProvisioned() error {
	return sandbox.Errorf(sandbox.CodeBackendNotInitialized, "the browser backend is not provisioned")
}

var (
	_ sandbox.Backend     = (*Backend)(nil)
	_ sandbox.Provisioner = (*Backend)(nil)
	_ sandbox.Initializer = (*Backend)(nil)
	_ sandbox.Cleaner     = (*Backend)(nil)
	_ sandbox.Shutdowner  = (*Backend)(nil)
)
