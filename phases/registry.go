package phases

import (
	"fmt"
	"sort"
	"sync"
)

// APIVersion is the version of this package's API that Go plugins are built
// against. A plugin exports a variable of the same value; the host refuses a
// plugin whose value differs. Bump it on any change to Phase, Input, Output,
// State, Workflow or Registry.
const APIVersion = "flock.phases/v1"

// Registry holds workflows by name. It is safe for concurrent use.
type Registry struct {
	mu        sync.RWMutex
	workflows map[string]*Workflow // guarded by mu
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{workflows: make(map[string]*Workflow)}
}

// Default is the registry built-in packages register into from init.
var Default = NewRegistry()

// Register validates w and adds it. A duplicate name or an invalid graph is
// an error.
func (r *Registry) Register(w Workflow) error {
	if err := w.Validate(); err != nil {
		return err
	}
	if w.Source == "" {
		w.Source = "builtin"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.workflows[w.Name]; ok {
		return fmt.Errorf("%w: %q (from %s, again from %s)", ErrDuplicate, w.Name, old.Source, w.Source)
	}
	r.workflows[w.Name] = &w
	return nil
}

// MustRegister is Register that panics; for use from init.
func (r *Registry) MustRegister(w Workflow) {
	if err := r.Register(w); err != nil {
		panic(err)
	}
}

// Register adds w to the Default registry and panics on error. Call it from init.
func Register(w Workflow) { Default.MustRegister(w) }

// Lookup returns the named workflow.
func (r *Registry) Lookup(name string) (*Workflow, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	w, ok := r.workflows[name]
	return w, ok
}

// List returns all workflows sorted by name.
func (r *Registry) List() []*Workflow {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Workflow, 0, len(r.workflows))
	for _, w := range r.workflows {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Clone returns a registry holding the same workflows; servers clone Default
// so that plugins and workflow files loaded at start-up stay local to them.
func (r *Registry) Clone() *Registry {
	c := NewRegistry()
	for _, w := range r.List() {
		c.workflows[w.Name] = w
	}
	return c
}
