package workflows

import (
	"sync"

	"github.com/flockrun/flock/state"
)

// subBuffer is the number of events a subscriber may lag before it is dropped.
const subBuffer = 256

// broker fans out committed events to live subscribers, per run, in Seq
// order. Commits of one run may finish out of order (op results of one step
// share group commits); the broker holds early events until the gap fills.
type broker struct {
	mu   sync.Mutex
	runs map[string]*topic // guarded by mu
}

type topic struct {
	subs    map[*subscriber]struct{}
	last    uint64                 // highest Seq delivered in order
	pending map[uint64]state.Event // early events waiting for a gap to fill
	active  bool                   // the run is loaded in the executor
}

type subscriber struct {
	ch     chan state.Event
	closed bool
}

func newBroker() *broker { return &broker{runs: make(map[string]*topic)} }

func (b *broker) topicLocked(run string) *topic {
	t := b.runs[run]
	if t == nil {
		t = &topic{subs: make(map[*subscriber]struct{})}
		b.runs[run] = t
	}
	return t
}

// seed sets the last delivered Seq for a run being loaded, so that the
// first live event after a resume is delivered.
func (b *broker) seed(run string, last uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.topicLocked(run)
	if last > t.last {
		t.last = last
	}
	t.active = true
}

// subscribe registers a subscriber for run's live events.
func (b *broker) subscribe(run string) (<-chan state.Event, func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := &subscriber{ch: make(chan state.Event, subBuffer)}
	t := b.topicLocked(run)
	t.subs[s] = struct{}{}
	return s.ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if tt := b.runs[run]; tt != nil {
			delete(tt.subs, s)
			if len(tt.subs) == 0 && !tt.active {
				delete(b.runs, run)
			}
		}
		if !s.closed {
			s.closed = true
			close(s.ch)
		}
	}
}

// publish delivers events (with their assigned Seq) in order.
func (b *broker) publish(run string, events []state.Event) {
	if len(events) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.topicLocked(run)
	for _, ev := range events {
		if ev.Seq <= t.last {
			continue
		}
		if ev.Seq != t.last+1 {
			if t.pending == nil {
				t.pending = make(map[uint64]state.Event)
			}
			t.pending[ev.Seq] = ev
			continue
		}
		t.deliverLocked(ev)
		for {
			next, ok := t.pending[t.last+1]
			if !ok {
				break
			}
			delete(t.pending, next.Seq)
			t.deliverLocked(next)
		}
	}
}

func (t *topic) deliverLocked(ev state.Event) {
	t.last = ev.Seq
	for s := range t.subs {
		select {
		case s.ch <- ev:
		default:
			// Too slow: drop it; it re-reads the store and resubscribes.
			delete(t.subs, s)
			s.closed = true
			close(s.ch)
		}
	}
}

// end closes every subscriber of run after its final event and drops the
// topic. A later subscriber gets a channel that never receives: it learns
// from the store that the run has ended.
func (b *broker) end(run string) {
	b.forget(run)
}

// forget drops a run's topic (run unloaded without ending, e.g. on Stop).
func (b *broker) forget(run string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.runs[run]
	if t == nil {
		return
	}
	for s := range t.subs {
		if !s.closed {
			s.closed = true
			close(s.ch)
		}
	}
	delete(b.runs, run)
}
