package generate

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/operations"
)

// maxBody bounds the success body kept for decoding extras (64 MiB).
const maxBody = 64 << 20

// exchange records what the transport saw for one HTTP attempt. go-openai
// does not expose response headers on errors, so the transport writes them
// here (found through the request context).
type exchange struct {
	// extra are fields to add to the request body (see withExtra).
	extra map[string]json.RawMessage

	status     int
	retryAfter time.Duration
	hasRetry   bool
	body       []byte
}

type exchangeKey struct{}

// captureTransport fills the request's exchange: status, Retry-After and,
// for 2xx replies, the body (which it replaces with an in-memory copy, so a
// connection dropped mid-body surfaces as a transport error).
type captureTransport struct{ base http.RoundTripper }

func (t *captureTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ex, ok := r.Context().Value(exchangeKey{}).(*exchange)
	if ok && len(ex.extra) > 0 {
		var err error
		if r, err = withExtra(r, ex.extra); err != nil {
			return nil, err
		}
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if !ok {
		return resp, nil
	}
	ex.status = resp.StatusCode
	ex.retryAfter, ex.hasRetry = parseRetryAfter(resp.Header, time.Now())
	if resp.StatusCode/100 == 2 {
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read reply: %w", err)
		}
		ex.body = b
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
	}
	return resp, nil
}

// withExtra returns a copy of r whose JSON body also has the fields of
// extra (go-openai's request type has no place for fields it does not
// know). A field the body already has keeps its value.
func withExtra(r *http.Request, extra map[string]json.RawMessage) (*http.Request, error) {
	if r.Body == nil {
		return r, nil
	}
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, fmt.Errorf("request body: %w", err)
	}
	for k, v := range extra {
		if _, set := fields[k]; !set {
			fields[k] = v
		}
	}
	if b, err = json.Marshal(fields); err != nil {
		return nil, fmt.Errorf("request body: %w", err)
	}
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(b))
	r2.ContentLength = int64(len(b))
	r2.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return r2, nil
}

// parseRetryAfter reads retry-after-ms (OpenAI, Azure) or Retry-After
// (seconds or an HTTP date).
func parseRetryAfter(hd http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(hd.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(hd.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now)), true
	}
	return 0, false
}

// call is one generate against one endpoint.
type call struct {
	h      *Handler
	m      *model
	client *openai.Client
	apiKey string
	// lims are the limiters every attempt goes through, the run's own first.
	lims []*limiter
	host string
	// extra are the request fields added to the body (requestExtra).
	extra map[string]json.RawMessage
	// waiting is the run's Env.Waiting; nil when the run does not listen.
	waiting func(reason string, until time.Time)
	// mayStart is the run's Env.MayStart; nil: always.
	mayStart func() error
	// deadline is when the run's time limit runs out, taken from Env.Usage
	// at the op's start; zero when the run has no time limit.
	deadline time.Time
	// limitS is the run's limits.seconds, for messages.
	limitS float64
}

// waitingNotice is the shortest rate-limiter wait that is announced through
// Env.Waiting (shorter ones are routine spacing); retry waits are always
// announced.
const waitingNotice = time.Second

// failure classifies a failed attempt.
type failure struct {
	retry  bool
	status int
	// code is the op's failure code should the failure be final.
	code operations.Code
	// what is a short description: "HTTP 503", "timeout", "connection
	// refused", "HTTP 401 (the endpoint refused the API key in $KEY)".
	what string
	err  error
	// retryAfter is the endpoint's Retry-After, when it sent one.
	retryAfter    time.Duration
	hasRetryAfter bool
	// final, when set, is the op's error as is (a limiter wait out of bounds).
	final error
}

// setDeadline reads the run's remaining time from env.Usage.
func (c *call) setDeadline(env handlers.Env) {
	if env.Usage == nil {
		return
	}
	u, l := env.Usage()
	if l.Seconds <= 0 {
		return
	}
	c.limitS = l.Seconds
	c.deadline = time.Now().Add(seconds(l.Seconds - u.Seconds))
}

// bound is the longest one wait may last: the model's max_retry_wait_s, or
// the run's remaining time when that is shorter; what names the setting
// that bounds it, for error messages.
func (c *call) bound() (d time.Duration, what string) {
	d = c.m.maxRetryWait
	what = fmt.Sprintf("models.%s.max_retry_wait_s (%s)", c.m.key, fmtSeconds(d))
	if !c.deadline.IsZero() {
		if left := max(0, time.Until(c.deadline)); left < d {
			d = left
			what = fmt.Sprintf("the run's time left (%s of limits.seconds %s)", fmtSeconds(left), fmtSeconds(seconds(c.limitS)))
		}
	}
	return d, what
}

