package client

import (
	"errors"
	"fmt"
	"net/http"
)

// Sentinels matched by errors.Is against an *Error's status.
var (
	ErrBadRequest   = errors.New("bad request")      // 400
	ErrUnauthorized = errors.New("unauthorized")     // 401
	ErrNotFound     = errors.New("not found")        // 404
	ErrConflict     = errors.New("conflict")         // 409: the run's status does not allow it
	ErrEventStream  = errors.New("bad event stream") // the server sent something that is not SSE
)

// Error is an answer of the server other than 2xx.
type Error struct {
	// Server is the base URL of the server that answered.
	Server       string
	Method, Path string
	Status       int
	// Message is the server's "error" text, which names what is wrong.
	Message string
	// RequestID is the X-Request-ID of the answer (what the server logs).
	RequestID string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.Path, e.Status, http.StatusText(e.Status), e.Message)
}

// Is matches the sentinel of e's status.
func (e *Error) Is(target error) bool {
	switch e.Status {
	case http.StatusBadRequest:
		return target == ErrBadRequest
	case http.StatusUnauthorized:
		return target == ErrUnauthorized
	case http.StatusNotFound:
		return target == ErrNotFound
	case http.StatusConflict:
		return target == ErrConflict
	}
	return false
}

// TransportError is a request that got no answer from the server: the
// connection was refused or dropped, the host does not resolve, TLS
// failed, or ctx ended (errors.Is(err, context.Canceled) holds then).
type TransportError struct {
	// Server is the base URL of the server the request was sent to.
	Server string
	// Err is the http.Client's error (a *url.Error).
	Err error
}

func (e *TransportError) Error() string { return "client: " + e.Err.Error() }

func (e *TransportError) Unwrap() error { return e.Err }
