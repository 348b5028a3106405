package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// handleError is the echo HTTPErrorHandler: the one place where errors
// become statuses. It writes nothing once the response has started (an
// event stream, or an error the request logger has already answered: echo
// calls the handler again with the error the chain returns).
func (s *Server) handleError(c *echo.Context, err error) {
	if r, uerr := echo.UnwrapResponse(c.Response()); uerr == nil && r.Committed {
		return
	}
	code, msg := s.describe(err, c)
	var pe *middleware.PanicStackError
	switch {
	case errors.As(err, &pe):
		s.logPanic(c, pe)
	case code >= http.StatusInternalServerError:
		s.log.Error("http request failed", "method", c.Request().Method, "uri", c.Request().RequestURI,
			"status", code, "request_id", requestID(c), "err", err)
	}
	if code == http.StatusUnauthorized {
		c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="flock"`)
	}
	if s.writeGroupError(c, code, msg, err) {
		return
	}
	var werr error
	if c.Request().Method == http.MethodHead {
		werr = c.NoContent(code)
	} else {
		werr = c.JSON(code, api.Error{Error: msg})
	}
	if werr != nil {
		s.log.Debug("write error response", "err", werr)
	}
}

// describe maps err to a status and a message for the client. Unknown
// errors become a 500 that carries only the request id: internals stay in
// the log.
func (s *Server) describe(err error, c *echo.Context) (int, string) {
	var re *refusedError
	var pe *middleware.PanicStackError
	switch {
	case errors.As(err, &pe):
		// Whatever the panic value wraps, a panic is the server's fault.
		return http.StatusInternalServerError, fmt.Sprintf("internal server error (request id %s)", requestID(c))
	case errors.As(err, &re):
		return re.status, re.msg
	case errors.Is(err, ErrBadInput):
		return http.StatusBadRequest, err.Error()
	case echo.StatusCode(err) != 0:
		return s.describeHTTP(err, c)
	case errors.Is(err, state.ErrNotFound):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, workflows.ErrNoQuestion):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, workflows.ErrEnded), errors.Is(err, workflows.ErrNotPaused),
		errors.Is(err, workflows.ErrAnswered), errors.Is(err, workflows.ErrNotWaiting),
		errors.Is(err, workflows.ErrKeyNeeded):
		return http.StatusConflict, err.Error()
	case errors.Is(err, workflows.ErrBadFork):
		return http.StatusBadRequest, err.Error()
	case errors.Is(err, workflows.ErrUnknownWorkflow):
		return http.StatusBadRequest, s.unknownWorkflow(err)
	case errors.Is(err, workflows.ErrBadRequest):
		return http.StatusBadRequest, trimSentinel(err, workflows.ErrBadRequest)
	case errors.Is(err, state.ErrNoSpace):
		return http.StatusInsufficientStorage, err.Error() + ": free space on that disk and try again"
	case errors.Is(err, workflows.ErrStopped):
		return http.StatusServiceUnavailable, "the executor is stopped (the server is shutting down)"
	case errors.Is(err, state.ErrUnavailable):
		return http.StatusServiceUnavailable, "the cluster store does not answer (electing new leaders?); try again: " + err.Error()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "request cancelled before it completed"
	}
	return http.StatusInternalServerError, fmt.Sprintf("internal server error (request id %s)", requestID(c))
}

// describeHTTP words the errors echo and its middleware produce: an
// *echo.HTTPError or one of echo's status sentinels (echo.ErrNotFound and
// the like, which are not *echo.HTTPError in v5).
func (s *Server) describeHTTP(err error, c *echo.Context) (int, string) {
	code := echo.StatusCode(err)
	req := c.Request()
	switch code {
	case http.StatusNotFound:
		return code, fmt.Sprintf("no route for %s %s", req.Method, req.URL.Path)
	case http.StatusMethodNotAllowed:
		return code, fmt.Sprintf("method %s is not allowed on %s", req.Method, req.URL.Path)
	case http.StatusRequestEntityTooLarge:
		return code, fmt.Sprintf("request body too large: the limit is %d bytes", s.cfg.MaxBodyBytes)
	}
	if he := (*echo.HTTPError)(nil); errors.As(err, &he) && he.Message != "" {
		return code, he.Message
	}
	return code, strings.ToLower(http.StatusText(code))
}

// errorText is err's text for a log line; a recovered panic is named
// without its stack, which handleError logs once on its own.
func errorText(err error) string {
	if pe := (*middleware.PanicStackError)(nil); errors.As(err, &pe) {
		return fmt.Sprintf("handler panic: %v", pe.Err)
	}
	return err.Error()
}

// unknownWorkflow words an ErrUnknownWorkflow and lists what is registered.
func (s *Server) unknownWorkflow(err error) string {
	msg := trimSentinel(err, workflows.ErrUnknownWorkflow)
	var names []string
	for _, w := range s.roles.catalog.Workflows() {
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
func requestID(c *echo.Context) string {
	return c.Response().Header().Get(echo.HeaderXRequestID)
}