// do sends one chat completion request, retrying transient failures up to
// m.maxRetries times. Before retry k it waits the endpoint's Retry-After
// when one was sent, else a jittered exponential backoff capped at
// max_retry_wait_s. Each wait is bounded by max_retry_wait_s and by the
// run's remaining time: a Retry-After beyond that bound, or a backoff that
// would outlast the run, fails the op at once with an error naming the
// model, the wait and the bound (ErrWaitTooLong), instead of sleeping for
// nothing. While it waits, the run is told through Env.Waiting. Each
// attempt waits for the limiters and is bounded by the model's timeout;
// cancellation of ctx stops at once.
func (c *call) do(ctx context.Context, creq openai.ChatCompletionRequest) (*reply, error) {
	for attempt := 1; ; attempt++ {
		r, f := c.attempt(ctx, creq)
		if f == nil {
			return r, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("model %q: cancelled after %d attempt(s): %w", c.m.key, attempt, ctx.Err())
		}
		if f.final != nil {
			return nil, f.final
		}
		if !f.retry || attempt > c.m.maxRetries {
			return nil, c.finalError(f, attempt, "")
		}
		bound, what := c.bound()
		var wait time.Duration
		if f.hasRetryAfter {
			if f.retryAfter > bound {
				// The endpoint says it cannot answer sooner than the run
				// may wait: that cannot get better within the run.
				f.code = operations.CodeModelError
				if f.status == http.StatusTooManyRequests {
					f.code = operations.CodeRateLimited
				}
				return nil, c.finalError(f, attempt, fmt.Sprintf("the endpoint asked to wait %s, more than %s allows", fmtSeconds(f.retryAfter), what))
			}
			wait = f.retryAfter
		} else {
			wait = min(c.backoff(attempt), c.m.maxRetryWait)
			if wait > bound {
				return nil, c.finalError(f, attempt, fmt.Sprintf("the next retry, in %s, would come after %s", fmtSeconds(wait), what))
			}
		}
		c.h.log.Warn("generate: retrying",
			"model", c.m.key, "endpoint", c.host, "attempt", attempt,
			"failure", f.what, "wait", wait, "error", c.redact(errText(f.err)))
		if err := c.pause(ctx, wait, c.retryReason(f)); err != nil {
			return nil, fmt.Errorf("model %q: cancelled after %d attempt(s): %w", c.m.key, attempt, err)
		}
	}
}

// retryReason is what the run head shows while a retry waits, e.g. "rate
// limited by gpt-4o-mini (HTTP 429), retrying".
func (c *call) retryReason(f *failure) string {
	if f.status == http.StatusTooManyRequests {
		return fmt.Sprintf("rate limited by %s (HTTP 429), retrying", c.m.key)
	}
	return fmt.Sprintf("%s failed (%s), retrying", c.m.key, f.what)
}

// pause waits d, telling the run why and until when; the wait is ended
// (a zero until) however it ends.
func (c *call) pause(ctx context.Context, d time.Duration, reason string) error {
	if c.waiting != nil && d > 0 {
		c.waiting(reason, time.Now().Add(d))
		defer c.waiting(reason, time.Time{})
	}
	return sleep(ctx, d)
}

// acquire waits for a token and a slot of each limiter, the run's own
// first; the returned release frees the slots. A token that would come
// later than bound allows fails at once with ErrWaitTooLong.
func (c *call) acquire(ctx context.Context) (release func(), err error) {
	var held []*limiter
	release = func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i].sem.Release(1)
		}
	}
	for _, l := range c.lims {
		if l.bucket != nil {
			bound, what := c.bound()
			d, ok := l.bucket.reserveWithin(bound)
			if !ok {
				release()
				msg := fmt.Sprintf("model %q: the next request %s.requests_per_minute (%d) allows is %s away, more than %s allows", c.m.key, l.what, l.rpm, fmtSeconds(d), what)
				return nil, &callError{msg: msg, sentinel: ErrWaitTooLong, code: operations.CodeRateLimited}
			}
			if d >= c.h.notice {
				err = c.pause(ctx, d, fmt.Sprintf("queued by %s.requests_per_minute (%d) for %s, sending", l.what, l.rpm, c.m.key))
			} else {
				err = sleep(ctx, d)
			}
			if err != nil {
				release()
				return nil, err
			}
		}
		if l.sem != nil {
			if err := l.sem.Acquire(ctx, 1); err != nil {
				release()
				return nil, err
			}
			held = append(held, l)
		}
	}
	return release, nil
}

