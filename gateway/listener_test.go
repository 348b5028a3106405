package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flockrun/flock/internal/httpserver"
	"github.com/flockrun/flock/internal/testkit"
)

// TestPrivateListenerBounded: the gateway's private listener (flock run)
// is bounded as the server's are (issue 23.5, 23.7): a client trickling a
// body loses its connection at the body timeout (300 ms here), and every
// answer carries X-Content-Type-Options: nosniff.
func TestPrivateListenerBounded(t *testing.T) {
	g := New(nil)
	defer g.Close()
	g.SetListenOptions(httpserver.Options{HeaderTimeout: 300 * time.Millisecond, BodyTimeout: 300 * time.Millisecond})
	base, err := g.BaseURL()
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(base, "http://")
	for _, head := range []string{
		"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n\r\n{",
		"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 200000\r\n\r\n",
		"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ",
	} {
		if closed, answer := testkit.Trickle(t, addr, head); !closed {
			t.Errorf("%.40q: still open; answer %.80q", head, answer)
		}
	}
	for _, path := range []string{"/v1/models", "/v1/chat/completions", "/nosuch"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: %d without nosniff", path, resp.StatusCode)
		}
	}
}
