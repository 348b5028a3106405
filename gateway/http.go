package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"

	"github.com/flockrun/flock/operations"
)

// Prefix is the path under which the gateway's routes live:
// /gateway/{session}/v1/chat/completions and /gateway/{session}/v1/models.
const Prefix = "/gateway/"

// Headers of the gateway's answers and requests.
const (
	// HeaderTraceID on an answer names the trace that answered it.
	HeaderTraceID = "X-Flock-Trace-Id"
	// HeaderStepID on a request is the agent's own id for the step; the
	// trace keeps it, and an episode step with that id is matched to it.
	HeaderStepID = "X-Flock-Step-Id"
	// HeaderReplayed is "true" on an answer taken from the journal.
	HeaderReplayed = "X-Flock-Replayed"
)

// maxBody caps a request body (the server's own limit applies first when
// the gateway is mounted there).
const maxBody = 32 << 20

// ServeHTTP serves the gateway's routes. Every answer is JSON (or SSE for
// a streamed completion); errors are OpenAI-shaped {"error": {...}}.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := g.serve(w, r); err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = newAPIError(http.StatusInternalServerError, "server_error", "", "gateway: internal error")
		}
		writeJSON(w, ae.status, map[string]any{"error": ae})
	}
}

func (g *Gateway) serve(w http.ResponseWriter, r *http.Request) error {
	rest, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		return newAPIError(http.StatusNotFound, "invalid_request_error", "not_found", "no such route: "+r.URL.Path)
	}
	id, route, _ := strings.Cut(rest, "/")
	route = "/" + strings.TrimSuffix(route, "/")
	// A browser page must not reach a session: it cannot know a token, and
	// the gateway refuses any cross-site request before looking.
	if o := r.Header.Get("Origin"); o != "" {
		return newAPIError(http.StatusForbidden, "invalid_request_error", "cross_site",
			"the gateway refuses requests from web pages (Origin header present)")
	}
	s := g.Lookup(id)
	if s == nil || !validToken(r, s.token) {
		return newAPIError(http.StatusUnauthorized, "authentication_error", "invalid_api_key",
			"missing or invalid gateway token: send the session's token as \"Authorization: Bearer <token>\" (the agent's OPENAI_API_KEY)")
	}
	switch route {
	case "/v1/models", "/models":
		if r.Method != http.MethodGet {
			return methodNotAllowed(r, "GET")
		}
		type model struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Created int64  `json:"created"`
			OwnedBy string `json:"owned_by"`
		}
		list := struct {
			Object string  `json:"object"`
			Data   []model `json:"data"`
		}{Object: "list", Data: []model{}}
		for _, m := range s.order {
			list.Data = append(list.Data, model{ID: m, Object: "model", OwnedBy: "flock"})
		}
		writeJSON(w, http.StatusOK, list)
		return nil
	case "/v1/chat/completions", "/chat/completions":
		if r.Method != http.MethodPost {
			return methodNotAllowed(r, "POST")
		}
		return g.complete(w, r, s)
	case "/v1/responses", "/responses":
		if r.Method != http.MethodPost {
			return methodNotAllowed(r, "POST")
		}
		return g.respond(w, r, s)
	}
	return newAPIError(http.StatusNotFound, "invalid_request_error", "not_found",
		fmt.Sprintf("no such route: %s (the gateway serves /v1/chat/completions, /v1/responses and /v1/models)", route))
}

func methodNotAllowed(r *http.Request, allow string) error {
	return newAPIError(http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed",
		fmt.Sprintf("%s is not allowed here; use %s", r.Method, allow))
}

// validToken compares the bearer token with want in constant time.
func validToken(r *http.Request, want string) bool {
	h := r.Header.Get("Authorization")
	got, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return false
	}
	a := sha256.Sum256([]byte(strings.TrimSpace(got)))
	b := sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// readBody reads a JSON request body under the gateway's size cap.
func readBody(r *http.Request) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return nil, newAPIError(http.StatusUnsupportedMediaType, "invalid_request_error", "unsupported_media_type",
				"Content-Type must be application/json")
		}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, newAPIError(http.StatusBadRequest, "invalid_request_error", "", "reading the body: "+err.Error())
	}
	if len(body) > maxBody {
		return nil, newAPIError(http.StatusRequestEntityTooLarge, "invalid_request_error", "", fmt.Sprintf("body larger than %d bytes", maxBody))
	}
	return body, nil
}

