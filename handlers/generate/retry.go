package generate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// maxBody bounds the success body kept for decoding extras (64 MiB).
const maxBody = 64 << 20

// exchange records what the transport saw for one HTTP attempt. go-openai
// does not expose response headers on errors, so the transport writes them
// here (found through the request context).
type exchange struct {
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
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	ex, ok := r.Context().Value(exchangeKey{}).(*exchange)
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
	lim    *limiter
	host   string
}

// failure classifies a failed attempt.
type failure struct {
	retry  bool
	status int
	// what is a short description: "HTTP 503", "timeout", "connection error".
	what string
	err  error
	// retryAfter is the endpoint's Retry-After, when it sent one.
	retryAfter    time.Duration
	hasRetryAfter bool
}

// do sends one chat completion request, retrying transient failures with
// jittered exponential backoff (or the endpoint's Retry-After) up to
// m.maxRetries times. Each attempt waits for the model's limiter and is
// bounded by the model's timeout; cancellation of ctx stops at once.
func (c *call) do(ctx context.Context, creq openai.ChatCompletionRequest) (*reply, error) {
	for attempt := 1; ; attempt++ {
		r, f := c.attempt(ctx, creq)
		if f == nil {
			return r, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("model %q: cancelled after %d attempt(s): %w", c.m.key, attempt, ctx.Err())
		}
		if !f.retry || attempt > c.m.maxRetries {
			return nil, c.finalError(f, attempt)
		}
		wait := c.backoff(attempt)
		if f.hasRetryAfter {
			wait = min(f.retryAfter, c.h.opts.MaxRetryAfter)
		}
		c.h.log.Warn("generate: retrying",
			"model", c.m.key, "endpoint", c.host, "attempt", attempt,
			"failure", f.what, "wait", wait, "error", c.redact(errText(f.err)))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("model %q: cancelled after %d attempt(s): %w", c.m.key, attempt, ctx.Err())
		case <-t.C:
		}
	}
}

// attempt performs one HTTP exchange under the limiter and the per-request timeout.
func (c *call) attempt(ctx context.Context, creq openai.ChatCompletionRequest) (*reply, *failure) {
	release, err := c.lim.acquire(ctx)
	if err != nil {
		return nil, &failure{what: "cancelled", err: err}
	}
	defer release()
	actx, cancel := context.WithTimeout(ctx, c.m.timeout)
	defer cancel()
	ex := &exchange{}
	actx = context.WithValue(actx, exchangeKey{}, ex)
	resp, err := c.client.CreateChatCompletion(actx, creq)
	if err == nil {
		r, merr := mapResponse(&resp, ex.body)
		if merr != nil {
			return nil, &failure{status: ex.status, what: fmt.Sprintf("HTTP %d", ex.status), err: merr}
		}
		if r.usage.PromptTokens == 0 && r.usage.CompletionTokens == 0 {
			r.usage = estimateUsage(creq.Messages, r.outputs)
		}
		return r, nil
	}
	f := classify(ctx, actx, err, ex, c.m.timeout)
	if f.status != 0 {
		f.retryAfter, f.hasRetryAfter = ex.retryAfter, ex.hasRetry
	}
	return nil, f
}

// classify decides whether a failed attempt is worth retrying: 408, 429
// and 5xx statuses, the per-request timeout, and transport errors
// (connection refused or reset, DNS, a body cut short) are; other 4xx,
// client-side request validation and malformed 2xx bodies are not. The
// op's own ctx ending is never retried.
func classify(opCtx, attemptCtx context.Context, err error, ex *exchange, timeout time.Duration) *failure {
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
		retry := status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status >= 500
		return &failure{retry: retry, status: status, what: fmt.Sprintf("HTTP %d", status), err: err}
	}
	if errors.Is(attemptCtx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return &failure{retry: true, what: fmt.Sprintf("timeout after %s", timeout), err: err}
	}
	var netErr net.Error
	var urlErr *url.Error
	if errors.As(err, &netErr) || errors.As(err, &urlErr) || errors.Is(err, io.ErrUnexpectedEOF) && ex.status == 0 {
		return &failure{retry: true, what: "connection error", err: err}
	}
	if ex.status/100 == 2 {
		return &failure{status: ex.status, what: fmt.Sprintf("HTTP %d", ex.status), err: fmt.Errorf("%w: %v (%s)", ErrMalformedReply, err, bodySnippet(ex.body))}
	}
	return &failure{what: "request rejected", err: err}
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
func (c *call) finalError(f *failure, attempts int) error {
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
	if !f.retry {
		tries += ", not retried"
	}
	return &callError{msg: c.redact(fmt.Sprintf("model %q at %s: %s (%s): %s", c.m.key, c.host, f.what, tries, msg)), err: f.err}
}

// callError is a final endpoint failure; its text is already redacted. It
// unwraps to the sentinel (ErrMalformedReply) but not to the raw error,
// whose text may hold the key.
type callError struct {
	msg string
	err error
}

func (e *callError) Error() string { return e.msg }

func (e *callError) Unwrap() error {
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
