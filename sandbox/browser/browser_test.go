package browser

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/netguard"
)

// needChromium skips the test when chromium is absent (scripts/test.sh
// installs it with apt-get when it can, and under it the test fails).
func needChromium(tb testing.TB) string {
	tb.Helper()
	p, err := FindChromium(os.Getenv("FLOCK_CHROMIUM"))
	if err != nil {
		if os.Getenv("FLOCK_TEST_REQUIRE_BINARIES") != "" {
			tb.Fatalf("browser tests need chromium, which scripts/test.sh should have installed: %v", err)
		}
		tb.Skipf("browser tests need chromium (apt-get install chromium): %v", err)
	}
	return p
}

// formSite serves a form page, its result page, a 404, and a page with a
// file input.
func formSite(tb testing.TB) *httptest.Server {
	tb.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><html><head><title>Greeter</title></head><body>
<h1>Greeter</h1>
<form action="/hello" method="get">
  <input id="name" name="name" type="text">
  <button id="go" type="submit">Greet</button>
</form>
<input id="upload" type="file">
</body></html>`)
	})
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><html><head><title>Result</title></head><body><p id="result">Hello, %s!</p></body></html>`,
			html.EscapeString(r.URL.Query().Get("name")))
	})
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	return srv
}

// localOK allows the tests' pages on 127.0.0.1 (opting in as a config's
// allow_hosts does).
func localOK(tb testing.TB) *netguard.Policy {
	tb.Helper()
	p := &netguard.Policy{}
	if err := p.Allow("127.0.0.1"); err != nil {
		tb.Fatal(err)
	}
	return p
}

func startTab(tb testing.TB, opts Options) (*Tab, string) {
	tb.Helper()
	opts.Chromium = needChromium(tb)
	ws := tb.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tab, err := Start(ctx, ws, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { tab.Close() })
	return tab, ws
}

func TestTabFormFlow(t *testing.T) {
	site := formSite(t)
	tab, ws := startTab(t, Options{ActionTimeout: 10 * time.Second, InlineImageMax: 1 << 20, Policy: localOK(t)})
	ctx := context.Background()

	nav, err := tab.Navigate(ctx, site.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	if nav.URL != site.URL+"/" || nav.Title != "Greeter" || nav.Status != 200 {
		t.Fatalf("navigate = %+v", nav)
	}
	if _, err := tab.Type(ctx, "#name", "Ada"); err != nil {
		t.Fatal(err)
	}
	clicked, err := tab.Click(ctx, "#go")
	if err != nil {
		t.Fatal(err)
	}
	if clicked["url"] != site.URL+"/hello?name=Ada" || clicked["title"] != "Result" {
		t.Fatalf("click = %v", clicked)
	}
	got, err := tab.Extract(ctx, "#result")
	if err != nil {
		t.Fatal(err)
	}
	if got["text"] != "Hello, Ada!" || got["html"] != `<p id="result">Hello, Ada!</p>` {
		t.Fatalf("extract = %v", got)
	}
	body, err := tab.Extract(ctx, "")
	if err != nil || body["selector"] != "body" || body["text"] != "Hello, Ada!" {
		t.Fatalf("extract body = %v, %v", body, err)
	}

	shot, err := tab.Screenshot(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	path := shot["image_path"].(string)
	if filepath.Dir(path) != filepath.Join(ws, "screenshots") {
		t.Fatalf("image_path %s is not in the workspace", path)
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 8 || string(b[1:4]) != "PNG" {
		t.Fatalf("screenshot file: %v", err)
	}
	if size := shot["size"].([]int); size[0] != 1280 || size[1] != 800 {
		t.Fatalf("size = %v", size)
	}
	if img, ok := shot["image"].([]byte); !ok || len(img) != len(b) {
		t.Fatal("the small screenshot is not inline")
	}
	shot2, err := tab.Screenshot(ctx, true)
	if err != nil || shot2["image_path"] == path {
		t.Fatalf("second screenshot = %v, %v", shot2, err)
	}

	missing, err := tab.Navigate(ctx, site.URL+"/nope")
	if err != nil || missing.Status != 404 {
		t.Fatalf("404 page: %+v, %v", missing, err)
	}
}

func TestTabRefusals(t *testing.T) {
	site := formSite(t)
	tab, _ := startTab(t, Options{ActionTimeout: 2 * time.Second, Policy: localOK(t)})
	ctx := context.Background()
	for _, u := range []string{"file:///etc/passwd", "file://" + t.TempDir(), "javascript:alert(1)", "chrome://settings", "data:text/html,hi", "ftp://x.example/", "/relative"} {
		if _, err := tab.Navigate(ctx, u); !errors.Is(err, ErrNotAllowed) {
			t.Errorf("Navigate(%q) err = %v, want ErrNotAllowed", u, err)
		}
	}
	if _, err := tab.Navigate(ctx, site.URL+"/"); err != nil {
		t.Fatal(err)
	}
	if _, err := tab.Type(ctx, "#upload", "/etc/passwd"); !errors.Is(err, ErrNotAllowed) {
		t.Fatalf("typing into a file input: err = %v", err)
	}
	// The action's own timeout (2 s) ends the wait for a missing
	// element, not the caller's (a minute): no time is asserted.
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := tab.Click(cctx, "#absent"); !errors.Is(err, ErrNoElement) || cctx.Err() != nil {
		t.Fatalf("click on a missing element: err = %v (caller's context: %v), want ErrNoElement from the action timeout", err, cctx.Err())
	}
	// The tab still works.
	if nav, err := tab.Navigate(ctx, "about:blank"); err != nil || nav.URL != "about:blank" {
		t.Fatalf("about:blank: %+v, %v", nav, err)
	}
}

func TestTabCloseLeavesNoProcess(t *testing.T) {
	tab, ws := startTab(t, Options{Policy: localOK(t)})
	profile := filepath.Join(ws, ".chromium-profile")
	if n := len(profileProcesses(profile)); n == 0 {
		t.Fatal("no chromium process found for the profile while running")
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	if pids := profileProcesses(profile); len(pids) != 0 {
		t.Fatalf("chromium processes survive Close: %v", pids)
	}
	if _, err := os.Stat(profile); !os.IsNotExist(err) {
		t.Fatalf("profile still there: %v", err)
	}
	if err := tab.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := tab.Navigate(context.Background(), "about:blank"); !errors.Is(err, ErrClosed) {
		t.Fatalf("navigate after Close: err = %v", err)
	}
}

// TestTabNavigateUnreachable: a page the proxy cannot reach (nothing
// listens there; no network) fails naming why, as the proxy saw it, not
// only chromium's net::ERR_TUNNEL_CONNECTION_FAILED.
func TestTabNavigateUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	tab, _ := startTab(t, Options{ActionTimeout: 10 * time.Second, Policy: localOK(t)})
	_, err = tab.Navigate(context.Background(), "https://"+addr+"/")
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err = %v: want the proxy's cause (connection refused) and the address", err)
	}
}
