package server

import (
	"net/http/httptest"
	"strings"

	"github.com/labstack/echo/v5"
)

// RouteTable returns the routes echo serves on s, each as "METHOD /path"
// with its parameters in OpenAPI form (/runs/{id}); not the 404 handlers
// echo adds for a group with middleware (method echo.RouteNotFound).
func RouteTable(s *Server) []string {
	var out []string
	for _, r := range s.e.Router().Routes() {
		if r.Method == echo.RouteNotFound {
			continue
		}
		out = append(out, r.Method+" "+openAPIPath(r))
	}
	return out
}

// RouteOf returns the route echo chooses for a request of method and path
// on s, in OpenAPI form; "" when none does (echo's 404 or 405).
func RouteOf(s *Server, method, path string) string {
	c := s.e.NewContext(httptest.NewRequest(method, path, nil), httptest.NewRecorder())
	s.e.Router().Route(c)
	r := c.RouteInfo()
	if r.Path == "" {
		return ""
	}
	return openAPIPath(r)
}

// openAPIPath is r's path with :name as {name}.
func openAPIPath(r echo.RouteInfo) string {
	p := r.Path
	for _, name := range r.Parameters {
		p = strings.Replace(p, ":"+name, "{"+name+"}", 1)
	}
	return p
}

// ValidateJSON checks v against schema, a schema of doc (the subset of
// JSON Schema that GET /openapi.json uses).
func ValidateJSON(doc, schema map[string]any, v any) error { return validate(doc, schema, v, "$") }
