package phases

import (
	"encoding/json"
	"sync"
)

// Bounds of a Typed's cache of parsed settings: at most typedEntries
// documents holding at most typedBytes bytes together; the oldest go first.
const (
	typedEntries = 256
	typedBytes   = 16 << 20
)

// Typed adapts phases that take their workflow's parsed settings. It parses
// a run's settings document once and hands every later phase call of any
// run with the same document the same parsed value, instead of each phase
// re-parsing the whole document on every call:
//
//	var typed = phases.NewTyped(ParseSettings)
//
//	func Advisor(in phases.Input, s *Settings) (phases.Output, error) { ... }
//
//	Phases: []phases.PhaseSpec{{Name: "advisor", Run: typed.Phase(Advisor)}}
//
// # Determinism
//
// The cache is keyed by the document's bytes (not by run id or by the
// slice's address), so a phase sees exactly what parsing its own input
// would give: same input, same output. Each call gets its own copy of the
// parsed struct; what the struct points to (slices, maps) is shared between
// calls and must not be modified. A document that fails to parse is not
// cached: its error comes back on every call.
//
// The cache is bounded (typedEntries documents, typedBytes bytes) and safe
// for concurrent use.
type Typed[S any] struct {
	parse func(json.RawMessage) (S, error)

	mu    sync.Mutex
	cache map[string]*S // guarded by mu; key: the document's bytes
	order []string      // guarded by mu; the cached keys, oldest first
	bytes int           // guarded by mu; total length of the cached keys
}

// NewTyped returns a Typed that parses settings documents with parse,
// which must be a pure function of the document.
func NewTyped[S any](parse func(json.RawMessage) (S, error)) *Typed[S] {
	return &Typed[S]{parse: parse, cache: make(map[string]*S)}
}

// Phase returns the Phase that calls fn with the run's parsed settings.
// A parse error is returned as the phase's error, as is.
func (t *Typed[S]) Phase(fn func(in Input, s *S) (Output, error)) Phase {
	return func(in Input) (Output, error) {
		s, err := t.Settings(in.Run.Settings)
		if err != nil {
			return Output{}, err
		}
		return fn(in, &s)
	}
}

// Settings returns doc parsed (a copy of the cached value when doc was
// parsed before).
func (t *Typed[S]) Settings(doc json.RawMessage) (S, error) {
	t.mu.Lock()
	p, ok := t.cache[string(doc)]
	t.mu.Unlock()
	if ok {
		return *p, nil
	}
	s, err := t.parse(doc)
	if err != nil {
		return s, err
	}
	t.add(string(doc), s)
	return s, nil
}

// add caches s under key, evicting the oldest documents beyond the bounds.
func (t *Typed[S]) add(key string, s S) {
	if len(key) > typedBytes {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.cache[key]; ok {
		return // another call parsed it meanwhile
	}
	for len(t.order) > 0 && (len(t.order) >= typedEntries || t.bytes+len(key) > typedBytes) {
		old := t.order[0]
		t.order = t.order[1:]
		t.bytes -= len(old)
		delete(t.cache, old)
	}
	t.cache[key] = &s
	t.order = append(t.order, key)
	t.bytes += len(key)
}
