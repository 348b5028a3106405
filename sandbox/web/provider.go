package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/flockrun/flock/internal/netguard"
)

// Hit is one search result.
type Hit struct {
	Title, Link, Snippet, Date, Source string
}

// Searcher is a search provider: one query in, its results out.
type Searcher interface {
	Search(ctx context.Context, query string) ([]Hit, error)
}

// Reader is a page reader: one page URL in, its text (markdown) out.
type Reader interface {
	Read(ctx context.Context, pageURL string) (string, error)
}

// searchers and readers are the known providers by config name. A new
// provider adds an entry here; its constructor gets the parsed config and the
// shared fetcher (HTTP client, retries, disk cache).
var (
	searchers = map[string]func(Config, *fetcher) Searcher{
		"serper": func(c Config, f *fetcher) Searcher {
			return &serper{url: c.SearchURL, key: c.SearchKey, num: c.MaxResults, f: f}
		},
	}
	readers = map[string]func(Config, *fetcher) Reader{
		"jina": func(c Config, f *fetcher) Reader {
			return &jina{base: c.ReaderURL, key: c.ReaderKey, f: f}
		},
	}
)

// maxBody bounds what is read of one provider answer.
const maxBody = 16 << 20

// fetcher sends provider requests: a cached answer first, then the request
// with retries on network errors, 429 and 5xx, storing 2xx answers in the
// cache. Its errors never carry the keys in secrets.
type fetcher struct {
	client  *http.Client
	cache   *cache
	retries int
	secrets []string
}

// do returns the body of a 2xx answer to the request newReq builds (it is
// called once per attempt). provider and cacheReq make the cache key; the
// key must not be part of cacheReq.
func (f *fetcher) do(ctx context.Context, provider, cacheReq string, newReq func(context.Context) (*http.Request, error)) (string, error) {
	key := cacheKey(provider, cacheReq)
	if body, ok := f.cache.get(key); ok {
		return body, nil
	}
	var lastErr error
	for attempt := 0; attempt <= f.retries; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(time.Duration(attempt) * 500 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return "", fmt.Errorf("%w: %s: %w (after %v)", ErrProvider, provider, ctx.Err(), lastErr)
			case <-t.C:
			}
		}
		body, retry, err := f.once(ctx, provider, newReq)
		if err == nil {
			// A cache that cannot be written only costs the next call a request.
			_ = f.cache.put(key, body)
			return body, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			return "", fmt.Errorf("%w: %s: %w", ErrProvider, provider, ctx.Err())
		}
		if !retry {
			break
		}
	}
	return "", lastErr
}

func (f *fetcher) once(ctx context.Context, provider string, newReq func(context.Context) (*http.Request, error)) (body string, retry bool, err error) {
	req, err := newReq(ctx)
	if err != nil {
		return "", false, fmt.Errorf("%w: %s: %s", ErrProvider, provider, f.redact(err.Error()))
	}
	resp, err := f.client.Do(req)
	if errors.Is(err, netguard.ErrBlocked) {
		var be *netguard.BlockedError
		errors.As(err, &be)
		return "", false, fmt.Errorf("%w: %s: %w", ErrProvider, provider, be)
	}
	if err != nil {
		// url.Error carries the request URL, which for a reader includes the
		// page but never a key; redact anyway.
		return "", true, fmt.Errorf("%w: %s: %s", ErrProvider, provider, f.redact(err.Error()))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return "", true, fmt.Errorf("%w: %s: reading the answer: %s", ErrProvider, provider, f.redact(err.Error()))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		excerpt := strings.TrimSpace(string(b))
		if len(excerpt) > 200 {
			excerpt = excerpt[:200] + "..."
		}
		retry = resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
		return "", retry, fmt.Errorf("%w: %s: HTTP %d: %s", ErrProvider, provider, resp.StatusCode, f.redact(excerpt))
	}
	return string(b), false, nil
}

// redact removes every configured key from s.
func (f *fetcher) redact(s string) string {
	for _, k := range f.secrets {
		if k != "" {
			s = strings.ReplaceAll(s, k, "[redacted]")
		}
	}
	return s
}

// serper is a Serper-style search provider: POST {q, num, gl, hl} as JSON
// with the key in X-API-KEY; the answer's "organic" list holds the results.
type serper struct {
	url, key string
	num      int
	f        *fetcher
}

type serperRequest struct {
	Q   string `json:"q"`
	Num int    `json:"num"`
	GL  string `json:"gl"`
	HL  string `json:"hl"`
}

type serperAnswer struct {
	Organic []struct {
		Title   string `json:"title"`
		Link    string `json:"link"`
		Snippet string `json:"snippet"`
		Date    string `json:"date"`
		Source  string `json:"source"`
	} `json:"organic"`
}

func (s *serper) Search(ctx context.Context, query string) ([]Hit, error) {
	r := serperRequest{Q: query, Num: s.num, GL: "us", HL: "en"}
	if hasCJK(query) {
		r.GL, r.HL = "cn", "zh-cn"
	}
	payload, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	body, err := s.f.do(ctx, "serper", s.url+"\x00"+string(payload), func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(payload))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-KEY", s.key)
		return req, nil
	})
	if err != nil {
		return nil, err
	}
	var a serperAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		return nil, fmt.Errorf("%w: serper: unreadable answer: %v", ErrProvider, err)
	}
	hits := make([]Hit, 0, len(a.Organic))
	for _, o := range a.Organic {
		hits = append(hits, Hit{Title: o.Title, Link: o.Link, Snippet: o.Snippet, Date: o.Date, Source: o.Source})
	}
	return hits, nil
}

// jina is a Jina-style reader: GET <base><page url>, with the key (when
// set) as a bearer token; the answer is the page as markdown text.
type jina struct {
	base, key string
	f         *fetcher
}

func (j *jina) Read(ctx context.Context, pageURL string) (string, error) {
	target := j.base + pageURL
	if !strings.HasSuffix(j.base, "/") {
		target = j.base + "/" + pageURL
	}
	return j.f.do(ctx, "jina", target, func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return nil, err
		}
		if j.key != "" {
			req.Header.Set("Authorization", "Bearer "+j.key)
		}
		return req, nil
	})
}

func hasCJK(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

var (
	_ Searcher = (*serper)(nil)
	_ Reader   = (*jina)(nil)
)
