package netguard

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// benchGet GETs a loopback page over a new connection each time.
func benchGet(b *testing.B, tr *http.Transport) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	tr.DisableKeepAlives = true
	c := &http.Client{Transport: tr}
	b.ResetTimer()
	for b.Loop() {
		resp, err := c.Get(srv.URL)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// BenchmarkDialPlain and BenchmarkDialGuarded compare a fresh connection
// with and without the policy's checks (loopback allowed by address).
func BenchmarkDialPlain(b *testing.B) {
	benchGet(b, &http.Transport{DialContext: (&net.Dialer{}).DialContext})
}

func BenchmarkDialGuarded(b *testing.B) {
	p := &Policy{}
	if err := p.Allow("127.0.0.1"); err != nil {
		b.Fatal(err)
	}
	benchGet(b, &http.Transport{DialContext: p.DialContext(&net.Dialer{})})
}
