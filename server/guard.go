package server

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/flockrun/flock/configs"
)

// guard refuses requests that a web page could have sent on the user's
// behalf (cross-site request forgery) or that reached the server under a
// name an attacker controls (DNS rebinding). It sees only the
// *http.Request, runs before authentication and routing, and keeps no
// state after construction, so it is safe for concurrent use.
//
//   - Host: the Host header must name a loopback name or address, the
//     specific host of the listen address, or one of public_names.
//   - Origin: when present, it must be the request's own origin
//     (scheme://Host) or one of allowed_origins. "null" is foreign.
//   - Content-Type: a method other than GET, HEAD and OPTIONS must send
//     application/json, except with an empty body and no Content-Type.
//
// Browsers send any of text/plain, application/x-www-form-urlencoded and
// multipart/form-data cross-site without a CORS preflight; requiring JSON
// forces a preflight, and refusing foreign origins stops the rest.
type guard struct {
	// origins holds the normalized allowed_origins.
	origins map[string]bool
	// names holds the normalized public_names and the listen host.
	names map[string]bool
}

// newGuard builds the guard of cfg, which Validate has accepted.
func newGuard(cfg configs.Server) (*guard, error) {
	g := &guard{origins: map[string]bool{}, names: map[string]bool{}}
	for i, o := range cfg.AllowedOrigins {
		n, err := configs.NormalizeOrigin(o)
		if err != nil {
			return nil, &configs.FieldError{Field: fmt.Sprintf("allowed_origins[%d]", i), Reason: err.Error()}
		}
		g.origins[n] = true
	}
	for i, name := range cfg.PublicNames {
		n, err := configs.NormalizeHostName(name)
		if err != nil {
			return nil, &configs.FieldError{Field: fmt.Sprintf("public_names[%d]", i), Reason: err.Error()}
		}
		g.names[hostKey(n)] = true
	}
	if host, _, err := net.SplitHostPort(cfg.Addr); err == nil && !isWildcard(host) {
		g.names[hostKey(strings.ToLower(host))] = true
	}
	return g, nil
}

// check returns a *refusedError when r must not be served, nil otherwise.
func (g *guard) check(r *http.Request) error {
	if err := g.checkHost(r.Host); err != nil {
		return err
	}
	if err := g.checkOrigin(r); err != nil {
		return err
	}
	return checkContentType(r)
}

// middleware runs check before the rest of the chain and answers CORS
// preflights of allowed origins itself (they carry no token).
func (g *guard) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		r := c.Request()
		if err := g.check(r); err != nil {
			return err
		}
		if g.cors(c.Response().Header(), r) {
			return c.NoContent(http.StatusNoContent)
		}
		return next(c)
	}
}

// cors adds to h the CORS headers that let a page of an allowed origin
// read the answers and send JSON with a token, for a request that check
// has passed. It reports whether r is a preflight, which these headers
// answer completely. Requests without Origin or from the server's own
// origin get nothing: they need nothing.
func (g *guard) cors(h http.Header, r *http.Request) (preflight bool) {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	h.Add("Vary", "Origin")
	n, err := configs.NormalizeOrigin(origin)
	if err != nil || !g.origins[n] {
		return false
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Expose-Headers", "Location, X-Request-ID")
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, HEAD, POST")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID")
	h.Set("Access-Control-Max-Age", "600")
	return true
}

// checkHost accepts loopback names and addresses, the listen host and the
// public names, with or without a port.
func (g *guard) checkHost(hostport string) error {
	host := strings.ToLower(hostport)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if host != "" && (configs.IsLoopback(host) || g.names[hostKey(host)]) {
		return nil
	}
	return &refusedError{
		status: http.StatusForbidden,
		msg: fmt.Sprintf("host %q is not served here: only loopback names and addresses, "+
			"the listen address and the names in the server setting public_names are accepted", hostport),
	}
}

// checkOrigin accepts a request without Origin, from its own origin or
// from an allowed origin.
func (g *guard) checkOrigin(r *http.Request) error {
	vals, present := r.Header[http.CanonicalHeaderKey("Origin")]
	if !present {
		return nil
	}
	origin := strings.Join(vals, ",")
	if n, err := configs.NormalizeOrigin(origin); err == nil {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		own, oerr := configs.NormalizeOrigin(scheme + "://" + r.Host)
		if oerr == nil && n == own || g.origins[n] {
			return nil
		}
	}
	return &refusedError{
		status: http.StatusForbidden,
		msg: fmt.Sprintf("origin %q may not call this server: it is not the server's own origin; "+
			"add it to the server setting allowed_origins to allow it", origin),
	}
}

// checkContentType requires application/json on state-changing methods. A
// request with no body and no Content-Type (curl -X POST) passes: there is
// nothing to misread, and a browser sends Origin on cross-site POSTs.
func checkContentType(r *http.Request) error {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	ct := r.Header.Get(echo.HeaderContentType)
	if ct == "" && r.ContentLength == 0 && len(r.TransferEncoding) == 0 {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return nil
	}
	what := fmt.Sprintf("content type %q is not accepted", ct)
	if ct == "" {
		what = "a request body without a Content-Type is not accepted"
	}
	return &refusedError{
		status: http.StatusUnsupportedMediaType,
		msg:    fmt.Sprintf("%s on %s %s: send Content-Type: application/json", what, r.Method, r.URL.Path),
	}
}

// hostKey is the form in which host names and addresses are compared: IP
// addresses in canonical text (so "0:0::1" equals "::1"), names as given
// (already lowercased).
func hostKey(host string) string {
	if ip := net.ParseIP(host); ip != nil {
		return ip.String()
	}
	return host
}

// isWildcard reports whether host (from a listen address) means all
// interfaces.
func isWildcard(host string) bool {
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}
