package browser

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/netguard"
	"github.com/flockrun/flock/sandbox"
	"github.com/flockrun/flock/server/servertest"
)

// counting serves a page and counts the requests it gets.
func counting(t *testing.T, hits *atomic.Int64, tls bool) *httptest.Server {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, `<html><head><title>Secret</title></head><body>internal</body></html>`)
	})
	var srv *httptest.Server
	if tls {
		srv = httptest.NewTLSServer(h)
	} else {
		srv = httptest.NewServer(h)
	}
	t.Cleanup(srv.Close)
	return srv
}

// TestNavigateRefusesPrivate: by default the browser reaches no loopback,
// link-local or private address, by any name, over http or https; the
// error names the host and why, and the server gets no request.
func TestNavigateRefusesPrivate(t *testing.T) {
	var hits atomic.Int64
	site := counting(t, &hits, false)
	tlsSite := counting(t, &hits, true)
	tab, _ := startTab(t, Options{ActionTimeout: 10 * time.Second})
	ctx := context.Background()
	port := site.URL[strings.LastIndex(site.URL, ":")+1:]
	for _, c := range []struct{ url, host, why string }{
		{site.URL + "/", "127.0.0.1", "loopback"},
		{tlsSite.URL + "/", "127.0.0.1", "loopback"},
		{"http://localhost:" + port + "/", "localhost", "loopback"},
		{"http://2130706433:" + port + "/", "127.0.0.1", "loopback"},
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254", "link-local"},
		{"http://10.0.0.1/", "10.0.0.1", "private"},
	} {
		_, err := tab.Navigate(ctx, c.url)
		if !errors.Is(err, netguard.ErrBlocked) || !strings.Contains(err.Error(), c.host) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("navigate %s = %v, want ErrBlocked naming %s and %s", c.url, err, c.host, c.why)
		}
		if se, ok := toolError(err).(*sandbox.Error); !ok || se.Code != sandbox.CodeBusinessFailure {
			t.Errorf("navigate %s answers %v, want 4001", c.url, toolError(err))
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the local servers got %d requests", n)
	}
}

// TestRedirectsAndSubresourcesChecked: a page on an allowed address can
// neither redirect the browser to a refused one nor load images, frames,
// scripts' fetches or links from it; the navigation reports what was
// blocked.
func TestRedirectsAndSubresourcesChecked(t *testing.T) {
	var hits atomic.Int64
	secret := counting(t, &hits, false)
	mux := http.NewServeMux()
	mux.Handle("/redir", http.RedirectHandler(secret.URL+"/admin", http.StatusFound))
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<html><head><title>Allowed</title></head><body>
<img src="%[1]s/pixel.png"><iframe src="%[1]s/frame"></iframe>
<script>fetch(%[1]q + "/api").catch(() => {}); var x = new XMLHttpRequest(); x.open("GET", %[1]q + "/xhr"); x.send();</script>
<a id="go" href="%[1]s/link">go</a></body></html>`, secret.URL)
	})
	ln, err := net.Listen("tcp", "127.0.0.3:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.3: %v", err)
	}
	allowed := httptest.NewUnstartedServer(mux)
	allowed.Listener.Close()
	allowed.Listener = ln
	allowed.Start()
	defer allowed.Close()

	pol := &netguard.Policy{}
	if err := pol.Allow("127.0.0.3"); err != nil {
		t.Fatal(err)
	}
	tab, _ := startTab(t, Options{ActionTimeout: 10 * time.Second, Policy: pol})
	ctx := context.Background()
	_, err = tab.Navigate(ctx, allowed.URL+"/redir")
	if !errors.Is(err, netguard.ErrBlocked) || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Fatalf("navigate through a redirect = %v, want ErrBlocked naming 127.0.0.1", err)
	}
	nav, err := tab.Navigate(ctx, allowed.URL+"/page")
	if err != nil || nav.Title != "Allowed" {
		t.Fatalf("navigate to the allowed page = %+v, %v", nav, err)
	}
	if len(nav.Blocked) == 0 || !strings.Contains(strings.Join(nav.Blocked, " "), "127.0.0.1") {
		t.Errorf("blocked = %v, want the subresources' host", nav.Blocked)
	}
	if _, err := tab.Click(ctx, "#go"); err != nil && !errors.Is(err, netguard.ErrBlocked) {
		t.Logf("click: %v", err)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the refused server got %d requests", n)
	}
}

// BenchmarkNavigate loads a local page through the session's proxy.
func BenchmarkNavigate(b *testing.B) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<html><head><title>T</title></head><body><img src="/i.png"><p>x</p></body></html>`)
	}))
	defer site.Close()
	tab, _ := startTab(b, Options{ActionTimeout: 10 * time.Second, Policy: localOK(b)})
	ctx := context.Background()
	for b.Loop() {
		if _, err := tab.Navigate(ctx, site.URL+"/"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestNavigateRefusesFlockItself is issue 23.6 for the browser, which
// shares the web backend's guard: with loopback allowed (allow_private,
// or allow_hosts 127.0.0.1) the browser still cannot load flock's own
// API, nor its own proxy; other local pages load.
func TestNavigateRefusesFlockItself(t *testing.T) {
	addr := servertest.StartSandbox(t)
	var hits atomic.Int64
	site := counting(t, &hits, false)
	for _, pol := range []*netguard.Policy{{AllowPrivate: true}, localOK(t)} {
		tab, _ := startTab(t, Options{ActionTimeout: 10 * time.Second, Policy: pol})
		ctx := context.Background()
		for _, u := range []string{"http://" + addr.String() + "/health", "http://" + tab.proxy.Addr() + "/"} {
			_, err := tab.Navigate(ctx, u)
			if !errors.Is(err, netguard.ErrBlocked) || !strings.Contains(err.Error(), "flock's own") {
				t.Errorf("navigate %s = %v, want ErrBlocked: flock's own listener", u, err)
			}
		}
		if nav, err := tab.Navigate(ctx, site.URL+"/"); err != nil || nav.Title != "Secret" {
			t.Errorf("a local page: %+v %v", nav, err)
		}
	}
}
