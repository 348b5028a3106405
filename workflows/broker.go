package workflows

import (
	"sync"

	"github.com/flockrun/flock/state"
)

// subBuffer is the number of events a subscriber may lag before it is
// dropped; tree subscribers, who see a whole tree of runs, get treeBuffer.
const (
	subBuffer  = 256
	treeBuffer = 4096
)

// broker fans out committed events to live subscribers, per run, in Seq
// order. Commits of one run may finish out of order (op results of one step
// share group commits); the broker holds early events until the gap fills.
//
// Tree subscribers of a run also get live-only events (Seq 0): the run's
// operations starting, and every event of its active descendants, tagged
// with the descendant's RunID.
type broker struct {
	// pub, if set, is given every event delivered here (cluster mode).
	pub    EventPublisher
	mu     sync.Mutex
	runs   map[string]*topic // guarded by mu
	parent map[string]string // active run -> its parent; guarded by mu
}

type topic struct {
	subs    map[*subscriber]struct{}
	last    uint64                 // highest Seq delivered in order
	pending map[uint64]state.Event // early events waiting for a gap to fill
	active  bool                   // the run is loaded in the executor
}

type subscriber struct {
	ch     chan state.Event
	tree   bool // also wants live-only events of the run and its descendants
	closed bool
}

func newBroker(pub EventPublisher) *broker {
	return &broker{pub: pub, runs: make(map[string]*topic), parent: make(map[string]string)}
}

func (b *broker) topicLocked(run string) *topic {
	t := b.runs[run]
	if t == nil {
		t = &topic{subs: make(map[*subscriber]struct{})}
		b.runs[run] = t
	}
	return t
}

// seed sets the last delivered Seq for a run being loaded, so that the
// first live event after a resume is delivered, and records its parent.
func (b *broker) seed(run, parent string, last uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.topicLocked(run)
	if last > t.last {
		t.last = last
	}
	t.active = true
	if parent != "" {
		b.parent[run] = parent
	}
}

// subscribe registers a subscriber for run's live events; tree subscribers
// also get live-only events of the run and its descendants.
func (b *broker) subscribe(run string, tree bool) (<-chan state.Event, func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := subBuffer
	if tree {
		n = treeBuffer
	}
	s := &subscriber{ch: make(chan state.Event, n), tree: tree}
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

// publish delivers stored events (with their assigned Seq) in order, and
// forwards each to the tree subscribers of the run's ancestors.
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
		b.deliverLocked(run, t, ev)
		for {
			next, ok := t.pending[t.last+1]
			if !ok {
				break
			}
			delete(t.pending, next.Seq)
			b.deliverLocked(run, t, next)
		}
	}
}

func (b *broker) deliverLocked(run string, t *topic, ev state.Event) {
	t.last = ev.Seq
	if b.pub != nil {
		b.pub.PublishEvent(run, ev)
	}
	for s := range t.subs {
		send(t, s, ev)
	}
	b.forwardLocked(run, ev)
}

// live delivers a live-only event of run to the tree subscribers of run
// and of its ancestors.
func (b *broker) live(run string, ev state.Event) { b.deliverLive(run, ev, false) }

// notice delivers a live-only event of run to every subscriber of run,
// plain and tree, and to the tree subscribers of its ancestors: what holds
// a run (a stall, a rate-limit wait) matters to whoever watches it.
func (b *broker) notice(run string, ev state.Event) { b.deliverLive(run, ev, true) }

// deliverLive publishes a live-only event of run and gives it to run's
// tree subscribers, its plain ones too if plain, and to the tree
// subscribers of its ancestors.
func (b *broker) deliverLive(run string, ev state.Event, plain bool) {
	ev.Seq, ev.RunID = 0, run
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pub != nil {
		b.pub.PublishEvent(run, ev)
	}
	if t := b.runs[run]; t != nil {
		for s := range t.subs {
			if plain || s.tree {
				send(t, s, ev)
			}
		}
	}
	b.forwardLocked(run, ev)
}

// forwardLocked gives ev, as a live-only event of run, to the tree
// subscribers of run's ancestors.
func (b *broker) forwardLocked(run string, ev state.Event) {
	ev.Seq, ev.RunID = 0, run
	seen := map[string]bool{run: true}
	for p := b.parent[run]; p != "" && !seen[p]; p = b.parent[p] {
		seen[p] = true
		t := b.runs[p]
		if t == nil {
			continue
		}
		for s := range t.subs {
			if s.tree {
				send(t, s, ev)
			}
		}
	}
}

// send gives ev to s, dropping s when it is too slow: it then re-reads the
// store and resubscribes.
func send(t *topic, s *subscriber, ev state.Event) {
	select {
	case s.ch <- ev:
	default:
		delete(t.subs, s)
		s.closed = true
		close(s.ch)
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
	delete(b.parent, run)
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
