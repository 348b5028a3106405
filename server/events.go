package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/state"
)

// eventPage is how many stored events one store read returns.
const eventPage = 500

// Resubscription backoff when a live subscription closes without having
// delivered anything (for example after the executor stopped).
const (
	minResubscribe = 50 * time.Millisecond
	maxResubscribe = 2 * time.Second
)

// streamEvents answers GET /runs/:id/events with Server-Sent Events.
//
// It starts after the Last-Event-ID header or, without it, after ?after=.
// Each round subscribes to live events first and reads the store second,
// so nothing committed in between is lost; events whose seq was already
// sent are dropped, and a gap in the live sequence is filled from the
// store. The stream ends after the run's terminal "run" event (or at once
// when the run has ended and the client has seen everything), when the
// client disconnects, or when the server shuts down. A store that does
// not answer for a while (state.ErrUnavailable: a cluster electing new
// leaders after a node died) does not end it: the stream reads again,
// with heartbeats meanwhile, and follows the run wherever it resumes.
//
// A client that connects while the run is held (a retry's wait, a commit
// stalled for disk space) first gets the live-only "waiting" and "stalled"
// events that say so, as of now: they were sent when the wait began.
//
// With ?descendants=true the stream also carries live-only events (no id:
// line; their data has seq 0 and run_id): the run's operations starting
// and every event of its descendant runs (spawned children, their
// children), so a rollout's stream shows each chain's generations and
// tools. Live-only events are not replayed after a reconnect.
//
// A request that accepts application/json and not text/event-stream gets
// a page of the stored events after ?after= instead: {"events","next"}
// (?limit=, default 100), what a reader that must not wait (flock runs
// logs) asks for.
func (s *Server) streamEvents(c *echo.Context) error {
	id := c.Param("id")
	after, err := resumePoint(c)
	if err != nil {
		return err
	}
	if accept := c.Request().Header.Get(echo.HeaderAccept); strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/event-stream") {
		return s.eventsPage(c, id, after)
	}
	tree, err := queryBool(c, "descendants")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	st := &eventStream{s: s, id: id, last: after, tree: tree}
	ch, unsubscribe := st.subscribe()
	head, err := s.store.Run(ctx, id)
	if err != nil {
		unsubscribe()
		return &runError{id: id, err: err}
	}

	w := c.Response()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set(echo.HeaderCacheControl, "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		s.log.Debug("event stream ended", "run", id, "err", err)
		unsubscribe()
		return nil
	}

	s.streams.Add(1)
	defer s.streams.Add(-1)
	st.w, st.rc = w, rc
	err = st.follow(ctx, head, ch, unsubscribe)
	if err != nil {
		// The response has started: the client can only see the stream end.
		s.log.Debug("event stream ended", "run", id, "last_seq", st.last, "err", err)
	}
	return nil
}

// resumePoint returns the seq after which the stream starts: the
// Last-Event-ID header wins over the "after" parameter.
func resumePoint(c *echo.Context) (uint64, error) {
	if v := strings.TrimSpace(c.Request().Header.Get("Last-Event-ID")); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, badInput("Last-Event-ID", "must be a non-negative integer event id (got %q)", v)
		}
		return n, nil
	}
	return queryUint(c, "after")
}

// eventStream is one client's event stream.
type eventStream struct {
	s    *Server
	w    http.ResponseWriter
	rc   *http.ResponseController
	id   string
	last uint64 // seq of the last event sent
	tree bool   // also live-only events of the run's tree
}

func (st *eventStream) subscribe() (<-chan state.Event, func()) {
	if st.tree {
		return st.s.roles.subscriber.SubscribeTree(st.id)
	}
	return st.s.roles.subscriber.Subscribe(st.id)
}

// follow sends stored then live events until the run's end. It owns
// unsubscribe and every later subscription.
func (st *eventStream) follow(ctx context.Context, head state.Run, ch <-chan state.Event, unsubscribe func()) error {
	defer func() { unsubscribe() }()
	heartbeat := time.NewTicker(st.s.heartbeat)
	defer heartbeat.Stop()
	backoff := minResubscribe
	for first := true; ; first = false {
		start := st.last
		var done bool
		err := st.waitOut(ctx, heartbeat.C, func() (err error) {
			done, err = st.replay(ctx)
			return err
		})
		if err != nil || done || head.Status.Terminal() {
			// A terminal head is committed with its final event, so the
			// replay that followed the head read has sent everything.
			return err
		}
		if first {
			// What holds the run now was announced live, before this
			// client came: say it again (subscribed already, so a wait
			// that begins meanwhile is not missed; one may come twice).
			for _, ev := range st.s.roles.monitor.Live(st.id).Notices(st.id, time.Now().UTC()) {
				if err := st.sendLive(ev); err != nil {
					return err
				}
			}
		}
		done, err = st.live(ctx, ch, heartbeat.C)
		if err != nil || done {
			return err
		}
		// The subscription was closed (we fell behind, or the executor
		// let go of the run): read the store again and resubscribe.
		unsubscribe()
		if st.last > start {
			backoff = minResubscribe
		} else {
			if err := st.pause(ctx, backoff, heartbeat.C); err != nil {
				return err
			}
			backoff = min(2*backoff, maxResubscribe)
		}
		ch, unsubscribe = st.subscribe()
		if err := st.waitOut(ctx, heartbeat.C, func() (err error) {
			head, err = st.s.store.Run(ctx, st.id)
			return err
		}); err != nil {
			return err
		}
	}
}

