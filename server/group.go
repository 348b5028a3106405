package server

import (
	"crypto/sha256"
	"encoding/hex"
	"io"

	"github.com/labstack/echo/v5"
)

// Group is a set of routes that a package besides this one mounts on a
// Server (MountGroup): AgentFlow's sandbox API of package
// server/sandboxapi. Its routes are served behind the same guard (Host,
// Origin, Content-Type), bearer token, body limit, request log and panic
// recovery as the API's.
type Group interface {
	// Register adds the group's routes to m.Routes.
	Register(m Mount)
}

// Mount is what a Group registers its routes on.
type Mount struct {
	// Routes is the server's root echo group.
	Routes *echo.Group
	// Caller names whoever the server's bearer token lets in: a digest of
	// the token (never the token itself), "" when the server has none. A
	// group that keeps state per client keys it by Caller, so that one
	// token never reaches what another holds.
	Caller string
}

// ErrorWriter is implemented by a Group whose errors have a shape of their
// own (AgentFlow's envelope). The server asks it about every failed
// request, its refusals (401, 403, 413, 415) and unrouted paths (404, 405)
// included: WriteError answers err when the request is the group's
// (status and msg as the server words them; err as returned) and reports
// whether it did. Otherwise the server answers {"error": msg}.
type ErrorWriter interface {
	WriteError(c *echo.Context, status int, msg string, err error) bool
}

// Documented is implemented by a Group whose routes GET /openapi.json
// lists, each with its response schema: every route a Group registers
// should be documented (TestOpenAPICoversEveryRoute checks flock serve's).
type Documented interface {
	Routes() []Route
}

// MountGroup registers g's routes. Call it before Start.
func (s *Server) MountGroup(g Group) {
	g.Register(Mount{Routes: s.e.Group(""), Caller: callerID(s.cfg.AuthToken)})
	s.groups = append(s.groups, g)
}

// callerID is a digest of token, "" for none.
func callerID(token string) string {
	if token == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("flock sandbox caller\x00" + token))
	return hex.EncodeToString(sum[:8])
}

// writeGroupError lets the group that owns the request answer err.
func (s *Server) writeGroupError(c *echo.Context, status int, msg string, err error) bool {
	for _, g := range s.groups {
		if w, ok := g.(ErrorWriter); ok && w.WriteError(c, status, msg, err) {
			return true
		}
	}
	return false
}

// ReadBody reads the request's body for a Group's route. A body that does
// not arrive within the server's body_timeout_s is answered 408 and its
// connection closed; a body over max_body_bytes is the 413 of the body
// limit.
func ReadBody(c *echo.Context) ([]byte, error) {
	data, err := io.ReadAll(c.Request().Body)
	if slowBody(err) {
		return nil, errSlowBody
	}
	return data, err
}

// RequestID returns the id the server gave the request (the X-Request-ID
// of its answer).
func RequestID(c *echo.Context) string { return requestID(c) }
