package httpserver

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkBounds is the cost of the bounds per request: a POST of a small
// JSON body over loopback (keep-alive) to a plain http.Server and to one
// from New (body deadline set and cleared, nosniff).
func BenchmarkBounds(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte(`{"ok":true}`))
	})
	for _, c := range []struct {
		name string
		srv  func() *http.Server
	}{
		{"plain", func() *http.Server { return &http.Server{Handler: h} }},
		{"bounded", func() *http.Server { return New(h, Options{}) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			srv := c.srv()
			go srv.Serve(ln)
			defer srv.Close()
			url := "http://" + ln.Addr().String() + "/"
			client := &http.Client{}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := client.Post(url, "application/json", strings.NewReader(`{"worker_id":"w","action":"x"}`))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
