package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/flockrun/flock/api"
)

// maxErrorBody caps how much of an error answer is read.
const maxErrorBody = 64 << 10

// Client talks to one flock server. It is safe for concurrent use.
type Client struct {
	base  string
	token string
	hc    *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithToken sends "Authorization: Bearer token" with every request.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient uses hc instead of http.DefaultClient. Leave its Timeout
// zero: event streams last as long as runs; bound calls with their ctx.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// New returns a client of the server at base, e.g. "http://127.0.0.1:8080".
func New(base string, opts ...Option) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("client: base URL %q: %w", base, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q: want http:// or https:// and a host", base)
	}
	c := &Client{base: strings.TrimRight(base, "/"), hc: http.DefaultClient}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Start starts a run (POST /start_workflow).
func (c *Client) Start(ctx context.Context, req api.StartRequest) (api.RunStatus, error) {
	var out api.RunStatus
	return out, c.call(ctx, http.MethodPost, "/start_workflow", req, &out)
}

// Run reads a run's head (GET /runs/{id}).
func (c *Client) Run(ctx context.Context, id string) (api.Run, error) {
	var out api.Run
	return out, c.call(ctx, http.MethodGet, "/runs/"+url.PathEscape(id), nil, &out)
}

// Operator reads which data directory the server holds (GET /operator);
// the client's token must be the operator token of that directory's
// server file (ErrUnauthorized otherwise).
func (c *Client) Operator(ctx context.Context) (api.Operator, error) {
	var out api.Operator
	return out, c.call(ctx, http.MethodGet, "/operator", nil, &out)
}

// Handover hands a run from the command line to the server (POST
// /operator/runs, operator token only): it starts, or resumes the
// unfinished run of the same h.Key (RunStatus.Resumed).
func (c *Client) Handover(ctx context.Context, h api.Handover) (api.RunStatus, error) {
	var out api.RunStatus
	return out, c.call(ctx, http.MethodPost, "/operator/runs", h, &out)
}

// HandoverResume resumes run id and its unfinished descendants with the
// keys given (POST /operator/runs/{id}/resume, operator token only).
func (c *Client) HandoverResume(ctx context.Context, id string, keys map[string]string) (api.RunStatus, error) {
	var out api.RunStatus
	return out, c.call(ctx, http.MethodPost, "/operator/runs/"+url.PathEscape(id)+"/resume", api.HandoverResume{Keys: keys}, &out)
}

// RunsQuery filters and pages GET /runs; zero fields are left out.
type RunsQuery struct {
	Status   api.Status
	Workflow string
	ParentID string
	// Top lists only the runs without a parent.
	Top bool
	// Query keeps the runs whose task contains it, ignoring case; a page
	// of a search may be short, or empty, and still have a Next.
	Query string
	After string // the previous page's Next
	Limit int
}

// Runs lists run heads, newest first (GET /runs).
func (c *Client) Runs(ctx context.Context, q RunsQuery) (api.Runs, error) {
	v := url.Values{}
	set(v, "status", string(q.Status))
	set(v, "workflow", q.Workflow)
	set(v, "parent_id", q.ParentID)
	set(v, "after", q.After)
	set(v, "q", q.Query)
	if q.Top {
		v.Set("top", "true")
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out api.Runs
	return out, c.call(ctx, http.MethodGet, "/runs"+query(v), nil, &out)
}

// Entries reads a page of a run's entry log after the entry seq after
// (GET /runs/{id}/entries); limit 0 is the server's default.
func (c *Client) Entries(ctx context.Context, id string, after uint64, limit int) (api.Entries, error) {
	v := page(url.Values{}, after, limit)
	var out api.Entries
	return out, c.call(ctx, http.MethodGet, "/runs/"+url.PathEscape(id)+"/entries"+query(v), nil, &out)
}

// EntriesOfType reads a page of the entries of the given types (a
// rollout's "row", a synthesis seed's "qa") after the entry seq after
// (GET /runs/{id}/entries?type=); the server reads a bounded part of the
// log per request, so a page may be short, or empty, and still have a
// Next.
func (c *Client) EntriesOfType(ctx context.Context, id string, types []string, after uint64, limit int) (api.Entries, error) {
	v := page(url.Values{"type": {strings.Join(types, ",")}}, after, limit)
	var out api.Entries
	return out, c.call(ctx, http.MethodGet, "/runs/"+url.PathEscape(id)+"/entries"+query(v), nil, &out)
}

// Usage sums the tokens and cost of a run's generate operations by model,
// and with descendants its descendant runs' too (GET /runs/{id}/usage).
func (c *Client) Usage(ctx context.Context, id string, descendants bool) (api.UsageByModel, error) {
	q := ""
	if descendants {
		q = "?descendants=true"
	}
	var out api.UsageByModel
	return out, c.call(ctx, http.MethodGet, "/runs/"+url.PathEscape(id)+"/usage"+q, nil, &out)
}

// Ops reads a page of a run's operation journal after the op id after
// (GET /runs/{id}/ops); limit 0 is the server's default.
func (c *Client) Ops(ctx context.Context, id, after string, limit int) (api.Ops, error) {
	v := url.Values{}
	set(v, "after", after)
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	var out api.Ops
	return out, c.call(ctx, http.MethodGet, "/runs/"+url.PathEscape(id)+"/ops"+query(v), nil, &out)
}

// StoredEvents reads a page of a run's stored events after the event
// seq after (GET /runs/{id}/events as JSON, not a stream: it returns at
// once, live run or not); limit 0 is the server's default.
func (c *Client) StoredEvents(ctx context.Context, id string, after uint64, limit int) (api.Events, error) {
	v := page(url.Values{}, after, limit)
	var out api.Events
	return out, c.call(ctx, http.MethodGet, "/runs/"+url.PathEscape(id)+"/events"+query(v), nil, &out)
}

// Cancel cancels a run and its children and returns once it has ended
// (POST /runs/{id}/cancel); ErrConflict once it had ended.
func (c *Client) Cancel(ctx context.Context, id string) (api.RunStatus, error) {
	return c.control(ctx, id, "cancel")
}

// Pause pauses a run (POST /runs/{id}/pause); ErrConflict once it has ended.
func (c *Client) Pause(ctx context.Context, id string) (api.RunStatus, error) {
	return c.control(ctx, id, "pause")
}

// Resume resumes a paused run (POST /runs/{id}/resume); ErrConflict
// unless it is paused.
func (c *Client) Resume(ctx context.Context, id string) (api.RunStatus, error) {
	return c.control(ctx, id, "resume")
}

func (c *Client) control(ctx context.Context, id, action string) (api.RunStatus, error) {
	var out api.RunStatus
	return out, c.call(ctx, http.MethodPost, "/runs/"+url.PathEscape(id)+"/"+action, nil, &out)
}

// Fork starts a new run from the state of run id at req.Step (POST
// /runs/{id}/fork) and returns its id; ErrBadRequest for a step the run
// never reached.
func (c *Client) Fork(ctx context.Context, id string, req api.ForkRequest) (api.Forked, error) {
	var out api.Forked
	return out, c.call(ctx, http.MethodPost, "/runs/"+url.PathEscape(id)+"/fork", req, &out)
}

// Questions lists the questions run id waits on a person for (GET
// /runs/{id}/human).
func (c *Client) Questions(ctx context.Context, id string) ([]api.Question, error) {
	var out api.Questions
	return out.Pending, c.call(ctx, http.MethodGet, "/runs/"+url.PathEscape(id)+"/human", nil, &out)
}

// Answer answers question op of run id (POST
// /runs/{id}/human/{op_id}/answer); answer is any JSON value the question
// takes (a string, a number). It returns once the answer is journaled.
// ErrNotFound for an op that is no question, ErrConflict once answered.
func (c *Client) Answer(ctx context.Context, id, op string, answer any) error {
	raw, err := json.Marshal(answer)
	if err != nil {
		return fmt.Errorf("client: encode the answer: %w", err)
	}
	var out api.OK
	return c.call(ctx, http.MethodPost, "/runs/"+url.PathEscape(id)+"/human/"+url.PathEscape(op)+"/answer",
		api.AnswerRequest{Answer: raw}, &out)
}

// Intervene decides on the action run id waits to execute in
// intervention mode (POST /runs/{id}/intervene): req.Action replaces it,
// req.Approve lets it run. ErrConflict when the run waits for none.
func (c *Client) Intervene(ctx context.Context, id string, req api.InterveneRequest) error {
	var out api.OK
	return c.call(ctx, http.MethodPost, "/runs/"+url.PathEscape(id)+"/intervene", req, &out)
}

// Workflows lists the registered workflows (GET /workflows).
func (c *Client) Workflows(ctx context.Context) ([]api.Graph, error) {
	var out api.Workflows
	return out.Workflows, c.call(ctx, http.MethodGet, "/workflows", nil, &out)
}

// Health reads the server's condition (GET /health).
func (c *Client) Health(ctx context.Context) (api.Health, error) {
	var out api.Health
	return out, c.call(ctx, http.MethodGet, "/health", nil, &out)
}

// Wait follows a run's events until its terminal event and returns its
// final head.
func (c *Client) Wait(ctx context.Context, id string) (api.Run, error) {
	s, err := c.Events(ctx, id, EventsOptions{})
	if err != nil {
		return api.Run{}, err
	}
	defer s.Close()
	for {
		if _, err := s.Next(); errors.Is(err, io.EOF) {
			return c.Run(ctx, id)
		} else if err != nil {
			return api.Run{}, err
		}
	}
}

// call sends one request and decodes a 2xx answer into out.
func (c *Client) call(ctx context.Context, method, path string, body, out any) error {
	res, err := c.send(ctx, method, path, body, nil)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		return fmt.Errorf("client: %s %s: decode the answer: %w", method, path, err)
	}
	return nil
}

// send sends one request; an answer other than 2xx becomes an *Error
// (its body closed). The caller closes a 2xx answer's body.
func (c *Client) send(ctx context.Context, method, path string, body any, header http.Header) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("client: %s %s: encode the body: %w", method, path, err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return nil, &TransportError{Server: c.base, Err: err}
	}
	if res.StatusCode/100 == 2 {
		return res, nil
	}
	defer res.Body.Close()
	e := &Error{Server: c.base, Method: method, Path: path, Status: res.StatusCode, RequestID: res.Header.Get("X-Request-ID")}
	b, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	var eb api.Error
	if json.Unmarshal(b, &eb) == nil && eb.Error != "" {
		e.Message = eb.Error
	} else {
		e.Message = strings.TrimSpace(string(b))
	}
	return nil, e
}

func set(v url.Values, k, s string) {
	if s != "" {
		v.Set(k, s)
	}
}

// page adds a page's after (a seq; 0: from the start) and limit (0: the
// server's default) to v and returns v.
func page(v url.Values, after uint64, limit int) url.Values {
	if after > 0 {
		v.Set("after", strconv.FormatUint(after, 10))
	}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	return v
}

func query(v url.Values) string {
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}
