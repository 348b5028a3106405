package workflows

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/flockrun/flock/internal/boottime"
	"github.com/flockrun/flock/state"
)

// errLeaseLost is the cancellation cause of a run whose lease another
// owner took: this executor stops driving it without writing.
var errLeaseLost = errors.New("lease on the run lost to another owner")

// errLeaseLapsed says that a run's lease may have lapsed by this node's
// own clock (the store has not confirmed it for most of its TTL): the
// run's operations in flight are stopped, none starts and nothing is
// committed until the store confirms the lease again (or says it is
// lost). It cancels a step's operations, never the run.
var errLeaseLapsed = errors.New("the run's lease may have lapsed: the store has not confirmed it in time")

// renewParallel bounds the lease renewals in flight at once.
const renewParallel = 16

// defaultOwner names this process in leases: host, pid and a random
// suffix, so that two executors never share a name.
func defaultOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "flock"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Owner returns the name this executor holds its runs' leases under.
func (e *Executor) Owner() string { return e.cfg.Owner }

// claim takes (or renews) this executor's lease on run id. It returns the
// reading of the lease clock (package boottime) taken before the request:
// the lease holds at least until that reading plus the TTL.
func (e *Executor) claim(ctx context.Context, id string) (time.Duration, error) {
	t0 := boottime.Now()
	if _, err := e.store.Claim(ctx, id, e.cfg.Owner, e.cfg.LeaseTTL); err != nil {
		return 0, fmt.Errorf("claim run %s: %w", id, err)
	}
	return t0, nil
}

// release gives up this executor's lease on run id (best effort: an
// unreleased lease expires).
func (e *Executor) release(id string) {
	if err := e.store.Release(context.Background(), id, e.cfg.Owner); err != nil {
		e.log.Warn("release run lease", "run", id, "err", err)
	}
}

// leaseSpare is how much of a lease must be left, by this node's clock,
// for the run to start an operation or commit: a pause of the process
// between the check and the act shorter than this cannot let the act
// happen after the lease lapsed in the other nodes' eyes.
func (e *Executor) leaseSpare() time.Duration { return e.cfg.LeaseTTL / 4 }

// renewEvery is the period of lease renewals (and of the lease watch).
func (e *Executor) renewEvery() time.Duration { return e.cfg.LeaseTTL / 4 }

// runLease is what a driven run knows of its lease by its own clock.
type runLease struct {
	mu sync.Mutex
	// until is the lease clock's reading (boottime.Now) at which the
	// lease may lapse: the reading taken before the store last confirmed
	// it, plus the TTL. Guarded by mu.
	until time.Duration
	// confirmed is closed and replaced each time the store confirms the
	// lease. Guarded by mu.
	confirmed chan struct{}
	// lapsed says the run was found with its lease lapsed and not
	// confirmed since. Guarded by mu.
	lapsed bool
	// stop cancels the operations of the current step (nil between
	// steps). Guarded by mu.
	stop context.CancelCauseFunc
	// lost is closed once the store said the lease is lost. Guarded by mu.
	lost chan struct{}
}

// lostC returns the channel closed once the lease is lost.
func (l *runLease) lostC() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost == nil {
		l.lost = make(chan struct{})
	}
	return l.lost
}

// markLost records that the store said the lease is lost.
func (l *runLease) markLost() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost == nil {
		l.lost = make(chan struct{})
	}
	select {
	case <-l.lost:
	default:
		close(l.lost)
	}
}

// confirm records that the store confirmed the lease at lease clock
// reading t0 (taken before the request). It reports whether the lease had
// been found lapsed (and is now back).
func (l *runLease) confirm(t0, ttl time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u := t0 + ttl; u > l.until {
		l.until = u
	}
	if l.confirmed != nil {
		close(l.confirmed)
	}
	l.confirmed = make(chan struct{})
	back := l.lapsed
	l.lapsed = false
	return back
}

// left returns how long the lease holds by the lease clock, and the
// channel closed at its next confirmation.
func (l *runLease) left() (time.Duration, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.confirmed == nil {
		l.confirmed = make(chan struct{})
	}
	return l.until - boottime.Now(), l.confirmed
}

// leased reports whether r may start an operation or commit now: always
// in single-process mode (no other process can take the run), and in
// cluster mode only while its lease holds with leaseSpare to spare by
// this node's own clock.
func (r *runner) leased() bool {
	if !r.e.dispatched() {
		return true
	}
	left, _ := r.lease.left()
	return left > r.e.leaseSpare()
}

// mayStart is the runs' handlers.Env.MayStart: nil while the run may start
// work (leased), else errLeaseLapsed, after it stopped the step's
// operations (lapse).
func (r *runner) mayStart() error {
	if r.leased() {
		return nil
	}
	r.lapse()
	return errLeaseLapsed
}