// badRequestError maps a request the gateway cannot take to its 400
// answer, naming the field when it knows it; what names the expected body.
func badRequestError(err error, what string) error {
	var br *badRequest
	if errors.As(err, &br) {
		ae := newAPIError(http.StatusBadRequest, "invalid_request_error", "", err.Error())
		ae.Param = &br.field
		return ae
	}
	return newAPIError(http.StatusBadRequest, "invalid_request_error", "", "the body is not "+what+": "+err.Error())
}

func (g *Gateway) complete(w http.ResponseWriter, r *http.Request, s *Session) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	cr, err := parseChat(body)
	if err != nil {
		return badRequestError(err, "a chat completion request")
	}
	req, err := cr.toGenerate(s.resolveModel(cr.Model))
	if err != nil {
		return badRequestError(err, "a chat completion request")
	}
	t, err := s.Do(r.Context(), req, r.Header.Get(HeaderStepID))
	if err != nil {
		return callFailure(err)
	}
	w.Header().Set(HeaderTraceID, t.ID)
	if t.Replayed {
		w.Header().Set(HeaderReplayed, "true")
	}
	if !cr.Stream {
		writeJSON(w, http.StatusOK, toCompletion(t))
		return nil
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	for _, c := range toChunks(t, cr.includeUsage) {
		b, _ := json.Marshal(c)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return nil // the client went away; the call is journaled
		}
		if fl != nil {
			fl.Flush()
		}
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
	return nil
}

// callFailure maps a failed call to its OpenAI-shaped answer: 429 for a
// run limit or a rate limit (the generate's failure code rate_limited),
// 410 for a closed session, 502 for the model's own failure (its text
// names the model and never a key).
func callFailure(err error) error {
	var ce *callError
	switch {
	case errors.Is(err, ErrLimit):
		return newAPIError(http.StatusTooManyRequests, "insufficient_quota", "run_limit_exceeded", err.Error())
	case errors.Is(err, ErrClosed):
		return newAPIError(http.StatusGone, "invalid_request_error", "session_closed", err.Error())
	case errors.As(err, &ce):
		msg := "model call failed: " + ce.msg
		if ce.code == operations.CodeRateLimited {
			return newAPIError(http.StatusTooManyRequests, "rate_limit_exceeded", "rate_limit_exceeded", msg)
		}
		return newAPIError(http.StatusBadGateway, "api_error", "upstream_error", msg)
	}
	return newAPIError(http.StatusServiceUnavailable, "api_error", "unavailable", "gateway: "+err.Error())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// loopbackOnly guards the private listener: only loopback Host names (no
// DNS rebinding) reach the gateway.
func loopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		ip := net.ParseIP(strings.Trim(host, "[]"))
		if !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
			writeJSON(w, http.StatusForbidden, map[string]any{"error": newAPIError(http.StatusForbidden,
				"invalid_request_error", "bad_host", "the gateway answers only loopback host names")})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// respond serves POST .../v1/responses: the request (with the
// conversation of its previous_response_id) becomes a generate made like
// a chat completion's, and its answer a response object or, streamed, the
// Responses API's events.
func (g *Gateway) respond(w http.ResponseWriter, r *http.Request, s *Session) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	rr, err := parseResponses(body)
	if err != nil {
		return badRequestError(err, "a Responses API request")
	}
	history, err := s.history(rr.PreviousResponseID)
	if err != nil {
		return badRequestError(err, "a Responses API request")
	}
	req, input, err := rr.toGenerate(s.resolveModel(rr.Model), history)
	if err != nil {
		return badRequestError(err, "a Responses API request")
	}
	t, err := s.Do(r.Context(), req, r.Header.Get(HeaderStepID))
	if err != nil {
		return callFailure(err)
	}
	s.remember(responseID(t), rr.PreviousResponseID, append(input, answerMessage(t)...))
	w.Header().Set(HeaderTraceID, t.ID)
	if t.Replayed {
		w.Header().Set(HeaderReplayed, "true")
	}
	if !rr.Stream {
		writeJSON(w, http.StatusOK, toResponse(t, rr))
		return nil
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	for _, ev := range responseEvents(t, rr) {
		b, _ := json.Marshal(ev)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], b); err != nil {
			return nil // the client went away; the call is journaled
		}
		if fl != nil {
			fl.Flush()
		}
	}
	return nil
}
