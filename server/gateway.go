package server

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"
)

// gatewayPrefix is where the model gateway's routes live (package gateway).
const gatewayPrefix = "/gateway/"

// MountGateway serves the model gateway h (a *gateway.Gateway) at
// POST /gateway/:session/v1/chat/completions, POST
// /gateway/:session/v1/responses and GET /gateway/:session/v1/models. The guard's Host, Origin and Content-Type
// checks apply as to every route; the server's bearer token does not: the
// gateway checks the session's own token, the only one an agent holds.
// Call it before Start.
func (s *Server) MountGateway(h http.Handler) {
	wrapped := echo.WrapHandler(h)
	s.e.POST(gatewayPrefix+":session/v1/chat/completions", wrapped)
	s.e.POST(gatewayPrefix+":session/v1/responses", wrapped)
	s.e.GET(gatewayPrefix+":session/v1/models", wrapped)
	s.gateway = true
}

// isGatewayPath reports whether a request goes to the gateway, which
// authenticates by session token instead of the server's.
func isGatewayPath(c *echo.Context) bool {
	return strings.HasPrefix(c.Request().URL.Path, gatewayPrefix)
}

// gatewayOpenAPI documents the gateway's routes.
func (s *Server) gatewayOpenAPI(paths map[string]any) {
	if !s.gateway {
		return
	}
	param := []any{map[string]any{"name": "session", "in": "path", "required": true, "schema": map[string]any{"type": "string"}}}
	resp := func(ct string) map[string]any {
		return map[string]any{
			"200": map[string]any{"description": "OK", "content": map[string]any{ct: map[string]any{}}},
			"401": map[string]any{"description": "missing or invalid session token (OpenAI-shaped error)"},
			"429": map[string]any{"description": "a run limit or a rate limit (OpenAI-shaped error naming it)"},
		}
	}
	paths["/gateway/{session}/v1/chat/completions"] = map[string]any{"post": map[string]any{
		"operationId": "gatewayChatCompletions",
		"summary":     "OpenAI-compatible chat completions of an external agent's gateway session (streaming with stream: true); each call is journaled as a generate of the session run (in its gateway_wait op). Authorization: Bearer <session token>.",
		"parameters":  param,
		"security":    []any{},
		"responses":   resp("application/json"),
	}}
	paths["/gateway/{session}/v1/responses"] = map[string]any{"post": map[string]any{
		"operationId": "gatewayResponses",
		"summary":     "OpenAI's Responses API for an external agent's gateway session (function tools, previous_response_id within the session, SSE events with stream: true); each call is journaled as a generate of the session run, as chat completions are. Authorization: Bearer <session token>.",
		"parameters":  param,
		"security":    []any{},
		"responses":   resp("application/json"),
	}}
	paths["/gateway/{session}/v1/models"] = map[string]any{"get": map[string]any{
		"operationId": "gatewayModels",
		"summary":     "The models a gateway session may call.",
		"parameters":  param,
		"security":    []any{},
		"responses":   resp("application/json"),
	}}
}
