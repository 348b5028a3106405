package web

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/flockrun/flock/sandbox"
	"github.com/flockrun/flock/sandbox/internal/netguard"
)

// Config is the backend's section of the sandbox config (apis.web), after
// ${VAR} expansion. Every field has a default, so an empty section works
// when SERPER_API_KEY (and optionally JINA_API_KEY) are set.
type Config struct {
	// SearchProvider names the search provider: "serper" (the default).
	SearchProvider string
	// SearchURL is where the Serper-style provider POSTs its JSON request
	// (search_url; default https://google.serper.dev/search).
	SearchURL string
	// SearchKey is sent as X-API-KEY (serper_api_key, else $SERPER_API_KEY).
	// It is never logged, echoed or written to the cache.
	SearchKey string
	// ReaderProvider names the page reader: "jina" (the default).
	ReaderProvider string
	// ReaderURL is the Jina-style reader's base; a page is fetched with
	// GET <ReaderURL><page url> (reader_url; default https://r.jina.ai/).
	ReaderURL string
	// ReaderKey is sent as "Authorization: Bearer" when set (jina_api_key,
	// else $JINA_API_KEY); the reader works without one.
	ReaderKey string
	// MaxResults is the number of results asked per query (max_results; 10).
	MaxResults int
	// ContentLimit cuts each page's text to this many characters
	// (content_limit; 50000, as AgentFlow).
	ContentLimit int
	// CacheTTL is how long a provider's answer is served from the disk
	// cache (cache_ttl_s; default 86400; 0 turns the cache off).
	CacheTTL time.Duration
	// Timeout bounds one provider request (timeout_s; 30).
	Timeout time.Duration
	// Retries is how many times a request that failed with a network error,
	// 429 or 5xx is tried again (retries; 2), after 500ms, then 1s, ...
	Retries int
	// Parallel bounds the queries or URLs of one call fetched at once
	// (parallel; 5).
	Parallel int
	// Policy is where the backend may connect and which page URLs it
	// passes on (allow_hosts, allow_private): public addresses only by
	// default. nil means the default.
	Policy *netguard.Policy
}

// ParseConfig reads the backend's config section. path is the section's JSON
// path (e.g. "apis.web"); errors are *sandbox.ConfigError naming the setting.
func ParseConfig(path string, m map[string]any) (Config, error) {
	c := Config{
		SearchProvider: "serper",
		SearchURL:      "https://google.serper.dev/search",
		ReaderProvider: "jina",
		ReaderURL:      "https://r.jina.ai/",
		MaxResults:     10,
		ContentLimit:   50000,
		CacheTTL:       24 * time.Hour,
		Timeout:        30 * time.Second,
		Retries:        2,
		Parallel:       5,
	}
	var err error
	str := func(key string, dst *string) {
		if err != nil {
			return
		}
		v, ok := m[key]
		if !ok || v == nil {
			return
		}
		s, isStr := v.(string)
		if !isStr {
			err = &sandbox.ConfigError{Path: path + "." + key, Reason: "want a string"}
			return
		}
		if s != "" {
			*dst = s
		}
	}
	num := func(key string, min, max int, dst *int) {
		if err != nil {
			return
		}
		n, ok, nerr := sandbox.IntSetting(m, path, key, int64(min), int64(max))
		if nerr != nil {
			err = nerr
			return
		}
		if ok {
			*dst = int(n)
		}
	}
	str("search_provider", &c.SearchProvider)
	str("search_url", &c.SearchURL)
	str("serper_api_key", &c.SearchKey)
	str("reader_provider", &c.ReaderProvider)
	str("reader_url", &c.ReaderURL)
	str("jina_api_key", &c.ReaderKey)
	const maxSecs = int(sandbox.MaxSeconds / time.Second)
	num("max_results", 1, 100, &c.MaxResults)
	num("content_limit", 1, sandbox.MaxOutputLimit, &c.ContentLimit)
	num("retries", 0, 10, &c.Retries)
	num("parallel", 1, 64, &c.Parallel)
	ttl, timeout := int(c.CacheTTL/time.Second), int(c.Timeout/time.Second)
	num("cache_ttl_s", 0, maxSecs, &ttl)
	num("timeout_s", 1, maxSecs, &timeout)
	if err != nil {
		return Config{}, err
	}
	c.CacheTTL, c.Timeout = time.Duration(ttl)*time.Second, time.Duration(timeout)*time.Second
	if c.SearchKey == "" {
		c.SearchKey = os.Getenv("SERPER_API_KEY")
	}
	if c.ReaderKey == "" {
		c.ReaderKey = os.Getenv("JINA_API_KEY")
	}
	if c.SearchKey == "" {
		return Config{}, &sandbox.ConfigError{Path: path + ".serper_api_key", Reason: "not set (set it, or the environment variable SERPER_API_KEY)"}
	}
	pol, perr := netguard.Parse(path, m)
	if perr != nil {
		var se *netguard.SettingError
		if errors.As(perr, &se) {
			return Config{}, &sandbox.ConfigError{Path: se.Path, Reason: se.Reason}
		}
		return Config{}, perr
	}
	c.Policy = pol
	for _, kv := range [][2]string{{"search_url", c.SearchURL}, {"reader_url", c.ReaderURL}} {
		key, raw := kv[0], kv[1]
		u, perr := url.Parse(raw)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Config{}, &sandbox.ConfigError{Path: path + "." + key, Reason: "want an http(s) URL"}
		}
		if err := pol.Static(u.Hostname()); err != nil {
			var be *netguard.BlockedError
			errors.As(err, &be)
			return Config{}, &sandbox.ConfigError{Path: path + "." + key, Reason: fmt.Sprintf("%s is not a public address (%s): list %q in %s.allow_hosts (or set allow_private) to use a provider there", u.Host, be.Reason, u.Hostname(), path)}
		}
	}
	if _, ok := searchers[c.SearchProvider]; !ok {
		return Config{}, &sandbox.ConfigError{Path: path + ".search_provider", Reason: fmt.Sprintf("unknown provider %q (known: serper)", c.SearchProvider)}
	}
	if _, ok := readers[c.ReaderProvider]; !ok {
		return Config{}, &sandbox.ConfigError{Path: path + ".reader_provider", Reason: fmt.Sprintf("unknown provider %q (known: jina)", c.ReaderProvider)}
	}
	return c, nil
}
