package web

import (
	"errors"
	"net/url"
	"os"
	"time"

	"github.com/flockrun/flock/internal/netguard"
	"github.com/flockrun/flock/phases/settings"
	"github.com/flockrun/flock/sandbox"
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

// rawConfig is the section as written.
type rawConfig struct {
	SearchProvider string         `json:"search_provider" default:"serper"`
	SearchURL      string         `json:"search_url" default:"https://google.serper.dev/search"`
	SerperAPIKey   string         `json:"serper_api_key"`
	ReaderProvider string         `json:"reader_provider" default:"jina"`
	ReaderURL      string         `json:"reader_url" default:"https://r.jina.ai/"`
	JinaAPIKey     string         `json:"jina_api_key"`
	MaxResults     *sandbox.Count `json:"max_results" default:"10" min:"1" max:"100"`
	ContentLimit   *sandbox.Count `json:"content_limit" default:"50000" min:"1" max:"1073741824"` // sandbox.MaxOutputLimit
	Retries        *sandbox.Count `json:"retries" default:"2" min:"0" max:"10"`
	Parallel       *sandbox.Count `json:"parallel" default:"5" min:"1" max:"64"`
	CacheTTL       *sandbox.Count `json:"cache_ttl_s" default:"86400" min:"0" max:"10000000"` // sandbox.MaxSeconds
	Timeout        *sandbox.Count `json:"timeout_s" default:"30" min:"1" max:"10000000"`      // sandbox.MaxSeconds
	netguard.Settings

	policy *netguard.Policy
}

// Normalize takes the keys not in the section from the environment.
func (s *rawConfig) Normalize() error {
	if s.SerperAPIKey == "" {
		s.SerperAPIKey = os.Getenv("SERPER_API_KEY")
	}
	if s.JinaAPIKey == "" {
		s.JinaAPIKey = os.Getenv("JINA_API_KEY")
	}
	return nil
}

// Validate checks that a search key is set, the policy, the providers'
// URLs against it, and the providers' names.
func (s *rawConfig) Validate() error {
	if s.SerperAPIKey == "" {
		return settings.Errorf("serper_api_key", "not set (set it, or the environment variable SERPER_API_KEY)")
	}
	pol, err := s.Settings.Policy()
	if err != nil {
		return err
	}
	s.policy = pol
	for _, kv := range [][2]string{{"search_url", s.SearchURL}, {"reader_url", s.ReaderURL}} {
		key, raw := kv[0], kv[1]
		u, perr := url.Parse(raw)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return settings.Errorf(key, "want an http(s) URL")
		}
		if err := pol.Static(u.Hostname()); err != nil {
			var be *netguard.BlockedError
			errors.As(err, &be)
			return settings.Errorf(key, "%s is not a public address (%s): list %q in %s.allow_hosts (or set allow_private) to use a provider there",
				u.Host, be.Reason, u.Hostname(), "apis."+Name)
		}
	}
	if _, ok := searchers[s.SearchProvider]; !ok {
		return settings.Errorf("search_provider", "unknown provider %q (known: serper)", s.SearchProvider)
	}
	if _, ok := readers[s.ReaderProvider]; !ok {
		return settings.Errorf("reader_provider", "unknown provider %q (known: jina)", s.ReaderProvider)
	}
	return nil
}

// ParseConfig reads the backend's config section. path is the section's JSON
// path (e.g. "apis.web"); errors are *sandbox.ConfigError naming the setting.
func ParseConfig(path string, m map[string]any) (Config, error) {
	return parseConfig(path, func(v any) error { return sandbox.DecodeConfig(m, v) })
}

// parseConfig is ParseConfig of the section decode reads (Env.Decode at
// Provision, which also warns of the keys rawConfig does not name).
func parseConfig(path string, decode func(any) error) (Config, error) {
	var s rawConfig
	if err := decode(&s); err != nil {
		return Config{}, sandbox.Within(path, err)
	}
	return Config{
		SearchProvider: s.SearchProvider, SearchURL: s.SearchURL, SearchKey: s.SerperAPIKey,
		ReaderProvider: s.ReaderProvider, ReaderURL: s.ReaderURL, ReaderKey: s.JinaAPIKey,
		MaxResults: int(s.MaxResults.Int()), ContentLimit: int(s.ContentLimit.Int()),
		CacheTTL: time.Duration(s.CacheTTL.Int()) * time.Second, Timeout: time.Duration(s.Timeout.Int()) * time.Second,
		Retries: int(s.Retries.Int()), Parallel: int(s.Parallel.Int()),
		Policy: s.policy,
	}, nil
}
