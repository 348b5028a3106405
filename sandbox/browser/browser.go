package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/flockrun/flock/internal/netguard"
)

// Options configure the tabs a Browser starts.
type Options struct {
	// Chromium is the executable (default /usr/bin/chromium, else chromium
	// or chromium-browser on PATH).
	Chromium string
	// ActionTimeout bounds one action (a navigation, an element wait) when
	// the call carries no earlier deadline (default 15s).
	ActionTimeout time.Duration
	// StartTimeout bounds starting chromium (default 30s).
	StartTimeout time.Duration
	// Width and Height are the viewport size, the size of a screenshot
	// (default 1280x800).
	Width, Height int
	// ContentLimit cuts extract's text and html to this many characters
	// (default 50000).
	ContentLimit int
	// InlineImageMax is the largest screenshot also returned inline as
	// base64 in "image" (default 65536 bytes; 0 never).
	InlineImageMax int
	// Policy is where the browser may connect (allow_hosts,
	// allow_private): every request of the tab goes through a proxy that
	// dials through it. nil: public addresses only.
	Policy *netguard.Policy
}

func (o *Options) defaults() {
	if o.ActionTimeout <= 0 {
		o.ActionTimeout = 15 * time.Second
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 30 * time.Second
	}
	if o.Width <= 0 {
		o.Width = 1280
	}
	if o.Height <= 0 {
		o.Height = 800
	}
	if o.ContentLimit <= 0 {
		o.ContentLimit = 50000
	}
	if o.Policy == nil {
		o.Policy = &netguard.Policy{}
	}
}

// FindChromium returns path when it is an executable, else the first of
// /usr/bin/chromium, chromium and chromium-browser found.
func FindChromium(path string) (string, error) {
	if path != "" {
		if st, err := os.Stat(path); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return path, nil
		}
		return "", fmt.Errorf("%w at %s", ErrNoChromium, path)
	}
	if st, err := os.Stat("/usr/bin/chromium"); err == nil && !st.IsDir() {
		return "/usr/bin/chromium", nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w (install it with apt-get install chromium, or set chromium_path)", ErrNoChromium)
}

// Tab is one session's browser: its own chromium process with a fresh
// profile in the session workspace, and one tab. Its methods must not be
// called concurrently (the service serialises the calls of one session);
// Close may be called at any time, more than once.
type Tab struct {
	opts      Options
	workspace string
	profile   string

	ctx         context.Context // the tab's chromedp context
	cancelTab   context.CancelFunc
	cancelAlloc context.CancelFunc
	// proxy carries every request of the browser and refuses destinations
	// the policy refuses.
	proxy *netguard.Proxy

	shots int

	closeOnce sync.Once
	closeErr  error
}

// Start launches chromium headless for a session whose directory is
// workspace. The profile (user-data-dir) is workspace/.chromium-profile;
// screenshots go to workspace/screenshots. ctx bounds only the start.
func Start(ctx context.Context, workspace string, opts Options) (*Tab, error) {
	opts.defaults()
	if opts.Chromium == "" {
		p, err := FindChromium("")
		if err != nil {
			return nil, err
		}
		opts.Chromium = p
	}
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return nil, err
	}
	profile := filepath.Join(abs, ".chromium-profile")
	if err := os.MkdirAll(profile, 0o700); err != nil {
		return nil, fmt.Errorf("browser profile: %w", err)
	}
	proxy, err := netguard.StartProxy(opts.Policy)
	if err != nil {
		return nil, fmt.Errorf("browser proxy: %w", err)
	}
	allocOpts := append(chromedp.DefaultExecAllocatorOptions[:],
		// Every request, loopback included (chromium bypasses the proxy
		// for loopback unless told not to), goes through the proxy, which
		// checks the address it connects to; WebRTC may not send UDP
		// around it.
		chromedp.ProxyServer("http://"+proxy.Addr()),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.Flag("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.ExecPath(opts.Chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(opts.Width, opts.Height),
	)
	// The browser outlives the call that starts it: its contexts hang off
	// Background and are ended by Close.
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), allocOpts...)
	tabCtx, cancelTab := chromedp.NewContext(allocCtx)
	t := &Tab{opts: opts, workspace: abs, profile: profile, ctx: tabCtx, cancelTab: cancelTab, cancelAlloc: cancelAlloc, proxy: proxy}

	// The first Run allocates the browser; it must not carry a deadline
	// (that would end the browser), so the start is bounded from outside.
	started := make(chan error, 1)
	go func() {
		started <- chromedp.Do(tabCtx, chromedp.EmulateViewport(int64(opts.Width), int64(opts.Height)))
	}()
	timer := time.NewTimer(opts.StartTimeout)
	defer timer.Stop()
	select {
	case err = <-started:
		if err != nil {
			err = fmt.Errorf("%w: %w", errStartReturned, err)
		}
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = fmt.Errorf("chromium did not start within %v", opts.StartTimeout)
	}
	if err != nil {
		t.Close()
		select {
		case <-started: // Close ended its context, so the start returns
		default:
			if !errors.Is(err, errStartReturned) {
				<-started
			}
		}
		return nil, fmt.Errorf("starting chromium: %w", err)
	}
	return t, nil
}

