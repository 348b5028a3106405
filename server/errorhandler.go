package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// errorBody is the JSON shape of every error response.
type errorBody struct {
	Error string `json:"error"`
}

// handleError is the echo HTTPErrorHandler: the one place where errors
// become statuses. It writes nothing once the response has started (an
// event stream).
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code, msg := s.describe(err, c)
	if code >= http.StatusInternalServerError {
		s.log.Error("http request failed", "method", c.Request().Method, "uri", c.Request().RequestURI,
			"status", code, "request_id", requestID(c), "err", err)
	}
	if code == http.StatusUnauthorized {
		c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="flock"`)
	}
	var werr error
	if c.Request().Method == http.MethodHead {
		werr = c.NoContent(code)
	} else {
		werr = c.JSON(code, errorBody{Error: msg})
	}
	if werr != nil {
		s.log.Debug("write error response", "err", werr)
	}
}

// describe maps err to a status and a message for the client. Unknown
// errors become a 500 that carries only the request id: internals stay in
// the log.
func (s *Server) describe(err error, c echo.Context) (int, string) {
	var he *echo.HTTPError
	var re *refusedError
	switch {
	case errors.As(err, &re):
		return re.status, re.msg
	case errors.Is(err, ErrBadInput):
		return http.StatusBadRequest, err.Error()
	case errors.As(err, &he):
		return s.describeHTTP(he, c)
	case errors.Is(err, state.ErrNotFound):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, workflows.ErrEnded), errors.Is(err, workflows.ErrNotPaused):
		return http.StatusConflict, err.Error()
	case errors.Is(err, workflows.ErrUnknownWorkflow):
		return http.StatusBadRequest, s.unknownWorkflow(err)
	case errors.Is(err, workflows.ErrBadRequest):
		return http.StatusBadRequest, trimSentinel(err, workflows.ErrBadRequest)
	case errors.Is(err, state.ErrNoSpace):
		return http.StatusInsufficientStorage, err.Error() + ": free space on that disk and try again"
	case errors.Is(err, workflows.ErrStopped):
		return http.StatusServiceUnavailable, "the executor is stopped (the server is shutting down)"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "request cancelled before it completed"
	}
	return http.StatusInternalServerError, fmt.Sprintf("internal server error (request id %s)", requestID(c))
}

// describeHTTP words the errors echo and its middleware produce.
func (s *Server) describeHTTP(he *echo.HTTPError, c echo.Context) (int, string) {
	if inner, ok := he.Internal.(*echo.HTTPError); ok {
		he = inner
	}
	req := c.Request()
	switch he.Code {
	case http.StatusNotFound:
		return he.Code, fmt.Sprintf("no route for %s %s", req.Method, req.URL.Path)
	case http.StatusMethodNotAllowed:
		return he.Code, fmt.Sprintf("method %s is not allowed on %s", req.Method, req.URL.Path)
	case http.StatusRequestEntityTooLarge:
		return he.Code, fmt.Sprintf("request body too large: the limit is %d bytes", s.cfg.MaxBodyBytes)
	}
	if msg, ok := he.Message.(string); ok && msg != "" {
		return he.Code, msg
	}
	return he.Code, strings.ToLower(http.StatusText(he.Code))
}

// unknownWorkflow words an ErrUnknownWorkflow and lists what is registered.
func (s *Server) unknownWorkflow(err error) string {
	msg := trimSentinel(err, workflows.ErrUnknownWorkflow)
	var names []string
	for _, w := range s.ex.Registry().List() {
		names = append(names, w.Name)
	}
	if len(names) == 0 {
		return msg + " (no workflows are registered)"
	}
	return msg + " (registered: " + strings.Join(names, ", ") + ")"
}

// trimSentinel drops the "<sentinel>: " prefix that %w wrapping puts in
// front of a message; the status already says what the sentinel says. It
// only shapes text: classification is done with errors.Is.
func trimSentinel(err, sentinel error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, sentinel.Error()+": "); ok && rest != "" {
		return rest
	}
	return msg
}

// requestID returns the id the RequestID middleware gave the request.
func requestID(c echo.Context) string {
	return c.Response().Header().Get(echo.HeaderXRequestID)
}
