package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
const healthTimeout = time.Second

// electionGrace is how long a store that does not answer (state.
// ErrUnavailable: streams electing new leaders after a server died) only
// degrades a node's health; past it the node is unavailable. NATS elects
// within about 10 s.
const electionGrace = 30 * time.Second

// liveTimeout bounds the question to the driving node of what holds a
// run (Live), so that a read of the run stays quick when that node is
// gone.
const liveTimeout = 300 * time.Millisecond

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
	d     *Dispatcher
	reads state.Reader // the store's failover reads, if it has them

	mu         sync.Mutex // held while checking; see LOCKS.md
	checkedAt  time.Time  // guarded by mu
	checkErr   error      // guarded by mu
	answeredAt time.Time  // when a check last passed; guarded by mu
}

// NewEngine returns the engine of a node whose executor is ex and whose
// dispatcher is d.
func NewEngine(ex *workflows.Executor, d *Dispatcher) *Engine {
	e := &Engine{Executor: ex, d: d, reads: d.cfg.Store, answeredAt: time.Now()}
	if fr, ok := d.cfg.Store.(FailoverReader); ok {
		e.reads = fr.FailoverReads()
	}
	return e
}

// Health is the executor's health (degraded while runs' commits are
// retried) plus a check of the shared store and the claim queue, at most
// healthTTL old (concurrent callers share one):
//
//   - a stream lost (deleted), or a store that has not answered for
//     electionGrace: "unavailable", and the server answers 503: a node
//     that cannot read or write runs is not healthy;
//   - a store that does not answer for less than that (state.
//     ErrUnavailable: the cluster electing new leaders after a server
//     died): "degraded", naming it. The node stays in service: it reads
//     runs from replicas, its runs keep their finished results and retry
//     their commits, and starts wait for the store.
func (e *Engine) Health() workflows.Health {
	h := e.Executor.Health()
	err, since := e.checkStore()
	switch {
	case err == nil:
	case errors.Is(err, state.ErrUnavailable) && since < electionGrace:
		h.Status = "degraded"
		h.Reason = fmt.Sprintf("the cluster store has not answered for %s (electing new leaders?); runs wait for it: %v",
			since.Round(100*time.Millisecond), err)
	default:
		h.Status, h.Reason = workflows.HealthUnavailable, "the cluster store does not answer: "+err.Error()
	}
	return h
}

// checkStore checks the store and the claim queue, or returns the last
// check's result while it is fresh, with how long ago a check last
// passed.
func (e *Engine) checkStore() (error, time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.checkedAt.IsZero() && time.Since(e.checkedAt) < healthTTL {
		return e.checkErr, time.Since(e.answeredAt)
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
	if err == nil {
		e.answeredAt = e.checkedAt
	}
	return err, time.Since(e.answeredAt)
}

// Questions lists the questions run id waits on a person for, reading
// the run with the failover reads (workflows.Executor.QuestionsIn).
func (e *Engine) Questions(ctx context.Context, id string) ([]workflows.Question, error) {
	return e.Executor.QuestionsIn(ctx, e.reads, id)
}

// Live says what holds run id: from this node's executor if it drives
// the run, else from the node that does (asked over NATS, for at most
// liveTimeout; nothing is known if it does not answer).
func (e *Engine) Live(id string) workflows.Live {
	if l := e.Executor.Live(id); !l.Empty() || e.Executor.Drives(id) {
		return l
	}
	ctx, cancel := context.WithTimeout(e.d.ctx, liveTimeout)
	defer cancel()
	return e.d.Live(ctx, id)
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
			h, err := e.reads.Run(ctx, id)
			if err != nil {
				// The store does not answer (a failover): keep
				// following; the driving node goes on publishing.
				continue
			}
			if h.Status != state.StatusRunning {
				// Ended or paused: the stream reads the store, which
				// has every event, and decides.
				return
			}
		}
	}
}
