package phases

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// Workflow is a declared graph of phases.
type Workflow struct {
	// Name is the registry key, e.g. "triframe" or "example.echo".
	Name        string
	Description string
	// Start is the first phase called.
	Start  string
	Phases []PhaseSpec
	// CheckSettings, if set, validates a run's settings before the run is
	// created; its error is shown to the user as is.
	CheckSettings func(settings json.RawMessage) error
	// Settings declares the workflow's own settings keys, so that a run
	// whose settings hold an unknown key (a typo such as "limts") is
	// warned at start. It is either a value of the struct the workflow
	// decodes its settings into (e.g. Settings{}), whose json tags name the
	// keys, nested ones included, so the list cannot drift from the code;
	// or a []string of top-level keys whose contents are not checked. The
	// common keys (limits, models, python, bash, isolation, scoring,
	// workflow_type) are always known. Nil declares nothing: only the
	// common sections are checked and other top-level keys pass unremarked
	// (plugins built before this field). A field tagged
	// `settings:"flock-unused"` is a Flock key accepted and ignored.
	Settings any
	// SharesLimits says the workflow spends its run's usage limits
	// (tokens, actions, cost) through child runs to which it hands shares
	// of them (a synthesis splits its budget over its lanes). The engine
	// then does not end the run itself when its usage, which adds each
	// child's as the child ends, reaches one of those limits: the
	// workflow keeps within them and finishes its own way (its summary
	// written). The same goes for the time limit: the workflow hands its
	// children what is left of it.
	SharesLimits bool
	// Source says where the workflow came from: "builtin", "plugin:FILE" or
	// "file:FILE". Registries fill in "builtin" when it is empty.
	Source string
}

// PhaseSpec declares one phase and where it may go next.
type PhaseSpec struct {
	Name string
	Run  Phase
	// Next lists the phases this one may hand over to. Returning "" (end of
	// run) is always allowed.
	Next []string
}

// Phase returns the spec of the named phase.
func (w *Workflow) Phase(name string) (*PhaseSpec, bool) {
	for i := range w.Phases {
		if w.Phases[i].Name == name {
			return &w.Phases[i], true
		}
	}
	return nil, false
}

// Allows reports whether phase from may hand over to next.
func (w *Workflow) Allows(from, next string) bool {
	if next == "" {
		return true
	}
	p, ok := w.Phase(from)
	if !ok {
		return false
	}
	for _, n := range p.Next {
		if n == next {
			return true
		}
	}
	return false
}

// Validate checks the declaration: names, unique phases, known targets,
// every phase reachable from Start.
func (w *Workflow) Validate() error {
	if w.Name == "" {
		return fmt.Errorf("%w: empty name", ErrBadWorkflow)
	}
	if strings.ContainsAny(w.Name, " \t\n/") {
		return fmt.Errorf("%w: name %q contains a space or slash", ErrBadWorkflow, w.Name)
	}
	if len(w.Phases) == 0 {
		return fmt.Errorf("%w %q: no phases", ErrBadWorkflow, w.Name)
	}
	seen := make(map[string]bool, len(w.Phases))
	for _, p := range w.Phases {
		if p.Name == "" {
			return fmt.Errorf("%w %q: a phase has an empty name", ErrBadWorkflow, w.Name)
		}
		if seen[p.Name] {
			return fmt.Errorf("%w %q: duplicate phase %q", ErrBadWorkflow, w.Name, p.Name)
		}
		if p.Run == nil {
			return fmt.Errorf("%w %q: phase %q has no function", ErrBadWorkflow, w.Name, p.Name)
		}
		seen[p.Name] = true
	}
	if !seen[w.Start] {
		return fmt.Errorf("%w %q: start phase %q is not declared", ErrBadWorkflow, w.Name, w.Start)
	}
	for _, p := range w.Phases {
		for _, n := range p.Next {
			if !seen[n] {
				return fmt.Errorf("%w %q: phase %q goes to undeclared phase %q", ErrBadWorkflow, w.Name, p.Name, n)
			}
		}
	}
	reached := w.Reachable()
	for _, p := range w.Phases {
		if !reached[p.Name] {
			return fmt.Errorf("%w %q: phase %q is unreachable from %q", ErrBadWorkflow, w.Name, p.Name, w.Start)
		}
	}
	return nil
}

// Reachable returns the phases reachable from Start by the phases' Next,
// Start included.
func (w Workflow) Reachable() map[string]bool {
	reached := map[string]bool{w.Start: true}
	queue := []string{w.Start}
	for len(queue) > 0 {
		p, _ := w.Phase(queue[0])
		queue = queue[1:]
		for _, n := range p.Next {
			if !reached[n] {
				reached[n] = true
				queue = append(queue, n)
			}
		}
	}
	return reached
}

// Graph is the JSON shape of a workflow for listings.
type Graph struct {
	Name        string              `json:"name"`
	Description string              `json:"description,omitempty"`
	Source      string              `json:"source"`
	Start       string              `json:"start"`
	Phases      []string            `json:"phases"`
	Transitions map[string][]string `json:"transitions"`
	// Settings are the workflow's own top-level settings keys (Workflow.Settings), sorted; nil when it declares none.
	Settings []string `json:"settings,omitempty"`
}

// Graph returns the workflow's graph description.
func (w *Workflow) Graph() Graph {
	g := Graph{Name: w.Name, Description: w.Description, Source: w.Source, Start: w.Start,
		Transitions: make(map[string][]string, len(w.Phases))}
	for _, p := range w.Phases {
		g.Phases = append(g.Phases, p.Name)
		next := append([]string{}, p.Next...)
		sort.Strings(next)
		g.Transitions[p.Name] = next
	}
	g.Settings = SettingsKeys(w.Settings)
	return g
}

// SettingsKeys returns the top-level keys a Workflow.Settings value
// declares, sorted: a []string as it is; a struct (or a pointer to one)
// by the json tags of its fields, embedded structs' included. Nil for
// anything else.
func SettingsKeys(declared any) []string {
	var keys []string
	switch d := declared.(type) {
	case nil:
		return nil
	case []string:
		keys = slices.Clone(d)
	default:
		t := reflect.TypeOf(declared)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return nil
		}
		keys = structKeys(t, nil)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// structKeys appends the json names of t's fields to keys.
func structKeys(t reflect.Type, keys []string) []string {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if tag == "-" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			keys = structKeys(ft, keys)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		keys = append(keys, name)
	}
	return keys
}
