package operations

import (
	"fmt"

	"github.com/flockrun/flock/record"
)

// Code classifies why an operation failed (Result.Code). It is set by the
// handler, where the failure is known, and read by type everywhere else:
// phases decide by it whether a failure can get better, never by the
// wording of Result.Error. The values are wire names, journaled with the
// result.
type Code string

// Failure codes. A result without an error has none; a failed result may
// have none when nothing more is known than its message.
const (
	// CodeModelError: a model call that cannot succeed by being tried
	// again: the endpoint's host does not resolve, refuses connections or
	// fails TLS, it refused the API key (401, 403), does not know the model
	// or path (404), rejected the request (400 and other 4xx), answered
	// with something that is not a chat completion, or the key is unset.
	CodeModelError Code = "model_error"
	// CodeRateLimited: a rate limit the run cannot outwait: the endpoint
	// asked to wait (429 with Retry-After) longer than the model's
	// max_retry_wait_s or the run's time left, it kept answering 429
	// through every retry, its quota is spent, or flock's own
	// requests_per_minute would hold the call too long.
	CodeRateLimited Code = "rate_limited"
	// CodeTimeout: every attempt timed out (the model's timeout_s) through
	// the retries. It may get better: agents go on.
	CodeTimeout Code = "timeout"
	// CodeUnavailable: the endpoint kept failing transiently (5xx,
	// connection resets) through the retries. It may get better: agents
	// go on.
	CodeUnavailable Code = "unavailable"
)

// Fatal reports whether a failure with code c cannot get better within
// the run: an agent does not re-plan around it but ends the run with the
// code as its end reason (record.ReasonModelError, ReasonRateLimited).
func (c Code) Fatal() bool { return c == CodeModelError || c == CodeRateLimited }

// FailedWith returns a failed result for req with code c.
func FailedWith(req Request, c Code, format string, args ...any) Result {
	return Result{Kind: req.Kind, Meta: req.Meta, Code: c, Error: fmt.Sprintf(format, args...)}
}

// Fatal returns the code and message of a failure that ends an agent's
// run: a result whose own Code is fatal, or the result of a spawn whose
// child run ended for such a reason (a subagent or a rollout sample that
// met the same model failure). ok is false for anything else.
func (r Result) Fatal() (c Code, msg string, ok bool) {
	if r.Code.Fatal() {
		return r.Code, r.Error, true
	}
	if s := Spawn.Result(r); s != nil && r.Error == "" && s.Status == record.StatusFailed {
		if c := Code(s.EndReason); c.Fatal() {
			return c, s.Error, true
		}
	}
	return "", "", false
}
