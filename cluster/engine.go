package cluster

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// subBuffer is how many events a subscriber may lag before it is dropped
// (it then reads the store and subscribes again), as the executor's own.
const subBuffer = 256

// headPoll is how often a quiet subscription reads the run's head, to end
// when the run has ended or paused even if its last event was missed.
const headPoll = time.Second

// healthTTL is how long Health answers from its last check of the store:
// /health needs no token, and a check asks every stream for its info.
const healthTTL = time.Second

// healthTimeout bounds a check of the store.
const healthTimeout = 2 * time.Second

// StoreChecker is implemented by stores that can tell whether they are
// still usable (state/jetstream's Store): a cluster node's /health asks.
type StoreChecker interface {
	Check(ctx context.Context) error
}

// Engine is the executor as the HTTP server sees it on a cluster node
// (server.Engine): everything is the executor's, except that event
// subscriptions follow the run's event subject, so that a node streams
// the events of runs driven by any node (package doc, "Events"), and
// Health checks the shared store and the claim queue too.
type Engine struct {
	*workflows.Executor
	d *Dispatcher

	mu        sync.Mutex // held while checking; see LOCKS.md
	checkedAt time.Time  // guarded by mu
	checkErr  error      // guarded by mu
}

// NewEngine returns the engine of a node whose executor is ex and whose
// dispatcher is d.
func NewEngine(ex *workflows.Executor, d *Dispatcher) *Engine {
	return &Engine{Executor: ex, d: d}
}

// Health is the executor's health, "unavailable" (the server answers
// 503) when the shared store or the claim queue does not answer or lost
// a stream: a node that cannot read or write runs is not healthy. The
// check is at most healthTTL old; concurrent callers share one.
func (e *Engine) Health() workflows.Health {
	h := e.Executor.Health()
	if err := e.checkStore(); err != nil {
		h.Status, h.Reason = workflows.HealthUnavailable, "the cluster store does not answer: "+err.Error()
	}
	return h
}

// checkStore checks the store and the claim queue, or returns the last
// check's result while it is fresh.
func (e *Engine) checkStore() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.checkedAt.IsZero() && time.Since(e.checkedAt) < healthTTL {
		return e.checkErr
	}
	ctx, cancel := context.WithTimeout(e.d.ctx, healthTimeout)
	defer cancel()
	var err error
	if c, ok := e.d.cfg.Store.(StoreChecker); ok {
		err = c.Check(ctx)
	}
	if err == nil {
		err = e.d.Check(ctx)
	}
	e.checkedAt, e.checkErr = time.Now(), err
	return err
}

// Subscribe follows the committed events of run id, wherever it is
// driven, plus the live-only notices that say what holds it (stalled,
// waiting). See workflows.Executor.Subscribe for the channel's contract.
func (e *Engine) Subscribe(id string) (<-chan state.Event, func()) {
	return e.subscribe(id, false)
}

// SubscribeTree is Subscribe plus the run's live-only events (operations
// starting). Events of descendant runs are not forwarded between nodes.
func (e *Engine) SubscribeTree(id string) (<-chan state.Event, func()) {
	return e.subscribe(id, true)
}

func (e *Engine) subscribe(id string, tree bool) (<-chan state.Event, func()) {
	out := make(chan state.Event, subBuffer)
	raw := make(chan *nats.Msg, subBuffer)
	sub, err := e.d.nc.ChanSubscribe(eventPrefix+token(id), raw)
	if err != nil {
		// The stream falls back on the store: a closed channel makes
		// it read the store and subscribe again.
		close(out)
		return out, func() {}
	}
	ctx, cancel := context.WithCancel(e.d.ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // owned: the returned function cancels and waits for it
		defer wg.Done()
		defer close(out)
		e.follow(ctx, id, tree, raw, out)
	}()
	var once sync.Once
	return out, func() {
		once.Do(func() {
			_ = sub.Unsubscribe()
			cancel()
			wg.Wait()
		})
	}
}

// follow forwards the run's events from raw to out until the run's final
// event, until the run is seen ended or paused in the store while quiet,
// until out is full, or until ctx ends; the caller then closes out.
func (e *Engine) follow(ctx context.Context, id string, tree bool, raw <-chan *nats.Msg, out chan<- state.Event) {
	poll := time.NewTicker(headPoll)
	defer poll.Stop()
	quiet := true
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-raw:
			quiet = false
			var ev state.Event
			if json.Unmarshal(m.Data, &ev) != nil {
				continue
			}
			if ev.Seq == 0 && !tree && !ev.Notice() {
				continue
			}
			select {
			case out <- ev:
			default:
				return // too slow: the stream reads the store and resubscribes
			}
			if ev.Final() {
				return
			}
		case <-poll.C:
			if !quiet {
				quiet = true
				continue
			}
			h, err := e.d.cfg.Store.Run(ctx, id)
			if err != nil || h.Status != state.StatusRunning {
				// Ended or paused (or unreadable): the stream reads the
				// store, which has every event, and decides.
				return
			}
		}
	}
}
