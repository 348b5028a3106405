package workflows

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/flockrun/flock/state"
)

// Live is what a live run is held by that its stored head cannot say: a
// commit waiting for disk space, operations waiting on a rate limit. It is
// kept in memory only (a full disk cannot record that it is full) and is
// empty for runs that are not being driven.
type Live struct {
	// Stalled says why the run's commits are failing and being retried,
	// e.g. "no space left on device (writing /data/flock.db); retrying".
	Stalled string `json:"stalled,omitempty"`
	// Waiting lists the run's operations that wait on something outside
	// their control, oldest first.
	Waiting []Wait `json:"waiting,omitempty"`
}

// Wait is one operation's wait.
type Wait struct {
	OpID   string    `json:"op_id"`
	Reason string    `json:"reason"`
	Until  time.Time `json:"until"`
	// Message is the reason with the time left, as of the moment Live was
	// called: "rate limited by gpt-4o-mini, retrying in 42 s".
	Message string `json:"message"`
}

// Empty reports whether nothing holds the run.
func (l Live) Empty() bool { return l.Stalled == "" && len(l.Waiting) == 0 }

// Notices returns what holds run as the live-only events that announced
// it when it began ("stalled" run events, "waiting" op events, as of
// now), for an event-stream client that connects after they were sent.
func (l Live) Notices(run string, now time.Time) []state.Event {
	var out []state.Event
	if l.Stalled != "" {
		out = append(out, state.Event{RunID: run, Time: now, Type: state.EventRun, Status: state.EventStalled, Message: l.Stalled})
	}
	for _, w := range l.Waiting {
		ev := waitEvent(w.OpID, w.Reason, w.Until, now)
		ev.RunID = run
		out = append(out, ev)
	}
	return out
}

// waitEvent is the live-only event that says op waits for reason until
// then: "waiting", the message with the time left, and the end in its
// data.
func waitEvent(op, reason string, until, now time.Time) state.Event {
	data, _ := json.Marshal(struct {
		Until time.Time `json:"until"`
	}{until.UTC()})
	return state.Event{Time: now, Type: state.EventOp, Status: state.EventWaiting, OpID: op, Message: waitMessage(reason, until, now), Data: data}
}