// waitOut calls read until it does not fail with state.ErrUnavailable (a
// cluster store electing new leaders after a node died: the run goes on
// once it has, driven here or elsewhere), pausing between tries with the
// connection kept alive, for as long as the client stays. Any other
// error is returned.
func (st *eventStream) waitOut(ctx context.Context, heartbeat <-chan time.Time, read func() error) error {
	backoff := minResubscribe
	for {
		err := read()
		if !errors.Is(err, state.ErrUnavailable) {
			return err
		}
		st.s.log.Debug("event stream waits for the store", "run", st.id, "last_seq", st.last, "err", err)
		if err := st.pause(ctx, backoff, heartbeat); err != nil {
			return err
		}
		backoff = min(2*backoff, maxResubscribe)
	}
}

// replay sends the stored events after st.last. It reports whether it sent
// the run's terminal event.
func (st *eventStream) replay(ctx context.Context) (bool, error) {
	for {
		evs, err := st.s.store.Events(ctx, st.id, st.last, eventPage)
		if err != nil {
			return false, err
		}
		for _, ev := range evs {
			if ev.Seq <= st.last {
				continue
			}
			if err := st.send(ev); err != nil {
				return false, err
			}
			if ev.Final() {
				return true, nil
			}
		}
		if len(evs) < eventPage {
			return false, nil
		}
	}
}

// live sends events from ch until the run's terminal event (true), until
// ch is closed (false, nil), or until the client or the server goes away.
func (st *eventStream) live(ctx context.Context, ch <-chan state.Event, heartbeat <-chan time.Time) (bool, error) {
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return false, nil
			}
			if ev.Seq == 0 {
				if err := st.sendLive(ev); err != nil {
					return false, err
				}
				continue
			}
			if ev.Seq <= st.last {
				continue // already sent from the store
			}
			if ev.Seq > st.last+1 {
				// Published before we subscribed but not yet read: fill
				// the gap from the store, which has everything published.
				var done bool
				err := st.waitOut(ctx, heartbeat, func() (err error) {
					done, err = st.replay(ctx)
					return err
				})
				if err != nil || done {
					return done, err
				}
				if ev.Seq <= st.last {
					continue
				}
			}
			if err := st.send(ev); err != nil {
				return false, err
			}
			if ev.Final() {
				return true, nil
			}
		case <-heartbeat:
			if err := st.comment("heartbeat"); err != nil {
				return false, err
			}
		case <-ctx.Done():
			return false, ctx.Err()
		case <-st.s.quit:
			return false, errShuttingDown
		}
	}
}

// pause waits d while keeping the connection alive.
func (st *eventStream) pause(ctx context.Context, d time.Duration, heartbeat <-chan time.Time) error {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return nil
		case <-heartbeat:
			if err := st.comment("heartbeat"); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		case <-st.s.quit:
			return errShuttingDown
		}
	}
}

// send writes one event and flushes it.
func (st *eventStream) send(ev state.Event) error {
	data, err := json.Marshal(viewEvent(ev))
	if err != nil {
		return fmt.Errorf("encode event %d: %w", ev.Seq, err)
	}
	if _, err := fmt.Fprintf(st.w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, sseName(ev.Type), data); err != nil {
		return err
	}
	if err := st.rc.Flush(); err != nil {
		return err
	}
	st.last = ev.Seq
	return nil
}

// sendLive writes a live-only event: no id line, so a client's
// Last-Event-ID keeps pointing at the run's own stored events.
func (st *eventStream) sendLive(ev state.Event) error {
	data, err := json.Marshal(viewEvent(ev))
	if err != nil {
		return fmt.Errorf("encode live event: %w", err)
	}
	if _, err := fmt.Fprintf(st.w, "event: %s\ndata: %s\n\n", sseName(ev.Type), data); err != nil {
		return err
	}
	return st.rc.Flush()
}

// comment writes an SSE comment line (ignored by clients) and flushes it.
func (st *eventStream) comment(text string) error {
	if _, err := fmt.Fprintf(st.w, ": %s\n\n", text); err != nil {
		return err
	}
	return st.rc.Flush()
}

// sseName is the SSE event name of an event of type t: the type itself,
// or "message" (SSE's default) for one that cannot be a name.
func sseName(t state.EventType) string {
	if t == "" || strings.ContainsAny(string(t), "\r\n") {
		return "message"
	}
	return string(t)
}

// eventsPage answers GET /runs/:id/events with a JSON page of stored
// events after after.
func (s *Server) eventsPage(c *echo.Context, id string, after uint64) error {
	limit, err := queryLimit(c, defaultLogLimit)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.store.Run(ctx, id); err != nil {
		return &runError{id: id, err: err}
	}
	evs, err := s.store.Events(ctx, id, after, limit+1)
	if err != nil {
		return &runError{id: id, err: err}
	}
	evs, next := page(evs, limit, func(ev state.Event) string { return strconv.FormatUint(ev.Seq, 10) })
	views := make([]api.Event, 0, len(evs))
	for _, ev := range evs {
		views = append(views, viewEvent(ev))
	}
	return c.JSON(http.StatusOK, api.Events{Events: views, Next: next})
}
