package generate

import "errors"

var (
	// ErrMissingKey is returned when a live model's API key environment
	// variable is unset or empty. The message names the variable, never a key.
	ErrMissingKey = errors.New("environment variable is not set")
	// ErrNoModel is returned for a generate request without a model name.
	ErrNoModel = errors.New("model is required")
	// ErrMalformedReply is returned when an endpoint answers 2xx with a body
	// that is not a chat completion (invalid JSON, an HTML page, no choices).
	ErrMalformedReply = errors.New("malformed reply")
	// ErrScriptExhausted is returned by the scripted provider when no unused
	// line of the script can answer the request.
	ErrScriptExhausted = errors.New("script exhausted")
	// ErrWaitTooLong is returned when a generate would have to wait longer
	// than its model's max_retry_wait_s or the run's remaining time allows:
	// an endpoint's Retry-After, a backoff, or a requests_per_minute token.
	// The message names the model, the wait and the bound.
	ErrWaitTooLong = errors.New("wait too long")
	// ErrScript is returned when a script file cannot be read or parsed.
	ErrScript = errors.New("invalid script")
	// ErrBadRequest is returned for a generate request flock cannot send:
	// an extra field that names one flock writes itself, or that is not
	// JSON. The message names the field.
	ErrBadRequest = errors.New("bad generate request")
)
