package handlers

import (
	"context"
	"errors"
	"sort"
	"testing"

	"github.com/flockrun/flock/operations"
)

func mustPanic(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", name)
		}
	}()
	f()
}

func TestRegisterRefusesBadInfos(t *testing.T) {
	h := HandlerFunc(func(context.Context, Env, operations.Request) operations.Result { return operations.Result{} })
	newH := func() Handler { return h }
	tests := []struct {
		name string
		info Info
	}{
		{name: "empty id", info: Info{Kinds: []operations.Kind{operations.KindSandbox}, New: newH}},
		{name: "no kinds", info: Info{ID: "test.none", New: newH}},
		{name: "no New", info: Info{ID: "test.nonew", Kinds: []operations.Kind{operations.KindSandbox}}},
		{name: "unknown kind", info: Info{ID: "test.unknown", Kinds: []operations.Kind{"teleport"}, New: newH}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { mustPanic(t, tt.name, func() { Register(tt.info) }) })
	}
	// Registered once per test binary: with go test -count N the later
	// runs find it and check the refusals and the lookup only.
	if _, ok := Lookup(operations.KindSandbox); !ok {
		Register(Info{ID: "test.sandbox", Kinds: []operations.Kind{operations.KindSandbox}, New: newH})
	}
	mustPanic(t, "duplicate id", func() {
		Register(Info{ID: "test.sandbox", Kinds: []operations.Kind{operations.KindObservation}, New: newH})
	})
	mustPanic(t, "duplicate kind", func() {
		Register(Info{ID: "test.sandbox2", Kinds: []operations.Kind{operations.KindSandbox}, New: newH})
	})
	got := Registered()
	if !sort.SliceIsSorted(got, func(i, j int) bool { return got[i].ID < got[j].ID }) {
		t.Fatalf("Registered is not sorted: %v", got)
	}
	if info, ok := Lookup(operations.KindSandbox); !ok || info.ID != "test.sandbox" {
		t.Fatalf("Lookup(sandbox) = %v, %v", info, ok)
	}
}

// lifecycle records its calls; fail makes Provision fail.
type lifecycle struct {
	fail                 bool
	provisioned, cleaned int
}

func (l *lifecycle) Handle(context.Context, Env, operations.Request) operations.Result {
	return operations.Result{}
}
func (l *lifecycle) Provision(context.Context, Deps) error {
	l.provisioned++
	if l.fail {
		return errors.New("no such thing")
	}
	return nil
}
func (l *lifecycle) Close() error { l.cleaned++; return nil }

// TestProvisionFailureCleansUpAll checks that a failed Provision cleans up
// every handler, set up or not, and names the package.
func TestProvisionFailureCleansUpAll(t *testing.T) {
	a, b, c := &lifecycle{}, &lifecycle{fail: true}, &lifecycle{}
	set, err := NewSet(
		Info{ID: "t.a", Kinds: []operations.Kind{operations.KindBash}, New: func() Handler { return a }},
		Info{ID: "t.b", Kinds: []operations.Kind{operations.KindPython}, New: func() Handler { return b }},
		Info{ID: "t.c", Kinds: []operations.Kind{operations.KindLog}, New: func() Handler { return c }},
	)
	if err != nil {
		t.Fatal(err)
	}
	err = set.Provision(context.Background(), Deps{})
	if err == nil || err.Error() != "provision t.b: no such thing" {
		t.Fatalf("err = %v", err)
	}
	if a.provisioned != 1 || b.provisioned != 1 || c.provisioned != 0 {
		t.Fatalf("provisioned a=%d b=%d c=%d", a.provisioned, b.provisioned, c.provisioned)
	}
	if a.cleaned != 1 || b.cleaned != 1 || c.cleaned != 1 {
		t.Fatalf("cleaned a=%d b=%d c=%d, want every handler once", a.cleaned, b.cleaned, c.cleaned)
	}
	if _, err := NewSet(Fixed(a, operations.KindBash), Fixed(c, operations.KindBash)); err == nil {
		t.Fatal("a kind served twice was accepted")
	}
}
