package phases

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func nop(Input) (Output, error) { return Output{}, nil }

func TestWorkflowValidate(t *testing.T) {
	tests := []struct {
		name string
		wf   Workflow
		err  string
	}{
		{name: "ok", wf: Workflow{Name: "w", Start: "a", Phases: []PhaseSpec{{Name: "a", Run: nop, Next: []string{"b"}}, {Name: "b", Run: nop, Next: []string{"a"}}}}},
		{name: "empty name", wf: Workflow{Start: "a", Phases: []PhaseSpec{{Name: "a", Run: nop}}}, err: "empty name"},
		{name: "bad name", wf: Workflow{Name: "a b", Start: "a", Phases: []PhaseSpec{{Name: "a", Run: nop}}}, err: "contains a space"},
		{name: "no phases", wf: Workflow{Name: "w", Start: "a"}, err: "no phases"},
		{name: "duplicate phase", wf: Workflow{Name: "w", Start: "a", Phases: []PhaseSpec{{Name: "a", Run: nop}, {Name: "a", Run: nop}}}, err: `duplicate phase "a"`},
		{name: "nil func", wf: Workflow{Name: "w", Start: "a", Phases: []PhaseSpec{{Name: "a"}}}, err: "has no function"},
		{name: "unknown start", wf: Workflow{Name: "w", Start: "z", Phases: []PhaseSpec{{Name: "a", Run: nop}}}, err: `start phase "z"`},
		{name: "unknown target", wf: Workflow{Name: "w", Start: "a", Phases: []PhaseSpec{{Name: "a", Run: nop, Next: []string{"b"}}}}, err: `undeclared phase "b"`},
		{name: "unreachable", wf: Workflow{Name: "w", Start: "a", Phases: []PhaseSpec{{Name: "a", Run: nop}, {Name: "b", Run: nop}}}, err: `"b" is unreachable`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.wf.Validate()
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrBadWorkflow) || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want ErrBadWorkflow containing %q", err, tt.err)
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	w := Workflow{Name: "b", Start: "p", Phases: []PhaseSpec{{Name: "p", Run: nop, Next: []string{"q", "p"}}, {Name: "q", Run: nop}}}
	r.MustRegister(w)
	r.MustRegister(Workflow{Name: "a", Start: "p", Phases: []PhaseSpec{{Name: "p", Run: nop}}, Source: "file:a.yaml"})
	if err := r.Register(w); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate: %v", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("MustRegister of a duplicate did not panic")
			}
		}()
		r.MustRegister(w)
	}()
	var names []string
	for _, x := range r.List() {
		names = append(names, x.Name)
	}
	if !reflect.DeepEqual(names, []string{"a", "b"}) {
		t.Fatalf("List = %v", names)
	}
	got, ok := r.Lookup("b")
	if !ok || got.Source != "builtin" {
		t.Fatalf("Lookup = %+v %v", got, ok)
	}
	g := got.Graph()
	if !reflect.DeepEqual(g.Transitions["p"], []string{"p", "q"}) || g.Start != "p" {
		t.Fatalf("Graph = %+v", g)
	}
	if !got.Allows("p", "q") || got.Allows("q", "p") || !got.Allows("q", "") {
		t.Fatal("Allows is wrong")
	}
	c := r.Clone()
	c.MustRegister(Workflow{Name: "c", Start: "p", Phases: []PhaseSpec{{Name: "p", Run: nop}}})
	if _, ok := r.Lookup("c"); ok {
		t.Fatal("Clone shares its map with the original")
	}
}