// attempt performs one HTTP exchange under the limiters and the per-request timeout.
func (c *call) attempt(ctx context.Context, creq openai.ChatCompletionRequest) (*reply, *failure) {
	release, err := c.acquire(ctx)
	if err != nil {
		if errors.Is(err, ErrWaitTooLong) {
			return nil, &failure{what: "rate limit", err: err, final: err}
		}
		return nil, &failure{what: "cancelled", err: err}
	}
	defer release()
	// The request may have waited for a limiter or a retry: it is sent
	// only if the run may still start work here.
	if c.mayStart != nil {
		if err := c.mayStart(); err != nil {
			err = fmt.Errorf("not sent: %w", err)
			return nil, &failure{what: "cancelled", err: err, final: err}
		}
	}
	actx, cancel := context.WithTimeout(ctx, c.m.timeout)
	defer cancel()
	ex := &exchange{extra: c.extra}
	actx = context.WithValue(actx, exchangeKey{}, ex)
	r, merr, err := c.send(actx, creq, ex)
	if err == nil {
		if merr != nil {
			return nil, &failure{status: ex.status, code: operations.CodeModelError, what: fmt.Sprintf("HTTP %d", ex.status), err: merr}
		}
		if r.usage.PromptTokens == 0 && r.usage.CompletionTokens == 0 {
			r.usage = estimateUsage(creq.Messages, r.outputs)
		}
		return r, nil
	}
	f := c.classify(ctx, actx, err, ex)
	if f.status != 0 {
		f.retryAfter, f.hasRetryAfter = ex.retryAfter, ex.hasRetry
	}
	return nil, f
}

// seconds converts a float number of seconds to a Duration.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// fmtSeconds writes d in seconds, as settings are written: "0.2 s", "3600 s".
func fmtSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Round(time.Millisecond).Seconds(), 'f', -1, 64) + " s"
}

// classify decides whether a failed attempt is worth retrying, and what
// it is should it be the last. Transient failures are retried: 408, 429
// and 5xx statuses, the per-request timeout, a connection reset or a body
// cut short. Failures that cannot get better are not, and are
// operations.CodeModelError: a host that does not resolve, a refused
// connection, a TLS failure, any other 4xx (401 and 403: the key; 404:
// the model or the path; 400: the request), a malformed 2xx body and a
// request go-openai rejects client-side. A 429 whose error says the quota
// is spent is CodeRateLimited at once. The op's own ctx ending is never
// retried.
func (c *call) classify(opCtx, attemptCtx context.Context, err error, ex *exchange) *failure {
	if opCtx.Err() != nil {
		return &failure{what: "cancelled", err: err}
	}
	status := 0
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		status = apiErr.HTTPStatusCode
	case errors.As(err, &reqErr):
		status = reqErr.HTTPStatusCode
	}
	if status != 0 {
		return c.statusFailure(status, apiErr, err)
	}
	if errors.Is(attemptCtx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return &failure{retry: true, code: operations.CodeTimeout, what: fmt.Sprintf("timeout after %s", c.m.timeout), err: err}
	}
	if f := connectFailure(err, c.host); f != nil {
		return f
	}
	var netErr net.Error
	var urlErr *url.Error
	if errors.As(err, &netErr) || errors.As(err, &urlErr) || errors.Is(err, io.ErrUnexpectedEOF) && ex.status == 0 {
		return &failure{retry: true, code: operations.CodeUnavailable, what: "connection error", err: err}
	}
	if ex.status/100 == 2 {
		return &failure{status: ex.status, code: operations.CodeModelError, what: fmt.Sprintf("HTTP %d", ex.status),
			err: fmt.Errorf("%w: %v (%s)", ErrMalformedReply, err, bodySnippet(ex.body))}
	}
	return &failure{code: operations.CodeModelError, what: "request rejected", err: err}
}

// statusFailure classifies an HTTP error status.
func (c *call) statusFailure(status int, apiErr *openai.APIError, err error) *failure {
	f := &failure{status: status, err: err, what: fmt.Sprintf("HTTP %d", status)}
	switch {
	case status == http.StatusTooManyRequests && quotaSpent(apiErr):
		f.code, f.what = operations.CodeRateLimited, "HTTP 429 (the account's quota is spent)"
	case status == http.StatusTooManyRequests:
		f.retry, f.code = true, operations.CodeRateLimited
	case status == http.StatusRequestTimeout:
		f.retry, f.code = true, operations.CodeTimeout
	case status >= 500:
		f.retry, f.code = true, operations.CodeUnavailable
	case status == http.StatusUnauthorized:
		f.code, f.what = operations.CodeModelError, fmt.Sprintf("HTTP 401 (the endpoint refused %s)", c.m.keySource())
	case status == http.StatusForbidden:
		f.code, f.what = operations.CodeModelError, fmt.Sprintf("HTTP 403 (%s may not use model %q)", c.m.keySource(), c.m.name)
	case status == http.StatusNotFound:
		f.code, f.what = operations.CodeModelError, fmt.Sprintf("HTTP 404 (no model %q or no chat completions at base_url)", c.m.name)
	case status == http.StatusBadRequest:
		f.code, f.what = operations.CodeModelError, "HTTP 400 (the endpoint rejected the request)"
	default:
		f.code = operations.CodeModelError
	}
	return f
}

