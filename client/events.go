package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/flockrun/flock/api"
)

// Reconnection backoff of an event stream whose connection dropped.
const (
	minReconnect = 50 * time.Millisecond
	maxReconnect = 2 * time.Second
)

// maxEventLine caps one line of an event stream.
const maxEventLine = 16 << 20

// EventsOptions says where an event stream starts and what it carries.
type EventsOptions struct {
	// After is the seq of the last event already seen; the stream starts
	// with the next one (sent as Last-Event-ID).
	After uint64
	// Descendants also streams live-only events (Seq 0) of the run's
	// operations and descendant runs. They are not replayed after a
	// reconnect.
	Descendants bool
	// Retries bounds the consecutive failed reconnections (default 10).
	Retries int
}

// EventStream is an open GET /runs/{id}/events. Next returns its events;
// Close ends it. It is not safe for concurrent use.
type EventStream struct {
	c    *Client
	ctx  context.Context
	stop context.CancelFunc
	id   string
	opts EventsOptions
	last uint64 // seq of the last stored event returned
	done bool   // the terminal event was returned
	// ended is set once the run's head was seen terminal; confirm says
	// that the open connection was made after that, so the server had
	// every event to replay; got counts the events it delivered.
	ended, confirm bool
	got            int

	body io.ReadCloser
	sc   *bufio.Scanner
}

// Events opens a run's event stream. It fails at once for an unknown run
// (ErrNotFound) or a bad option; later drops of the connection are
// reconnected by Next.
func (c *Client) Events(ctx context.Context, id string, opts EventsOptions) (*EventStream, error) {
	if opts.Retries <= 0 {
		opts.Retries = 10
	}
	ctx, stop := context.WithCancel(ctx)
	s := &EventStream{c: c, ctx: ctx, stop: stop, id: id, opts: opts, last: opts.After}
	if err := s.connect(); err != nil {
		stop()
		return nil, err
	}
	return s, nil
}

// LastID is the seq of the last stored event Next returned (or the
// starting point): what a later stream would pass as After.
func (s *EventStream) LastID() uint64 { return s.last }

// Close ends the stream.
func (s *EventStream) Close() error {
	s.stop()
	if s.body != nil {
		return s.body.Close()
	}
	return nil
}

// connect opens the stream after s.last.
func (s *EventStream) connect() error {
	v := url.Values{}
	if s.opts.Descendants {
		v.Set("descendants", "true")
	}
	h := http.Header{"Accept": {"text/event-stream"}}
	if s.last > 0 {
		h.Set("Last-Event-ID", strconv.FormatUint(s.last, 10))
	}
	path := "/runs/" + url.PathEscape(s.id) + "/events" + query(v)
	res, err := s.c.send(s.ctx, http.MethodGet, path, nil, h)
	if err != nil {
		return err
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		res.Body.Close()
		return fmt.Errorf("client: GET %s: %w: Content-Type %q", path, ErrEventStream, ct)
	}
	s.body = res.Body
	s.confirm, s.got = s.ended, 0
	s.sc = bufio.NewScanner(res.Body)
	s.sc.Buffer(make([]byte, 64<<10), maxEventLine)
	return nil
}

// Next returns the next event. After the run's terminal "run" event it
// returns io.EOF. When the connection drops before that, it reconnects
// with Last-Event-ID and goes on; it gives up after Retries consecutive
// failures, or when ctx ends.
func (s *EventStream) Next() (api.Event, error) {
	if s.done {
		return api.Event{}, io.EOF
	}
	backoff := minReconnect
	failures := 0
	for {
		ev, err := s.read()
		if err == nil {
			s.got++
			if ev.Seq > 0 {
				s.last = ev.Seq
			}
			if ev.Seq > 0 && ev.Final() {
				s.done = true
			}
			return ev, nil
		}
		if errors.Is(err, ErrEventStream) {
			return api.Event{}, err
		}
		// The connection ended or failed before the terminal event. The
		// server ends an ended run's stream at once when the client has
		// seen everything (it started after the terminal event): a clean,
		// empty end of a connection made after the head was seen terminal.
		s.body.Close()
		if errors.Is(err, io.EOF) {
			if s.confirm && s.got == 0 {
				s.done = true
				return api.Event{}, io.EOF
			}
			if head, herr := s.c.Run(s.ctx, s.id); herr == nil && head.Status.Terminal() && !s.ended {
				s.ended = true
				if cerr := s.connect(); cerr == nil {
					continue
				}
			}
		}
		for {
			if cerr := s.ctx.Err(); cerr != nil {
				return api.Event{}, cerr
			}
			failures++
			if failures > s.opts.Retries {
				return api.Event{}, fmt.Errorf("client: events of run %s: gave up after %d reconnections: %w", s.id, s.opts.Retries, err)
			}
			t := time.NewTimer(backoff)
			select {
			case <-s.ctx.Done():
				t.Stop()
				return api.Event{}, s.ctx.Err()
			case <-t.C:
			}
			backoff = min(2*backoff, maxReconnect)
			cerr := s.connect()
			if cerr == nil {
				break
			}
			var he *Error
			if errors.As(cerr, &he) && he.Status/100 == 4 {
				return api.Event{}, cerr // the run or the request is wrong, not the connection
			}
			err = cerr
		}
	}
}

// read parses one event from the open connection; io.EOF (or the read
// error) when it ends first.
func (s *EventStream) read() (api.Event, error) {
	var ev api.Event
	var data []byte
	have := false
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "":
			if !have {
				continue
			}
			if err := json.Unmarshal(data, &ev); err != nil {
				return api.Event{}, fmt.Errorf("client: events of run %s: %w: data %q: %v", s.id, ErrEventStream, data, err)
			}
			return ev, nil
		case strings.HasPrefix(line, ":"):
			// A comment (heartbeat).
		case strings.HasPrefix(line, "data:"):
			if have {
				data = append(data, '\n')
			}
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
			have = true
		case strings.HasPrefix(line, "id:"), strings.HasPrefix(line, "event:"), strings.HasPrefix(line, "retry:"):
			// The id is the data's seq and the event its type.
		default:
			return api.Event{}, fmt.Errorf("client: events of run %s: %w: line %q", s.id, ErrEventStream, line)
		}
	}
	if err := s.sc.Err(); err != nil {
		return api.Event{}, err
	}
	return api.Event{}, io.EOF
}
