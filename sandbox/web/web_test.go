package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flockrun/flock/sandbox"
)

const testKey = "sk-serper-SECRET-123"
const testJinaKey = "jina-SECRET-456"

// fakeSerper answers like google.serper.dev: two organic results per query,
// HTTP 500 for the query "boom" and 403 echoing the key for "deny".
type fakeSerper struct {
	hits atomic.Int64
	srv  *httptest.Server
}

func newFakeSerper(t testing.TB) *fakeSerper {
	f := &fakeSerper{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		if r.Method != http.MethodPost || r.Header.Get("X-API-KEY") != testKey {
			http.Error(w, `{"message":"Unauthorized."}`, http.StatusUnauthorized)
			return
		}
		var req serperRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
		switch req.Q {
		case "boom":
			http.Error(w, "internal", http.StatusInternalServerError)
			return
		case "deny":
			http.Error(w, "key "+r.Header.Get("X-API-KEY")+" is over quota", http.StatusForbidden)
			return
		case "nothing":
			w.Write([]byte(`{"organic":[]}`))
			return
		}
		fmt.Fprintf(w, `{"searchParameters":{"q":%q,"gl":%q},"organic":[
			{"title":"First about %s","link":"https://a.example/1","snippet":"one snippet","date":"Jan 2, 2026"},
			{"title":"Second","link":"https://b.example/2","snippet":"two snippet","source":"B News"}]}`, req.Q, req.GL, req.Q)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// fakeReader answers like r.jina.ai: GET /<page url> gives a markdown text;
// pages on host "down.example" answer 502.
type fakeReader struct {
	hits    atomic.Int64
	lastKey atomic.Value
	srv     *httptest.Server
}

func newFakeReader(t testing.TB, body string) *fakeReader {
	f := &fakeReader{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		f.lastKey.Store(r.Header.Get("Authorization"))
		page := strings.TrimPrefix(r.URL.Path, "/")
		if strings.Contains(page, "down.example") {
			http.Error(w, "bad gateway", http.StatusBadGateway)
			return
		}
		fmt.Fprintf(w, "Title: %s\n\n%s", page, body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func newTestWeb(t testing.TB, s *fakeSerper, r *fakeReader, extra map[string]any) *Web {
	t.Helper()
	m := map[string]any{"search_url": s.srv.URL, "serper_api_key": testKey, "allow_hosts": []any{"127.0.0.1"}, "reader_url": r.srv.URL + "/", "jina_api_key": testJinaKey, "retries": 0.0}
	for k, v := range extra {
		m[k] = v
	}
	cfg, err := ParseConfig("apis.web", m)
	if err != nil {
		t.Fatal(err)
	}
	return New(cfg, t.TempDir(), nil)
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSearchFormatsSerperResults(t *testing.T) {
	s, r := newFakeSerper(t), newFakeReader(t, "")
	w := newTestWeb(t, s, r, nil)
	data, err := w.Search(context.Background(), []string{"go generics"})
	if err != nil {
		t.Fatal(err)
	}
	got := data["result"].(string)
	want := "A Google search for 'go generics' found 2 results:\n\n## Web Results\n" +
		"1. [First about go generics](https://a.example/1)\nDate published: Jan 2, 2026\n\none snippet\n\n" +
		"2. [Second](https://b.example/2)\nSource: B News\n\ntwo snippet"
	if got != want {
		t.Fatalf("result:\n%s\nwant:\n%s", got, want)
	}
	if in := mustJSON(t, data["inputs"]); in != `{"query":"go generics"}` {
		t.Fatalf("inputs = %s", in)
	}
	if strings.Contains(mustJSON(t, data), testKey) {
		t.Fatal("the key reached the data")
	}
}

func TestSearchSeveralQueries(t *testing.T) {
	s, r := newFakeSerper(t), newFakeReader(t, "")
	w := newTestWeb(t, s, r, nil)
	tests := []struct {
		name    string
		queries []string
		wantErr bool
		parts   []string
	}{
		{"all succeed", []string{"alpha", "beta", "nothing"}, false, []string{"for 'alpha' found 2", "for 'beta' found 2", "No results found for 'nothing'"}},
		{"one fails", []string{"alpha", "boom"}, false, []string{"for 'alpha' found 2", "Search for 'boom' failed: provider failed: serper: HTTP 500"}},
		{"all fail", []string{"boom", "deny"}, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := w.Search(context.Background(), tt.queries)
			if tt.wantErr {
				if !errors.Is(err, ErrProvider) {
					t.Fatalf("err = %v, want ErrProvider", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res := data["result"].(string)
			sections := strings.Split(res, querySeparator)
			if len(sections) != len(tt.queries) {
				t.Fatalf("%d sections, want %d:\n%s", len(sections), len(tt.queries), res)
			}
			for i, p := range tt.parts {
				if !strings.Contains(sections[i], p) {
					t.Errorf("section %d lacks %q:\n%s", i, p, sections[i])
				}
			}
			if in := mustJSON(t, data["inputs"]); !strings.HasPrefix(in, `{"query":[`) {
				t.Fatalf("inputs = %s", in)
			}
		})
	}
}

func TestProviderErrorsNeverCarryTheKey(t *testing.T) {
	s, r := newFakeSerper(t), newFakeReader(t, "")
	w := newTestWeb(t, s, r, nil)
	_, err := w.Search(context.Background(), []string{"deny"})
	if err == nil || !strings.Contains(err.Error(), "HTTP 403") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("the key is not redacted: %v", err)
	}
}

func TestSearchBadInput(t *testing.T) {
	s, r := newFakeSerper(t), newFakeReader(t, "")
	w := newTestWeb(t, s, r, nil)
	for _, q := range [][]string{nil, {""}, {"ok", "  "}} {
		if _, err := w.Search(context.Background(), q); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("Search(%q) err = %v, want ErrInvalidInput", q, err)
		}
	}
	if s.hits.Load() != 0 {
		t.Fatal("bad input reached the provider")
	}
}

func TestSearchCJKAsksChineseResults(t *testing.T) {
	s, r := newFakeSerper(t), newFakeReader(t, "")
	var gl atomic.Value
	inner := s.srv.Config.Handler
	s.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		var sr serperRequest
		json.Unmarshal(b, &sr)
		gl.Store(sr.GL + "/" + sr.HL)
		req.Body = io.NopCloser(strings.NewReader(string(b)))
		inner.ServeHTTP(w, req)
	})
	w := newTestWeb(t, s, r, nil)
	if _, err := w.Search(context.Background(), []string{"北京 天气"}); err != nil {
		t.Fatal(err)
	}
	if gl.Load() != "cn/zh-cn" {
		t.Fatalf("gl/hl = %v", gl.Load())
	}
}

func TestCacheServesRepeatsUntilTTL(t *testing.T) {
	s, r := newFakeSerper(t), newFakeReader(t, "page body")
	w := newTestWeb(t, s, r, map[string]any{"cache_ttl_s": 60.0})
	now := time.Now()
	w.cache.now = func() time.Time { return now }
	ctx := context.Background()
	first, err := w.Search(ctx, []string{"cached"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := w.Search(ctx, []string{"cached"})
	if err != nil {
		t.Fatal(err)
	}
	if s.hits.Load() != 1 || mustJSON(t, first) != mustJSON(t, second) {
		t.Fatalf("hits = %d, want 1 (a cached repeat)", s.hits.Load())
	}
	if _, err := w.Visit(ctx, []string{"https://example.org/x"}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Visit(ctx, []string{"https://example.org/x"}, "other goal"); err != nil {
		t.Fatal(err)
	}
	if r.hits.Load() != 1 {
		t.Fatalf("reader hits = %d, want 1", r.hits.Load())
	}
	if n := w.cache.count(); n != 2 {
		t.Fatalf("cache entries = %d, want 2", n)
	}
	// Failed answers are not cached.
	w.Search(ctx, []string{"boom"})
	w.Search(ctx, []string{"boom"})
	if s.hits.Load() != 3 {
		t.Fatalf("hits = %d, want 3 (failures retried, not cached)", s.hits.Load())
	}
	// No cache file holds a key.
	if err := walkFiles(w.cache.dir, func(b []byte) {
		if strings.Contains(string(b), testKey) || strings.Contains(string(b), testJinaKey) {
			t.Error("a cache file holds a key")
		}
	}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(61 * time.Second)
	if _, err := w.Search(ctx, []string{"cached"}); err != nil {
		t.Fatal(err)
	}
	if s.hits.Load() != 4 {
		t.Fatalf("hits = %d, want 4 (expired entry fetched again)", s.hits.Load())
	}
}

func TestCacheOff(t *testing.T) {
	s, r := newFakeSerper(t), newFakeReader(t, "")
	w := newTestWeb(t, s, r, map[string]any{"cache_ttl_s": 0.0})
	for range 2 {
		if _, err := w.Search(context.Background(), []string{"q"}); err != nil {
			t.Fatal(err)
		}
	}
	if s.hits.Load() != 2 || w.cache.count() != 0 {
		t.Fatalf("hits = %d entries = %d", s.hits.Load(), w.cache.count())
	}
}

func TestRetriesOnServerErrors(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"organic":[{"title":"T","link":"https://t.example","snippet":"s"}]}`))
	}))
	defer srv.Close()
	r := newFakeReader(t, "")
	cfg, err := ParseConfig("apis.web", map[string]any{"search_url": srv.URL, "serper_api_key": testKey, "allow_hosts": []any{"127.0.0.1"}, "reader_url": r.srv.URL, "retries": 1.0})
	if err != nil {
		t.Fatal(err)
	}
	w := New(cfg, t.TempDir(), nil)
	data, err := w.Search(context.Background(), []string{"q"})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 || !strings.Contains(data["result"].(string), "found 1 results") {
		t.Fatalf("calls = %d, data = %v", calls.Load(), data)
	}
}

func TestVisit(t *testing.T) {
	s, r := newFakeSerper(t), newFakeReader(t, strings.Repeat("é", 100))
	w := newTestWeb(t, s, r, map[string]any{"content_limit": 50.0})
	ctx := context.Background()

	data, err := w.Visit(ctx, []string{"https://example.org/page"}, "find the price")
	if err != nil {
		t.Fatal(err)
	}
	text := data["result"].(string)
	body := strings.TrimPrefix(text, "The content of https://example.org/page (goal: find the price):\n\n")
	if body == text || len([]rune(body)) != 50 || !strings.HasPrefix(body, "Title: https://example.org/page") {
		t.Fatalf("result = %q", text)
	}
	if data["warning"] != nil {
		t.Fatalf("warning = %v", data["warning"])
	}
	if in := mustJSON(t, data["inputs"]); in != `{"goal":"find the price","urls":["https://example.org/page"]}` {
		t.Fatalf("inputs = %s", in)
	}
	if got := r.lastKey.Load(); got != "Bearer "+testJinaKey {
		t.Fatalf("Authorization = %v", got)
	}

	data, err = w.Visit(ctx, []string{"https://example.org/a", "https://down.example/b"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if data["warning"] != "1/2 URLs failed: https://down.example/b" {
		t.Fatalf("warning = %v", data["warning"])
	}
	if strings.Contains(data["result"].(string), "down.example") {
		t.Fatal("the failed page is in the result")
	}

	if _, err := w.Visit(ctx, []string{"https://down.example/only"}, ""); !errors.Is(err, ErrProvider) {
		t.Fatalf("all failed: err = %v", err)
	}
	for _, bad := range []string{"file:///etc/passwd", "ftp://x.example/", "not a url", "https://"} {
		if _, err := w.Visit(ctx, []string{bad}, ""); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("Visit(%q) err = %v, want ErrInvalidInput", bad, err)
		}
	}
}

func TestVisitWithoutReaderKey(t *testing.T) {
	s, r := newFakeSerper(t), newFakeReader(t, "x")
	t.Setenv("JINA_API_KEY", "")
	cfg, err := ParseConfig("apis.web", map[string]any{"search_url": s.srv.URL, "serper_api_key": testKey, "allow_hosts": []any{"127.0.0.1"}, "reader_url": r.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg, "", nil).Visit(context.Background(), []string{"http://example.org/"}, ""); err != nil {
		t.Fatal(err)
	}
	if got := r.lastKey.Load(); got != "" {
		t.Fatalf("Authorization = %q, want none", got)
	}
}

func TestParseConfig(t *testing.T) {
	t.Setenv("SERPER_API_KEY", "")
	t.Setenv("JINA_API_KEY", "")
	tests := []struct {
		name string
		m    map[string]any
		env  string
		want string // error substring; "" for success
	}{
		{"defaults with key from env", map[string]any{}, "envkey", ""},
		{"no key", map[string]any{}, "", "apis.web.serper_api_key: not set"},
		{"bad type", map[string]any{"serper_api_key": "k", "content_limit": "big"}, "", "apis.web.content_limit: want a whole number"},
		{"fraction", map[string]any{"serper_api_key": "k", "max_results": 2.5}, "", "apis.web.max_results: want a whole number from 1 to 100, got 2.5"},
		{"json number", map[string]any{"serper_api_key": "k", "max_results": json.Number("2.5")}, "", "apis.web.max_results: want a whole number from 1 to 100, got 2.5"},
		{"too small", map[string]any{"serper_api_key": "k", "timeout_s": 0.0}, "", "apis.web.timeout_s: want a whole number from 1 to"},
		{"bad url", map[string]any{"serper_api_key": "k", "reader_url": "file:///tmp/"}, "", "apis.web.reader_url: want an http(s) URL"},
		{"unknown provider", map[string]any{"serper_api_key": "k", "search_provider": "bing"}, "", `apis.web.search_provider: unknown provider "bing"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("SERPER_API_KEY", tt.env)
			c, err := ParseConfig("apis.web", tt.m)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.SearchKey != tt.env || c.ContentLimit != 50000 || c.CacheTTL != 24*time.Hour || c.SearchURL != "https://google.serper.dev/search" || c.ReaderURL != "https://r.jina.ai/" {
					t.Fatalf("config = %+v", c)
				}
				return
			}
			var ce *sandbox.ConfigError
			if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "envkey") {
				t.Fatal("the key is in the error")
			}
		})
	}
}
