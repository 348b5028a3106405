package server

import (
	"net/http"

	"github.com/labstack/echo/v5"
)

// UIPrefix is the path under which MountUI serves the viewer's assets.
const UIPrefix = "/ui/"

// MountUI serves h, the browser viewer (package viewer), at GET / and
// GET /ui/*, behind the same guard (Host, Origin) as the API but without
// the bearer token: the pages and scripts hold no data, and they call the
// API with the token the user types into their login form. Call it
// before Start.
func (s *Server) MountUI(h http.Handler) {
	wrapped := echo.WrapHandler(h)
	for _, p := range []string{"/", UIPrefix + "*"} {
		s.e.GET(p, wrapped)
		s.public[p] = true
	}
	s.ui = append(s.ui, "/", UIPrefix+"*")
}
