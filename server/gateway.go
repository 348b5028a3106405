package server

import (
	"encoding/json"
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

// The gateway's answers as GET /openapi.json documents them: OpenAI's
// objects (package gateway writes them), their top-level fields named,
// their nested parts any JSON.
type (
	openaiChatCompletion struct {
		ID                string            `json:"id"`
		Object            string            `json:"object" doc:"chat.completion"`
		Created           int64             `json:"created"`
		Model             string            `json:"model"`
		Choices           []json.RawMessage `json:"choices" doc:"{index, message{role, content, reasoning_content?, tool_calls?}, finish_reason, logprobs}"`
		Usage             json.RawMessage   `json:"usage,omitempty" doc:"{prompt_tokens, completion_tokens, total_tokens}"`
		PromptTokenIDs    []int             `json:"prompt_token_ids,omitempty"`
		SystemFingerprint string            `json:"system_fingerprint,omitempty"`
		Flock             json.RawMessage   `json:"flock,omitempty" doc:"{trace_id, replayed?}: the trace that answered (also the X-Flock-Trace-Id header)"`
	}
	openaiResponse struct {
		ID                 string            `json:"id"`
		Object             string            `json:"object" doc:"response"`
		CreatedAt          int64             `json:"created_at"`
		Status             string            `json:"status" doc:"completed, incomplete or failed"`
		Error              json.RawMessage   `json:"error"`
		IncompleteDetails  json.RawMessage   `json:"incomplete_details"`
		Instructions       *string           `json:"instructions"`
		MaxOutputTokens    *int              `json:"max_output_tokens"`
		Model              string            `json:"model"`
		Output             []json.RawMessage `json:"output" doc:"the output items: messages, reasoning, function calls"`
		ParallelToolCalls  bool              `json:"parallel_tool_calls"`
		PreviousResponseID *string           `json:"previous_response_id"`
		Reasoning          json.RawMessage   `json:"reasoning"`
		Store              bool              `json:"store"`
		Temperature        *float64          `json:"temperature"`
		Text               json.RawMessage   `json:"text"`
		ToolChoice         json.RawMessage   `json:"tool_choice"`
		Tools              []json.RawMessage `json:"tools"`
		TopP               *float64          `json:"top_p"`
		Truncation         string            `json:"truncation"`
		Usage              json.RawMessage   `json:"usage" doc:"{input_tokens, output_tokens, total_tokens, ...}"`
		Metadata           json.RawMessage   `json:"metadata"`
		Flock              json.RawMessage   `json:"flock,omitempty" doc:"{trace_id, replayed?}: the trace that answered"`
	}
	openaiModels struct {
		Object string            `json:"object" doc:"list"`
		Data   []json.RawMessage `json:"data" doc:"{id, object: model, created, owned_by}"`
	}
	// openaiErrorBody is the body of the gateway's own errors.
	openaiErrorBody struct {
		Error openaiError `json:"error"`
	}
	openaiError struct {
		Message string  `json:"message"`
		Type    string  `json:"type" doc:"invalid_request_error, authentication_error, rate_limit_exceeded, api_error, ..."`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
)

// gatewayErrors are the statuses the gateway answers itself (an
// OpenAI-shaped error naming the cause): a malformed request, a missing
// or wrong session token, a cross-site request, a closed session, a body
// too large, a run limit or a rate limit, an internal error, the model's
// failure, a gateway that is shutting down.
var gatewayErrors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusGone,
	http.StatusRequestEntityTooLarge, http.StatusTooManyRequests, http.StatusInternalServerError,
	http.StatusBadGateway, http.StatusServiceUnavailable}

var sessionParam = []Param{{Name: "session", Type: "string", Doc: "the gateway session (its id in the agent's base URL)"}}

// gatewayRoutes document MountGateway's routes.
var gatewayRoutes = []Route{
	{Method: http.MethodPost, Path: "/gateway/{session}/v1/chat/completions", ID: "gatewayChatCompletions",
		Summary:    "OpenAI-compatible chat completions of an external agent's gateway session (streaming with stream: true); each call is journaled as a generate of the session run (in its gateway_wait op). Authorization: Bearer <session token>.",
		PathParams: sessionParam, Body: map[string]any{}, Status: http.StatusOK, Resp: openaiChatCompletion{},
		Content: []Content{{"text/event-stream", json.RawMessage(nil)}}, Errors: gatewayErrors, ErrorBody: openaiErrorBody{}, Public: true},
	{Method: http.MethodPost, Path: "/gateway/{session}/v1/responses", ID: "gatewayResponses",
		Summary:    "OpenAI's Responses API for an external agent's gateway session (function tools, previous_response_id within the session, SSE events with stream: true); each call is journaled as a generate of the session run, as chat completions are. Authorization: Bearer <session token>.",
		PathParams: sessionParam, Body: map[string]any{}, Status: http.StatusOK, Resp: openaiResponse{},
		Content: []Content{{"text/event-stream", json.RawMessage(nil)}}, Errors: gatewayErrors, ErrorBody: openaiErrorBody{}, Public: true},
	{Method: http.MethodGet, Path: "/gateway/{session}/v1/models", ID: "gatewayModels",
		Summary:    "The models a gateway session may call. Authorization: Bearer <session token>.",
		PathParams: sessionParam, Status: http.StatusOK, Resp: openaiModels{},
		Errors: gatewayErrors, ErrorBody: openaiErrorBody{}, Public: true},
}
