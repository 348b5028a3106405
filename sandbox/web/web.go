package web

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/flockrun/flock/internal/netguard"
)

// Web runs web:search and web:visit over the configured providers. It is
// safe for concurrent use.
type Web struct {
	cfg      Config
	searcher Searcher
	reader   Reader
	cache    *cache
	log      *slog.Logger
}

// New builds the tools' runtime from a parsed config. dataDir holds the
// disk cache (dataDir/cache); an empty dataDir turns the cache off.
func New(cfg Config, dataDir string, log *slog.Logger) *Web {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &cache{ttl: cfg.CacheTTL, now: time.Now}
	if dataDir != "" {
		c.dir = filepath.Join(dataDir, "cache")
	}
	if cfg.Policy == nil {
		cfg.Policy = &netguard.Policy{}
	}
	// Every connection, redirects included, goes through the policy; the
	// environment's HTTP proxy is not used, so that the address checked is
	// the one connected to.
	transport := &http.Transport{
		DialContext:         cfg.Policy.DialContext(&net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}),
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        32,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	f := &fetcher{
		client:  &http.Client{Timeout: cfg.Timeout, Transport: transport},
		cache:   c,
		retries: cfg.Retries,
		secrets: []string{cfg.SearchKey, cfg.ReaderKey},
	}
	return &Web{
		cfg:      cfg,
		searcher: searchers[cfg.SearchProvider](cfg, f),
		reader:   readers[cfg.ReaderProvider](cfg, f),
		cache:    c,
		log:      log,
	}
}

// querySeparator joins the answers of several queries (or pages) in one
// result text, as AgentFlow does.
const querySeparator = "\n=======\n"

// Search runs every query (at most Parallel at once) and returns AgentFlow's
// web:search data: {result: markdown text, inputs: {query}}. A query that
// fails shows its error in the text; the call fails (ErrProvider) only when
// every query failed.
func (w *Web) Search(ctx context.Context, queries []string) (map[string]any, error) {
	if len(queries) == 0 {
		return nil, fmt.Errorf("%w: query: no query given", ErrInvalidInput)
	}
	for i, q := range queries {
		if strings.TrimSpace(q) == "" {
			return nil, fmt.Errorf("%w: query[%d]: empty", ErrInvalidInput, i)
		}
	}
	texts, errs := w.each(ctx, queries, func(ctx context.Context, q string) (string, error) {
		hits, err := w.searcher.Search(ctx, q)
		if err != nil {
			return "", err
		}
		return formatSearch(q, hits), nil
	})
	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
			texts[i] = fmt.Sprintf("Search for '%s' failed: %v", queries[i], err)
			w.log.Warn("web search failed", "query", queries[i], "err", err)
		}
	}
	if failed == len(queries) {
		return nil, fmt.Errorf("every query failed: %w", errs[0])
	}
	var query any = queries[0]
	if len(queries) > 1 {
		query = queries
	}
	return map[string]any{
		"result": strings.Join(texts, querySeparator),
		"inputs": map[string]any{"query": query},
	}, nil
}

// formatSearch renders one query's results as AgentFlow's web:search text.
func formatSearch(q string, hits []Hit) string {
	if len(hits) == 0 {
		return fmt.Sprintf("No results found for '%s'. Try with a more general query.", q)
	}
	parts := make([]string, 0, len(hits))
	for i, h := range hits {
		var b strings.Builder
		fmt.Fprintf(&b, "%d. [%s](%s)", i+1, h.Title, h.Link)
		if h.Date != "" {
			b.WriteString("\nDate published: " + h.Date)
		}
		if h.Source != "" {
			b.WriteString("\nSource: " + h.Source)
		}
		b.WriteString("\n")
		if h.Snippet != "" {
			b.WriteString("\n" + h.Snippet)
		}
		parts = append(parts, strings.ReplaceAll(b.String(), "Your browser can't play this video.", ""))
	}
	return fmt.Sprintf("A Google search for '%s' found %d results:\n\n## Web Results\n%s", q, len(hits), strings.Join(parts, "\n\n"))
}

// Visit reads every page (at most Parallel at once) and returns AgentFlow's
// web:visit data: {result, warning, inputs: {urls, goal}}. Each page's text
// is cut at ContentLimit characters. warning is "k/n URLs failed: ..." when
// some pages failed, else nil; the call fails only when every page failed.
// Only http and https URLs are read (ErrInvalidInput otherwise).
func (w *Web) Visit(ctx context.Context, urls []string, goal string) (map[string]any, error) {
	if len(urls) == 0 {
		return nil, fmt.Errorf("%w: urls: no URL given", ErrInvalidInput)
	}
	for i, raw := range urls {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%w: urls[%d]: %q is not an http(s) URL", ErrInvalidInput, i, raw)
		}
		urls[i] = u.String()
		// The reader fetches the page: refuse pages on addresses that are
		// not public before it sees them.
		if err := w.cfg.Policy.CheckURL(ctx, urls[i]); err != nil {
			return nil, fmt.Errorf("urls[%d]: %w", i, err)
		}
	}
	texts, errs := w.each(ctx, urls, func(ctx context.Context, u string) (string, error) {
		text, err := w.reader.Read(ctx, u)
		if err != nil {
			return "", err
		}
		return formatVisit(u, goal, truncateRunes(text, w.cfg.ContentLimit)), nil
	})
	var ok []string
	var bad []string
	for i, err := range errs {
		if err != nil {
			bad = append(bad, urls[i])
			w.log.Warn("web visit failed", "url", urls[i], "err", err)
			continue
		}
		ok = append(ok, texts[i])
	}
	if len(ok) == 0 {
		return nil, fmt.Errorf("every URL failed: %w", firstErr(errs))
	}
	var warning any
	if len(bad) > 0 {
		warning = fmt.Sprintf("%d/%d URLs failed: %s", len(bad), len(urls), strings.Join(bad, ", "))
	}
	inputs := map[string]any{"urls": urls}
	if goal != "" {
		inputs["goal"] = goal
	}
	return map[string]any{
		"result":  strings.Join(ok, querySeparator),
		"warning": warning,
		"inputs":  inputs,
	}, nil
}

func formatVisit(u, goal, text string) string {
	if goal == "" {
		return fmt.Sprintf("The content of %s:\n\n%s", u, text)
	}
	return fmt.Sprintf("The content of %s (goal: %s):\n\n%s", u, goal, text)
}

func truncateRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// each runs fn over items with at most Parallel at once, and waits for all.
func (w *Web) each(ctx context.Context, items []string, fn func(context.Context, string) (string, error)) ([]string, []error) {
	out := make([]string, len(items))
	errs := make([]error, len(items))
	sem := make(chan struct{}, w.cfg.Parallel)
	var wg sync.WaitGroup
	for i, it := range items {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], errs[i] = fn(ctx, it)
		}()
	}
	wg.Wait()
	return out, errs
}
