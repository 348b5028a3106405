package web

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flockrun/flock/internal/netguard"
	"github.com/flockrun/flock/sandbox"
)

// serveOn starts h on a loopback address other than 127.0.0.1 (the
// whole of 127/8 is loopback on Linux).
func serveOn(t *testing.T, ip string, h http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// TestProviderOnPrivateAddressNeedsOptIn: a provider URL on a loopback
// address is refused at start, naming the setting and allow_hosts, unless
// the config allows it.
func TestProviderOnPrivateAddressNeedsOptIn(t *testing.T) {
	for _, c := range []struct{ key, url string }{
		{"search_url", "http://127.0.0.1:9/search"},
		{"reader_url", "http://169.254.169.254/"},
		{"reader_url", "http://localhost:3000/"},
	} {
		m := map[string]any{"serper_api_key": "k", c.key: c.url}
		_, err := ParseConfig("apis.web", m)
		var ce *sandbox.ConfigError
		if !errors.As(err, &ce) || ce.Path != "apis.web."+c.key || !strings.Contains(err.Error(), "allow_hosts") {
			t.Errorf("%s %s: %v, want a config error naming apis.web.%s and allow_hosts", c.key, c.url, err, c.key)
		}
		m["allow_private"] = true
		if _, err := ParseConfig("apis.web", m); err != nil {
			t.Errorf("%s %s with allow_private: %v", c.key, c.url, err)
		}
	}
	if _, err := ParseConfig("apis.web", map[string]any{"serper_api_key": "k", "search_url": "http://127.0.0.1:9/", "allow_hosts": []any{"127.0.0.1"}}); err != nil {
		t.Errorf("allow_hosts 127.0.0.1: %v", err)
	}
	if _, err := ParseConfig("apis.web", map[string]any{"serper_api_key": "k", "allow_hosts": "127.0.0.1"}); err == nil || !strings.Contains(err.Error(), "apis.web.allow_hosts") {
		t.Errorf("allow_hosts as a string: %v", err)
	}
}

// TestVisitRefusesPrivatePages: web:visit refuses page URLs on addresses
// that are not public (4001, naming the host and why) before the reader
// sees them; allow_private lets them through.
func TestVisitRefusesPrivatePages(t *testing.T) {
	var hits atomic.Int64
	reader := serveOn(t, "127.0.0.3", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("page text"))
	}))
	cfg := map[string]any{"serper_api_key": "k", "search_url": reader.URL, "reader_url": reader.URL + "/",
		"allow_hosts": []any{"127.0.0.3"}, "retries": 0.0}
	b := provision(t, cfg, nil)
	for _, c := range []struct{ url, host, why string }{
		{"http://127.0.0.1:8080/runs", "127.0.0.1", "loopback"},
		{"http://localhost/", "localhost", "loopback"},
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254", "link-local"},
		{"http://[::1]:4000/", "::1", "loopback"},
		{"http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1", "loopback"},
		{"http://2130706433/", "2130706433", "loopback"},
		{"http://0x7f.1/", "0x7f.1", "loopback"},
		{"http://10.1.2.3/", "10.1.2.3", "private"},
		{"http://0.0.0.0:8080/", "0.0.0.0", "unspecified"},
		{"http://224.0.0.1/", "224.0.0.1", "multicast"},
	} {
		_, err := callTool(t, b, "web:visit", `{"urls":["https://example.org/ok", "`+c.url+`"]}`)
		if err == nil || codeOf(t, err) != sandbox.CodeBusinessFailure || !strings.Contains(err.Error(), c.host) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("visit %s = %v, want 4001 naming %s and %s", c.url, err, c.host, c.why)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the reader got %d requests for refused pages", n)
	}
	cfg["allow_private"] = true
	b = provision(t, cfg, nil)
	if out, err := callTool(t, b, "web:visit", `{"urls":"http://127.0.0.1:8080/runs"}`); err != nil || !strings.Contains(out, "page text") {
		t.Fatalf("visit with allow_private = %s %v", out, err)
	}
}

// TestProviderRedirectToPrivateRefused: a provider on an allowed address
// that redirects to a refused one is stopped at connect time: the call
// fails with 4001 naming the address, and the target gets no request.
func TestProviderRedirectToPrivateRefused(t *testing.T) {
	var inner atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { inner.Add(1) }))
	defer target.Close()
	reader := serveOn(t, "127.0.0.3", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/latest/meta-data", http.StatusFound)
	}))
	b := provision(t, map[string]any{"serper_api_key": "k", "search_url": reader.URL, "reader_url": reader.URL + "/",
		"allow_hosts": []any{"127.0.0.3"}, "retries": 0.0}, nil)
	_, err := callTool(t, b, "web:visit", `{"urls":"https://example.org/p"}`)
	if err == nil || codeOf(t, err) != sandbox.CodeBusinessFailure || !strings.Contains(err.Error(), "127.0.0.1") || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("visit through a redirect = %v, want 4001 naming 127.0.0.1 loopback", err)
	}
	w := b.web
	if _, err := w.Visit(context.Background(), []string{"https://example.org/q"}, ""); !errors.Is(err, netguard.ErrBlocked) {
		t.Fatalf("Visit = %v, want ErrBlocked", err)
	}
	if n := inner.Load(); n != 0 {
		t.Fatalf("the redirect target got %d requests", n)
	}
}
