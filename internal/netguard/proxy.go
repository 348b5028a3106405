package netguard

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/flockrun/flock/internal/httpserver"
	"github.com/flockrun/flock/internal/selfaddr"
)

// Proxy is an HTTP forward proxy on 127.0.0.1 that connects only where its
// policy allows: CONNECT tunnels (https, wss) and plain http requests in
// absolute form. It follows no redirect itself: the client's next request
// comes through it again. A refused destination is answered 403 with the
// reason and the header Refused, and remembered (Refusals).
type Proxy struct {
	policy    *Policy
	ln        net.Listener
	srv       *http.Server
	transport *http.Transport
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)

	mu       sync.Mutex
	refusals []*BlockedError // since the last Refusals; guarded by mu
	failures []error         // allowed destinations it could not reach, since the last Failures; guarded by mu
	closed   bool            // guarded by mu; no tunnel starts once set

	wg     sync.WaitGroup  // Serve and the tunnels
	ctx    context.Context // ended by Close, which ends the tunnels
	cancel context.CancelFunc
}

// Refused is the header of the proxy's 403 answers.
const Refused = "X-Flock-Refused"

// maxRefusals bounds the refusals remembered between two Refusals calls.
const maxRefusals = 64

// StartProxy listens on 127.0.0.1 and serves until Close.
func StartProxy(p *Policy) (*Proxy, error) {
	// The proxy's own address is flock's: no policy reaches it.
	ln, err := selfaddr.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	dial := p.DialContext(&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	x := &Proxy{policy: p, ln: ln, dial: dial, ctx: ctx, cancel: cancel,
		transport: &http.Transport{DialContext: dial, Proxy: nil, ForceAttemptHTTP2: false,
			MaxIdleConns: 16, IdleConnTimeout: 30 * time.Second, ResponseHeaderTimeout: 60 * time.Second}}
	x.srv = httpserver.New(x, httpserver.Options{HeaderTimeout: 30 * time.Second})
	x.wg.Add(1)
	go func() { // owned by Close, which waits for it
		defer x.wg.Done()
		_ = x.srv.Serve(ln)
	}()
	return x, nil
}

// Addr is the proxy's host:port.
func (x *Proxy) Addr() string { return x.ln.Addr().String() }

// Refusals returns the destinations refused since the last call, oldest
// first, and forgets them.
func (x *Proxy) Refusals() []*BlockedError {
	x.mu.Lock()
	defer x.mu.Unlock()
	r := x.refusals
	x.refusals = nil
	return r
}

// Failures returns why the proxy could not reach allowed destinations
// (a refused connection, a name that does not resolve) since the last
// call, oldest first, and forgets them: the browser shows only
// net::ERR_TUNNEL_CONNECTION_FAILED for them.
func (x *Proxy) Failures() []error {
	x.mu.Lock()
	defer x.mu.Unlock()
	f := x.failures
	x.failures = nil
	return f
}

// Close stops the proxy and ends its tunnels; it waits for them.
func (x *Proxy) Close() error {
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return nil
	}
	x.closed = true
	x.mu.Unlock()
	x.cancel()
	err := x.srv.Close()
	x.transport.CloseIdleConnections()
	x.wg.Wait()
	return err
}

func (x *Proxy) refuse(w http.ResponseWriter, err error) {
	var be *BlockedError
	if errors.As(err, &be) {
		x.mu.Lock()
		if len(x.refusals) < maxRefusals {
			x.refusals = append(x.refusals, be)
		}
		x.mu.Unlock()
		w.Header().Set(Refused, "1")
		http.Error(w, be.Error(), http.StatusForbidden)
		return
	}
	x.mu.Lock()
	if len(x.failures) < maxRefusals {
		x.failures = append(x.failures, err)
	}
	x.mu.Unlock()
	http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
}

// hopHeaders are not forwarded.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func (x *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		x.tunnel(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "proxy: only absolute http URLs and CONNECT", http.StatusBadRequest)
		return
	}
	if r.Header.Get("Upgrade") != "" {
		http.Error(w, "proxy: protocol upgrades over plain http are not proxied", http.StatusNotImplemented)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	resp, err := x.transport.RoundTrip(out)
	if err != nil {
		x.refuse(w, err)
		return
	}
	defer resp.Body.Close()
	for _, h := range hopHeaders {
		resp.Header.Del(h)
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// tunnel answers CONNECT: dial through the policy, then copy both ways.
func (x *Proxy) tunnel(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	up, err := x.dial(ctx, "tcp", r.Host)
	cancel()
	if err != nil {
		x.refuse(w, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	x.mu.Lock()
	closed := x.closed
	if !closed && ok {
		x.wg.Add(1)
	}
	x.mu.Unlock()
	if closed || !ok {
		up.Close()
		http.Error(w, "proxy: closed", http.StatusServiceUnavailable)
		return
	}
	defer x.wg.Done()
	down, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if _, err := down.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n")); err != nil {
		up.Close()
		down.Close()
		return
	}
	stop := context.AfterFunc(x.ctx, func() { up.Close(); down.Close() })
	defer stop()
	var copies sync.WaitGroup
	copies.Add(1)
	go func() { // owned: tunnel waits for it below
		defer copies.Done()
		if n := buf.Reader.Buffered(); n > 0 {
			b, _ := buf.Reader.Peek(n)
			_, _ = up.Write(b)
		}
		_, _ = io.Copy(up, down)
		closeWrite(up)
	}()
	_, _ = io.Copy(down, up)
	closeWrite(down)
	copies.Wait()
	up.Close()
	down.Close()
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
	} else {
		_ = c.Close()
	}
}

var _ http.Handler = (*Proxy)(nil)