// Health is the executor's condition as a whole.
type Health struct {
	// Status is "ok", "degraded" (some runs stall) or HealthUnavailable
	// (the engine cannot read or write runs: a cluster node whose store
	// does not answer).
	Status string `json:"status"`
	// Stalled counts the runs whose commits are being retried, and Reason
	// says why (the first one found).
	Stalled int    `json:"stalled_runs,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// HealthUnavailable is Health.Status of an engine that cannot read or
// write runs; the server answers /health with 503.
const HealthUnavailable = "unavailable"

// liveState is a runner's Live, shared between the drive goroutine, the
// op goroutines and readers.
type liveState struct {
	mu      sync.Mutex
	stalled string           // guarded by mu
	waits   map[string]*Wait // by op id; guarded by mu
	order   []string         // op ids in the order their waits began; guarded by mu
}

// setStalled records why commits fail, or clears it with "". It reports
// whether the value changed.
func (l *liveState) setStalled(msg string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	changed := l.stalled != msg
	l.stalled = msg
	return changed
}

// setWait records or (zero until) clears the wait of op. It reports
// whether a new wait began or an existing one changed its reason or time.
func (l *liveState) setWait(op, reason string, until time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if until.IsZero() {
		if _, ok := l.waits[op]; ok {
			delete(l.waits, op)
			for i, id := range l.order {
				if id == op {
					l.order = append(l.order[:i], l.order[i+1:]...)
					break
				}
			}
		}
		return false
	}
	if l.waits == nil {
		l.waits = make(map[string]*Wait)
	}
	if w, ok := l.waits[op]; ok {
		changed := w.Reason != reason || !w.Until.Equal(until)
		w.Reason, w.Until = reason, until
		return changed
	}
	l.waits[op] = &Wait{OpID: op, Reason: reason, Until: until}
	l.order = append(l.order, op)
	return true
}

// snapshot returns the current Live with messages as of now.
func (l *liveState) snapshot(now time.Time) Live {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := Live{Stalled: l.stalled}
	for _, id := range l.order {
		w := *l.waits[id]
		w.Message = waitMessage(w.Reason, w.Until, now)
		out.Waiting = append(out.Waiting, w)
	}
	return out
}

// waitMessage words a wait for people: "REASON in 42 s".
func waitMessage(reason string, until, now time.Time) string {
	left := until.Sub(now)
	if left < 0 {
		left = 0
	}
	return fmt.Sprintf("%s in %d s", reason, int64(math.Ceil(left.Seconds())))
}

// Drives reports whether this executor drives run id now.
func (e *Executor) Drives(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.runs[id]
	return ok
}

// Live returns what holds run id at the moment, if the executor drives it.
func (e *Executor) Live(id string) Live {
	e.mu.Lock()
	r := e.runs[id]
	e.mu.Unlock()
	if r == nil {
		return Live{}
	}
	return r.live.snapshot(e.now())
}

// Health reports whether every driven run can make progress: "degraded"
// while some run's commits are being retried (a full disk).
func (e *Executor) Health() Health {
	e.mu.Lock()
	ids := make([]string, 0, len(e.runs))
	for id := range e.runs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	runs := make([]*runner, len(ids))
	for i, id := range ids {
		runs[i] = e.runs[id]
	}
	e.mu.Unlock()
	h := Health{Status: "ok"}
	for _, r := range runs {
		r.live.mu.Lock()
		msg := r.live.stalled
		r.live.mu.Unlock()
		if msg == "" {
			continue
		}
		h.Stalled++
		if h.Reason == "" {
			h.Reason = msg
		}
	}
	if h.Stalled > 0 {
		h.Status = "degraded"
	}
	return h
}

// Backoff of commits retried for lack of space, and while the store does
// not answer.
const (
	stallFirstRetry     = 50 * time.Millisecond
	stallMaxRetry       = 2 * time.Second
	unavailableMaxRetry = 500 * time.Millisecond
)

// commit writes c, retrying with backoff while the disk is full or the
// store does not answer (state.ErrUnavailable: a cluster electing new
// leaders): the run shows it is stalled, a live event says so, and it goes
// on by itself once the store answers. The commit keeps its Commit.ID
// across tries, so that a try whose outcome was unknown applies at most
// once. In cluster mode each try waits until the run's lease holds by
// this node's clock (awaitLease). Other store errors return at once. It
// gives up when the executor stops (the run then resumes on the next
// start, as after a crash) or, in cluster mode, when the lease is lost
// (the error then wraps errLeaseLost). A commit fenced by another owner's
// write (state.ErrFenced) returns at once.
func (r *runner) commit(c *state.Commit) error {
	wait := stallFirstRetry
	// Every commit of a driven run is fenced by the head it last wrote, so
	// that if another owner took the run, nothing more is written here.
	c.ExpectRevision = r.head.Revision
	if c.ID == "" {
		c.ID = newCommitID()
	}
	for {
		if err := r.awaitLease(); err != nil {
			return fmt.Errorf("commit to run %s: %w", r.id, err)
		}
		err := r.e.store.Commit(context.WithoutCancel(r.ctx), c)
		if err == nil {
			if r.live.setStalled("") {
				r.e.log.Info("commit succeeded again; the run goes on", "run", r.head.ID)
				r.e.broker.notice(r.head.ID, state.Event{Time: r.e.now().UTC(), Type: state.EventRun, Status: state.EventUnstalled,
					Message: "the store answers again; the run goes on"})
			}
			return nil
		}
		var msg, logMsg string
		limit := stallMaxRetry
		switch {
		case errors.Is(err, state.ErrNoSpace):
			msg, logMsg = err.Error()+"; retrying", "commit failed for lack of space; retrying until space is freed"
		case errors.Is(err, state.ErrUnavailable):
			msg = err.Error() + "; retrying, the finished results kept"
			logMsg = "commit failed: the store does not answer; retrying until it does (or the lease is lost), results kept"
			limit = unavailableMaxRetry
		default:
			return err
		}
		if r.live.setStalled(msg) {
			r.e.log.Error(logMsg, "run", r.head.ID, "err", err)
			r.e.broker.notice(r.head.ID, state.Event{Time: r.e.now().UTC(), Type: state.EventRun, Status: state.EventStalled, Message: msg})
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-r.lease.lostC():
			t.Stop()
			return fmt.Errorf("commit to run %s: %w: %w", r.id, errLeaseLost, err)
		case <-r.e.baseCtx.Done():
			t.Stop()
			return err
		}
		wait = min(wait*2, limit)
	}
}

// newCommitID returns a random Commit.ID.
func newCommitID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// waiting is the handlers.Env.Waiting of op: it records the wait on the
// run's Live and publishes an event when a wait begins or changes.
func (r *runner) waiting(op string) func(reason string, until time.Time) {
	return func(reason string, until time.Time) {
		if !r.live.setWait(op, reason, until) {
			return
		}
		r.e.broker.notice(r.head.ID, waitEvent(op, reason, until, r.e.now().UTC()))
	}
}