// quotaSpent reports whether a 429's error says the account's quota (not
// its rate) is exhausted (OpenAI's insufficient_quota): no wait helps.
func quotaSpent(e *openai.APIError) bool {
	if e == nil {
		return false
	}
	code, _ := e.Code.(string)
	return code == "insufficient_quota" || e.Type == "insufficient_quota"
}

// connectFailure classifies an attempt that never reached the endpoint
// for a reason retrying does not mend: the host does not resolve, the
// connection is refused, TLS fails. Nil for anything else. Its err is the
// cause alone (the URL of the request, which go-openai's error quotes,
// is left out).
func connectFailure(err error, host string) *failure {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	var alert tls.AlertError
	var unknownCA x509.UnknownAuthorityError
	var badHost x509.HostnameError
	var badCert x509.CertificateInvalidError
	switch {
	case errors.As(err, &dnsErr):
		return &failure{code: operations.CodeModelError, what: "cannot resolve host " + dnsErr.Name, err: errors.New(dnsErr.Err)}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &failure{code: operations.CodeModelError, what: "connection refused", err: fmt.Errorf("nothing listens at %s", host)}
	case errors.As(err, &certErr), errors.As(err, &unknownCA), errors.As(err, &badHost), errors.As(err, &badCert):
		return &failure{code: operations.CodeModelError, what: "TLS failure", err: tlsCause(err)}
	case errors.As(err, &recErr), errors.As(err, &alert):
		return &failure{code: operations.CodeModelError, what: "TLS failure", err: tlsCause(err)}
	case errors.Is(err, http.ErrSchemeMismatch):
		return &failure{code: operations.CodeModelError, what: "TLS failure",
			err: fmt.Errorf("%s answers plain HTTP: base_url should start with http://", host)}
	}
	return nil
}

// tlsCause is err without the request's method and URL (url.Error's
// prefix).
func tlsCause(err error) error {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err
	}
	return err
}

// bodySnippet quotes the start of a reply body for error messages.
func bodySnippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "empty body"
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return fmt.Sprintf("body starts %q", s)
}

// backoff is the jittered exponential delay before retry number attempt:
// uniform in [d/2, d] with d = base * 2^(attempt-1), capped at BackoffMax.
func (c *call) backoff(attempt int) time.Duration {
	d := c.h.opts.BackoffBase
	for i := 1; i < attempt && d < c.h.opts.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, c.h.opts.BackoffMax)
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(half)+1))
}

// finalError builds the op's error: model, endpoint host, what failed and
// how many attempts were made, with the API key scrubbed.
// why, when set, says why a retryable failure was not retried.
func (c *call) finalError(f *failure, attempts int, why string) error {
	msg := errText(f.err)
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(f.err, &apiErr):
		msg = apiErr.Message
	case errors.As(f.err, &reqErr):
		// A non-JSON error body (an HTML page from a proxy): quote it.
		msg = bodySnippet(reqErr.Body)
	}
	tries := fmt.Sprintf("after %d attempts", attempts)
	if attempts == 1 {
		tries = "after 1 attempt"
	}
	var sentinel error
	switch {
	case why != "":
		tries += ", not retried: " + why
		sentinel = ErrWaitTooLong
	case !f.retry:
		tries += ", not retried"
	}
	line := oneLine(fmt.Sprintf("model %q at %s: %s (%s): %s", c.m.key, c.host, f.what, tries, oneLine(msg, maxCause)), maxErrorLine)
	return &callError{msg: c.redact(line), err: f.err, sentinel: sentinel, code: f.code}
}

// Bounds of a final error's text: the endpoint's own message (maxCause)
// and the whole line.
const (
	maxCause     = 300
	maxErrorLine = 600
)

// oneLine folds s onto one line (runs of white space become one space)
// and cuts it to at most n bytes, at a rune boundary, marking the cut.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// callError is a final endpoint failure; its text is already redacted and
// on one line. It unwraps to the sentinel (ErrWaitTooLong,
// ErrMalformedReply) but not to the raw error, whose text may hold the
// key. code is the op's failure code.
type callError struct {
	msg      string
	err      error
	sentinel error
	code     operations.Code
}

func (e *callError) Error() string { return e.msg }

func (e *callError) Unwrap() error {
	if e.sentinel != nil {
		return e.sentinel
	}
	if errors.Is(e.err, ErrMalformedReply) {
		return ErrMalformedReply
	}
	return nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// redact scrubs the API key from s.
func (c *call) redact(s string) string { return redact(s, c.apiKey) }

func redact(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[redacted]")
}
