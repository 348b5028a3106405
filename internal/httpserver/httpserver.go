// Package httpserver builds the http.Server of every HTTP listener flock
// opens (the API and viewer, the sandbox service, the model gateway's
// private listener, the sandbox's network proxy), so that each holds the
// same bounds on what a client can keep of it:
//
//   - the request line and header must arrive within HeaderTimeout;
//   - a body must arrive within BodyTimeout of the header's end: a client
//     that trickles a body (a large Content-Length, a byte every few
//     seconds) loses its connection then, whether or not the handler reads
//     the body, and with or without a token;
//   - every answer carries X-Content-Type-Options: nosniff.
//
// There is no http.Server.ReadTimeout: it would also cut event streams and
// long calls (net/http cancels a request's context when the connection's
// read deadline passes), so the body's deadline is set per request and
// cleared once the body has been read.
package httpserver

import (
	"io"
	"log"
	"net/http"
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultHeaderTimeout = 10 * time.Second
	DefaultBodyTimeout   = 60 * time.Second
	DefaultIdleTimeout   = 2 * time.Minute
)

// Options bound a server's connections; zero fields take the defaults.
type Options struct {
	// HeaderTimeout bounds reading a request's line and header.
	HeaderTimeout time.Duration
	// BodyTimeout bounds reading a request's body, from the end of its
	// header.
	BodyTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long.
	IdleTimeout time.Duration
	// ErrorLog receives net/http's own errors; nil is the standard logger.
	ErrorLog *log.Logger
}

func (o Options) withDefaults() Options {
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = DefaultHeaderTimeout
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	return o
}

// New returns a server of h with o's bounds (see the package doc).
func New(h http.Handler, o Options) *http.Server {
	o = o.withDefaults()
	return &http.Server{
		Handler:           Handler(h, o.BodyTimeout),
		ReadHeaderTimeout: o.HeaderTimeout,
		IdleTimeout:       o.IdleTimeout,
		ErrorLog:          o.ErrorLog,
	}
}

// Handler wraps h: every answer carries X-Content-Type-Options: nosniff,
// and a request with a body must deliver it within bodyTimeout (0: the
// default).
func Handler(h http.Handler, bodyTimeout time.Duration) http.Handler {
	if bodyTimeout <= 0 {
		bodyTimeout = DefaultBodyTimeout
	}
	return &bounded{next: h, body: bodyTimeout}
}

type bounded struct {
	next http.Handler
	body time.Duration
}

func (b *bounded) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Body != nil && r.Body != http.NoBody {
		rc := http.NewResponseController(w)
		// When the body is not read whole, the deadline stays set, so the
		// server's own read of what is left (after the handler) ends
		// there too and the connection is closed.
		if err := rc.SetReadDeadline(time.Now().Add(b.body)); err == nil {
			r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		}
	}
	b.next.ServeHTTP(w, r)
}

// deadlineBody clears the read deadline once the body has been read to its
// end: from then on the connection's reads are net/http's watch for the
// client going away, which must not time out during a long answer.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	once sync.Once
}

func (d *deadlineBody) Read(p []byte) (int, error) {
	n, err := d.ReadCloser.Read(p)
	if err == io.EOF {
		d.once.Do(func() { _ = d.rc.SetReadDeadline(time.Time{}) })
	}
	return n, err
}