// Close stops the browser and kills any chromium process still using the
// profile, then removes the profile. It is safe to call more than once.
func (t *Tab) Close() error {
	t.closeOnce.Do(func() {
		// A graceful close first, bounded: Cancel waits on this context's
		// deadline for the browser to exit. Its error means it was gone.
		cctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
		_ = chromedp.Cancel(cctx)
		cancel()
		t.cancelTab()
		t.cancelAlloc() // kills the process and waits for it
		if n := killProfileProcesses(t.profile, 5*time.Second); n < 0 {
			t.closeErr = fmt.Errorf("chromium processes of %s survive", t.profile)
		}
		if err := os.RemoveAll(t.profile); err != nil && t.closeErr == nil {
			t.closeErr = fmt.Errorf("removing the browser profile: %w", err)
		}
		if err := t.proxy.Close(); err != nil && t.closeErr == nil {
			t.closeErr = fmt.Errorf("closing the browser proxy: %w", err)
		}
	})
	return t.closeErr
}

// actionCtx derives the context of one action: the call's, bounded by the
// action timeout, and ended when the tab closes.
func (t *Tab) actionCtx(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if t.ctx.Err() != nil {
		return nil, nil, ErrClosed
	}
	actx, cancel := context.WithTimeout(t.ctx, t.opts.ActionTimeout)
	stop := context.AfterFunc(ctx, cancel)
	return actx, func() { stop(); cancel() }, nil
}

