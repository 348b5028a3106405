package netguard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flockrun/flock/phases/settings"
)

func TestClassify(t *testing.T) {
	for _, tt := range []struct{ host, want string }{
		{"127.0.0.1", "loopback"}, {"127.9.9.9", "loopback"}, {"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"}, {"169.254.169.254", "link-local (cloud metadata)"},
		{"fe80::1", "link-local (cloud metadata)"}, {"10.1.2.3", "private"}, {"172.16.0.1", "private"},
		{"192.168.1.1", "private"}, {"fd00::1", "private"}, {"0.0.0.0", "unspecified"}, {"::", "unspecified"},
		{"224.0.0.1", "multicast"}, {"ff02::1", "multicast"}, {"100.64.0.1", "shared (carrier-grade NAT)"},
		{"255.255.255.255", "broadcast"}, {"0.1.2.3", `"this network" (0.0.0.0/8)`},
		{"8.8.8.8", ""}, {"2606:4700::1111", ""}, {"93.184.216.34", ""},
	} {
		if got := Classify(netip.MustParseAddr(tt.host)); got != tt.want {
			t.Errorf("Classify(%s) = %q, want %q", tt.host, got, tt.want)
		}
	}
}

// TestHostForms: the numeric forms of IPv4 that URL parsers accept are
// addresses, not names.
func TestHostForms(t *testing.T) {
	for _, tt := range []struct{ host, want string }{
		{"2130706433", "127.0.0.1"}, {"0x7f.1", "127.0.0.1"}, {"0177.0.0.1", "127.0.0.1"},
		{"127.1", "127.0.0.1"}, {"0x7f000001", "127.0.0.1"}, {"[::1]", "::1"}, {"169.254.169.254.", "169.254.169.254"},
	} {
		a, ok := hostAddr(tt.host)
		if !ok || a.String() != tt.want {
			t.Errorf("hostAddr(%q) = %v %v, want %s", tt.host, a, ok, tt.want)
		}
	}
	for _, h := range []string{"example.com", "1.2.3.4.5", "256.1.1.1", "0x", "a1"} {
		if a, ok := hostAddr(h); ok && h != "0x" {
			t.Errorf("hostAddr(%q) = %v, want a name", h, a)
		}
	}
}

func TestPolicyResolve(t *testing.T) {
	ctx := context.Background()
	p := &Policy{}
	for _, h := range []string{"127.0.0.1", "localhost", "2130706433", "169.254.169.254", "[::1]", "10.0.0.1"} {
		_, err := p.Resolve(ctx, h)
		var be *BlockedError
		if !errors.As(err, &be) || !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), h) || !strings.Contains(err.Error(), "allow_hosts") {
			t.Errorf("Resolve(%s) = %v, want a BlockedError naming it", h, err)
		}
	}
	if err := p.Allow("127.0.0.0/8", "internal.test"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Resolve(ctx, "localhost"); err != nil {
		// localhost may also resolve to ::1, which stays refused; one
		// allowed address is enough.
		t.Errorf("Resolve(localhost) with 127/8 allowed = %v", err)
	}
	if _, err := p.Resolve(ctx, "169.254.169.254"); !errors.Is(err, ErrBlocked) {
		t.Errorf("metadata allowed by 127/8: %v", err)
	}
	if _, err := (&Policy{AllowPrivate: true}).Resolve(ctx, "169.254.169.254"); err != nil {
		t.Errorf("allow_private: %v", err)
	}
	parse := func(doc string) error {
		var s Settings
		if err := settings.Decode([]byte(doc), &s); err != nil {
			return err
		}
		_, err := s.Policy()
		return err
	}
	for _, bad := range []string{`"x"`, `[3]`, `["10.0.0.0/33"]`, `["host:80"]`, `[" "]`} {
		if err := parse(`{"allow_hosts": ` + bad + `}`); err == nil || !strings.HasPrefix(err.Error(), "allow_hosts") {
			t.Errorf("allow_hosts %s: %v, want an error naming allow_hosts", bad, err)
		}
	}
	if err := parse(`{"allow_private": "yes"}`); err == nil || !strings.HasPrefix(err.Error(), "allow_private: want true or false") {
		t.Errorf("allow_private yes: %v", err)
	}
}

// TestDialChecksAtConnect: an http.Client dialing through the policy
// cannot reach loopback, even through a redirect from an allowed host.
func TestDialChecksAtConnect(t *testing.T) {
	var hits atomic.Int64
	inner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer inner.Close()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	outer := httptest.NewUnstartedServer(http.RedirectHandler(inner.URL+"/secret", http.StatusFound))
	outer.Listener.Close()
	outer.Listener = ln
	outer.Start()
	defer outer.Close()

	p := &Policy{}
	c := &http.Client{Transport: &http.Transport{DialContext: p.DialContext(&net.Dialer{})}}
	_, err = c.Get(inner.URL)
	if !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), "127.0.0.1") || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("GET loopback = %v, want ErrBlocked naming it", err)
	}
	if err := p.Allow("127.0.0.2"); err != nil {
		t.Fatal(err)
	}
	_, err = c.Get(outer.URL)
	if !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Fatalf("redirect to loopback = %v, want ErrBlocked", err)
	}
	if hits.Load() != 0 {
		t.Fatalf("the loopback server got %d requests", hits.Load())
	}
}

// TestProxy: the proxy refuses CONNECT and plain requests to refused
// addresses (403, the header, the reason, remembered) and passes allowed
// ones.
func TestProxy(t *testing.T) {
	var hits atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "hello")
	}))
	defer site.Close()
	p := &Policy{}
	x, err := StartProxy(p)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	pu, _ := url.Parse("http://" + x.Addr())
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	resp, err := c.Get(site.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || resp.Header.Get(Refused) == "" || !strings.Contains(string(b), "loopback") {
		t.Fatalf("plain GET = %d %q", resp.StatusCode, b)
	}
	// CONNECT by hand.
	conn, err := net.Dial("tcp", x.Addr())
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(site.URL, "http://")
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", host, host)
	cr, err := http.ReadResponse(bufio.NewReader(conn), nil)
	conn.Close()
	if err != nil || cr.StatusCode != 403 {
		t.Fatalf("CONNECT = %v %v, want 403", cr, err)
	}
	if r := x.Refusals(); len(r) != 2 || r[0].Reason != "loopback" || len(x.Refusals()) != 0 {
		t.Fatalf("refusals = %v", r)
	}
	if hits.Load() != 0 {
		t.Fatalf("the site got %d requests", hits.Load())
	}
	if err := p.Allow("127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	resp, err = c.Get(site.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "hello" {
		t.Fatalf("allowed GET = %d %q", resp.StatusCode, b)
	}
}