// lapse handles a lease found lapsed by the lease clock: the operations
// in flight are stopped (their processes killed; their results, if any,
// are not journaled) before anything else is done, and the run waits
// until the store confirms the lease (it goes on) or says it is lost (it
// lets go). It reports whether the lease was not already known lapsed.
func (r *runner) lapse() bool {
	r.lease.mu.Lock()
	first := !r.lease.lapsed
	r.lease.lapsed = true
	stop := r.lease.stop
	r.lease.mu.Unlock()
	if stop != nil {
		stop(errLeaseLapsed)
	}
	if first {
		r.e.log.Warn("the run's lease may have lapsed (the store has not confirmed it in time): its operations are stopped until the store confirms it; if another node took the run, this one lets it go",
			"run", r.id)
	}
	return first
}

// stepContext returns the context of the current step's operations: the
// run's, cancelled with errLeaseLapsed if the lease lapses. The returned
// function ends it once the step's operations are done.
func (r *runner) stepContext() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(r.ctx)
	r.lease.mu.Lock()
	r.lease.stop = cancel
	lapsed := r.lease.lapsed
	r.lease.mu.Unlock()
	if lapsed {
		cancel(errLeaseLapsed)
	}
	return ctx, func() {
		r.lease.mu.Lock()
		r.lease.stop = nil
		r.lease.mu.Unlock()
		cancel(nil)
	}
}

// awaitLease waits until the run's lease holds with time to spare by the
// lease clock, showing the wait as the run's stall. It fails with an error
// wrapping errLeaseLost when the store says the lease is lost, or with the
// executor's stop. A cancel or pause of the run does not end the wait: the
// commit that records it needs the lease too.
func (r *runner) awaitLease() error {
	if r.leased() {
		return nil
	}
	msg := "the store has not confirmed the run's lease in time (a cluster electing leaders?); waiting, results kept"
	if r.live.setStalled(msg) {
		r.e.broker.notice(r.id, state.Event{Time: r.e.now().UTC(), Type: state.EventRun, Status: state.EventStalled, Message: msg})
	}
	lost := r.lease.lostC()
	for {
		left, confirmed := r.lease.left()
		if left > r.e.leaseSpare() {
			if r.live.setStalled("") {
				r.e.broker.notice(r.id, state.Event{Time: r.e.now().UTC(), Type: state.EventRun, Status: state.EventUnstalled,
					Message: "the store confirmed the run's lease; the run goes on"})
			}
			return nil
		}
		select {
		case <-confirmed:
		case <-lost:
			return errLeaseLost
		case <-r.e.baseCtx.Done():
			return context.Cause(r.e.baseCtx)
		}
	}
}

// watchLeases checks, every renewEvery/2 of the lease clock, that every
// driven run's lease holds with time to spare, and makes a run whose lease
// may have lapsed stop its operations (lapse). It runs on a goroutine owned
// by the executor (Start starts it in cluster mode, Stop waits for it).
// Operations are also checked one by one as they start, so a process that
// wakes from a pause starts nothing before this watch has run.
func (e *Executor) watchLeases() {
	t := time.NewTicker(max(e.renewEvery()/2, 5*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-e.baseCtx.Done():
			return
		case <-t.C:
		}
		for _, r := range e.driven() {
			if !r.leased() {
				r.lapse()
			}
		}
	}
}

// driven returns the runners of the driven runs.
func (e *Executor) driven() []*runner {
	e.mu.Lock()
	defer e.mu.Unlock()
	runs := make([]*runner, 0, len(e.runs))
	for _, r := range e.runs {
		runs = append(runs, r)
	}
	return runs
}

// renewLeases renews the lease of every driven run each renewEvery until
// the executor stops, at most renewParallel at once, each call bounded
// to twice that period. A renewal records, by the lease clock, until when
// the lease holds (runLease.confirm); a run whose lease was lost (another
// owner claimed it after it expired) stops being driven. It runs on a
// goroutine owned by the executor (Start starts it, Stop waits for it).
func (e *Executor) renewLeases() {
	t := time.NewTicker(e.renewEvery())
	defer t.Stop()
	sem := make(chan struct{}, renewParallel)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-e.baseCtx.Done():
			return
		case <-t.C:
		}
		for _, r := range e.driven() {
			select {
			case sem <- struct{}{}:
			case <-e.baseCtx.Done():
				return
			}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				e.renew(r)
			}()
		}
		wg.Wait() // one round at a time
	}
}

// renew renews r's lease once.
func (e *Executor) renew(r *runner) {
	ctx, cancel := context.WithTimeout(e.baseCtx, 2*e.renewEvery())
	defer cancel()
	t0 := boottime.Now()
	_, err := e.store.Renew(ctx, r.id, e.cfg.Owner, e.cfg.LeaseTTL)
	switch {
	case err == nil:
		if r.lease.confirm(t0, e.cfg.LeaseTTL) {
			e.log.Info("the store confirmed the run's lease again; the run goes on", "run", r.id)
		}
	case errors.Is(err, state.ErrLeaseLost):
		e.log.Warn("lease on the run lost; another node drives it now", "run", r.id, "err", err)
		r.lease.markLost()
		r.cancel(errLeaseLost)
	case e.baseCtx.Err() != nil:
	default:
		e.log.Warn("renew run lease", "run", r.id, "err", err)
	}
}