// actionErr explains why an action failed: the call's deadline, the action
// timeout, a closed browser, or the browser's own error.
func (t *Tab) actionErr(callCtx, actx context.Context, what string, err error) error {
	switch {
	case callCtx.Err() != nil:
		return fmt.Errorf("%s: %w", what, callCtx.Err())
	case t.ctx.Err() != nil:
		return fmt.Errorf("%s: %w", what, ErrClosed)
	case actx.Err() != nil:
		return fmt.Errorf("%s: timed out after %v: %w", what, t.opts.ActionTimeout, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// CheckURL accepts http and https URLs with a host, and about:blank. file:
// URLs (and every other scheme) are refused: the browser never reads a
// local file, including the session's own workspace.
func CheckURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("%w: %q is not a URL", ErrNotAllowed, raw)
	}
	if u.String() == "about:blank" {
		return "about:blank", nil
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%w: %q (only http and https URLs)", ErrNotAllowed, raw)
	}
	return u.String(), nil
}

// Navigation is navigate's result, AgentFlow's {url, title, status}, and
// the destinations the page tried to reach that were refused (an image, a
// frame, a fetch from a private address), as "host (reason)".
type Navigation struct {
	URL     string   `json:"url"`
	Title   string   `json:"title"`
	Status  int      `json:"status"`
	Blocked []string `json:"blocked,omitempty"`
}

// blocked lists refusals as "host (reason)", each once.
func blocked(refs []*netguard.BlockedError) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range refs {
		s := r.Host + " (" + r.Reason + ")"
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// refusedDocument returns the refusal that stopped a navigation: the one
// of the host of the document when the proxy answered it, else the first.
func refusedDocument(refs []*netguard.BlockedError, host string) error {
	for _, r := range refs {
		if r.Host == host {
			return r
		}
	}
	return refs[0]
}

// Navigate loads raw (see CheckURL) and waits for the page to load.
func (t *Tab) Navigate(ctx context.Context, raw string) (*Navigation, error) {
	target, err := CheckURL(raw)
	if err != nil {
		return nil, err
	}
	actx, cancel, err := t.actionCtx(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	nav := &Navigation{Status: 200}
	if target == "about:blank" {
		if err := chromedp.Do(actx, chromedp.Navigate(target)); err != nil {
			return nil, t.actionErr(ctx, actx, "navigate", err)
		}
	} else {
		t.proxy.Refusals() // forget those of earlier calls
		t.proxy.Failures()
		resp, err := chromedp.Run(actx, chromedp.NavigateResponse(target))
		refs, fails := t.proxy.Refusals(), t.proxy.Failures()
		if err != nil {
			if len(refs) > 0 {
				// The document or a redirect's target was refused.
				u, _ := url.Parse(target)
				return nil, fmt.Errorf("navigate to %s: %w", target, refusedDocument(refs, u.Hostname()))
			}
			err = t.actionErr(ctx, actx, "navigate to "+target, err)
			if len(fails) > 0 {
				// What chromium calls a failed tunnel, as the proxy saw it.
				err = fmt.Errorf("%w (the proxy could not connect: %v)", err, fails[len(fails)-1])
			}
			return nil, err
		}
		if resp != nil {
			nav.Status = int(resp.Status)
			for k := range resp.Headers {
				if strings.EqualFold(k, netguard.Refused) && len(refs) > 0 {
					u, _ := url.Parse(resp.URL)
					return nil, fmt.Errorf("navigate to %s: %w", target, refusedDocument(refs, u.Hostname()))
				}
			}
		}
		nav.Blocked = blocked(refs)
	}
	if nav.URL, nav.Title, err = t.location(actx); err != nil {
		return nil, t.actionErr(ctx, actx, "navigate", err)
	}
	return nav, nil
}

func (t *Tab) location(ctx context.Context) (string, string, error) {
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return "", "", err
	}
	title, err := chromedp.Run(ctx, chromedp.Title())
	return loc, title, err
}

// waitLoaded waits until the document is fully loaded (after a click that
// may have started a navigation).
func (t *Tab) waitLoaded(ctx context.Context) error {
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.readyState === "complete"`, chromedp.WithPollingInterval(20*time.Millisecond)))
	return err
}

// navigationGrace is how long after a click a navigation may take to start
// and still be waited for.
const navigationGrace = 300 * time.Millisecond

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Click clicks the first element matching the CSS selector (waiting for it
// to appear) and waits for the page to be loaded; it returns where the tab
// is afterwards.
func (t *Tab) Click(ctx context.Context, selector string) (map[string]any, error) {
	actx, cancel, err := t.actionCtx(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	// A click may start a navigation (a link, a form submit) a moment after
	// the click itself returns: watch the page's events from before the
	// click, give a navigation navigationGrace to start, and wait for the
	// load of one that did.
	started := make(chan struct{}, 1)
	loaded := make(chan struct{}, 1)
	lctx, stopListen := context.WithCancel(actx)
	defer stopListen()
	if err := chromedp.Listen(lctx, func(ev any) {
		switch ev.(type) {
		case *page.EventFrameRequestedNavigation, *page.EventFrameStartedNavigating, *page.EventFrameStartedLoading:
			signal(started)
		case *page.EventLoadEventFired:
			signal(loaded)
		}
	}); err != nil {
		return nil, t.actionErr(ctx, actx, "click", err)
	}
	if err := chromedp.Do(actx, chromedp.Click(chromedp.CSS(selector), chromedp.NodeVisible)); err != nil {
		return nil, t.elementErr(ctx, actx, "click", selector, err)
	}
	grace := time.NewTimer(navigationGrace)
	defer grace.Stop()
	select {
	case <-started:
		select {
		case <-loaded:
		case <-actx.Done():
			return nil, t.actionErr(ctx, actx, "click: waiting for the page to load", actx.Err())
		}
	case <-grace.C:
	case <-actx.Done():
		return nil, t.actionErr(ctx, actx, "click", actx.Err())
	}
	if err := t.waitLoaded(actx); err != nil {
		return nil, t.actionErr(ctx, actx, "click", err)
	}
	loc, title, err := t.location(actx)
	if err != nil {
		return nil, t.actionErr(ctx, actx, "click", err)
	}
	return map[string]any{"clicked": selector, "url": loc, "title": title}, nil
}

// Type types text into the first element matching the CSS selector, after
// the text already there. File inputs are refused: typing a path into one
// would let the page upload a local file.
func (t *Tab) Type(ctx context.Context, selector, text string) (map[string]any, error) {
	actx, cancel, err := t.actionCtx(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	if err := chromedp.Do(actx, chromedp.WaitVisible(chromedp.CSS(selector))); err != nil {
		return nil, t.elementErr(ctx, actx, "type", selector, err)
	}
	sel, _ := json.Marshal(selector)
	isFile, err := chromedp.Run(actx, chromedp.Evaluate[bool](fmt.Sprintf(
		`(() => { const e = document.querySelector(%s); return !!e && e.tagName === "INPUT" && (e.type || "").toLowerCase() === "file"; })()`, sel)))
	if err != nil {
		return nil, t.actionErr(ctx, actx, "type", err)
	}
	if isFile {
		return nil, fmt.Errorf("%w: %q is a file input; typing into it could upload a local file", ErrNotAllowed, selector)
	}
	if err := chromedp.Do(actx, chromedp.SendKeys(chromedp.CSS(selector), text)); err != nil {
		return nil, t.elementErr(ctx, actx, "type", selector, err)
	}
	return map[string]any{"typed": text, "length": len([]rune(text)), "selector": selector}, nil
}

// elementErr reports a selector that matched nothing within the action
// timeout as ErrNoElement.
func (t *Tab) elementErr(callCtx, actx context.Context, what, selector string, err error) error {
	if callCtx.Err() == nil && t.ctx.Err() == nil && actx.Err() != nil {
		return fmt.Errorf("%s: %w: %q (waited %v)", what, ErrNoElement, selector, t.opts.ActionTimeout)
	}
	return t.actionErr(callCtx, actx, what+" "+strconv.Quote(selector), err)
}

// Extract returns the visible text and the outer HTML of the first element
// matching the CSS selector (default "body"), each cut at ContentLimit
// characters ("truncated" says whether either was cut).
func (t *Tab) Extract(ctx context.Context, selector string) (map[string]any, error) {
	if selector == "" {
		selector = "body"
	}
	actx, cancel, err := t.actionCtx(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	if err := t.waitLoaded(actx); err != nil {
		return nil, t.actionErr(ctx, actx, "extract", err)
	}
	text, err := chromedp.Run(actx, chromedp.Text(chromedp.CSS(selector)))
	if err != nil {
		return nil, t.elementErr(ctx, actx, "extract", selector, err)
	}
	html, err := chromedp.Run(actx, chromedp.OuterHTML(chromedp.CSS(selector)))
	if err != nil {
		return nil, t.elementErr(ctx, actx, "extract", selector, err)
	}
	text, cutText := truncate(text, t.opts.ContentLimit)
	html, cutHTML := truncate(html, t.opts.ContentLimit)
	return map[string]any{"text": text, "html": html, "selector": selector, "truncated": cutText || cutHTML}, nil
}

func truncate(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos], true
		}
		i++
	}
	return s, false
}

// Screenshot captures the viewport (or the full page) as PNG into
// workspace/screenshots/shot-NNN.png and returns {image_path, size: [w, h]},
// plus "image" (base64) when the PNG is at most InlineImageMax bytes.
func (t *Tab) Screenshot(ctx context.Context, fullPage bool) (map[string]any, error) {
	actx, cancel, err := t.actionCtx(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	var buf []byte
	if fullPage {
		buf, err = chromedp.Run(actx, chromedp.FullScreenshot(100))
	} else {
		buf, err = chromedp.Run(actx, chromedp.CaptureScreenshot())
	}
	if err != nil {
		return nil, t.actionErr(ctx, actx, "screenshot", err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(buf))
	if err != nil {
		return nil, fmt.Errorf("screenshot: not a PNG: %w", err)
	}
	dir := filepath.Join(t.workspace, "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	t.shots++
	path := filepath.Join(dir, fmt.Sprintf("shot-%03d.png", t.shots))
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	out := map[string]any{"image_path": path, "size": []int{cfg.Width, cfg.Height}, "bytes": len(buf)}
	if t.opts.InlineImageMax > 0 && len(buf) <= t.opts.InlineImageMax {
		out["image"] = buf // encoding/json writes []byte as base64
	}
	return out, nil
}

// errStartReturned marks a start whose goroutine already returned.
var errStartReturned = errors.New("chromium exited")
