package sandbox

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
)

type nopBackend struct{}

func (nopBackend) Tools() []Tool { return nil }

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Fatalf("%s: no panic", what)
		}
	}()
	f()
}

// regRound makes the registry test's names unique per run, so that
// go test -count N does not register them twice.
var regRound atomic.Int64

func TestRegisterBackend(t *testing.T) {
	newNop := func() Backend { return nopBackend{} }
	suffix := fmt.Sprintf("-%d", regRound.Add(1))
	RegisterBackend(BackendInfo{Name: "zz-regtest-b" + suffix, New: newNop})
	RegisterBackend(BackendInfo{Name: "zz-regtest-a" + suffix, New: newNop})
	mustPanic(t, "empty name", func() { RegisterBackend(BackendInfo{New: newNop}) })
	mustPanic(t, "nil New", func() { RegisterBackend(BackendInfo{Name: "zz-regtest-c" + suffix}) })
	mustPanic(t, "duplicate", func() { RegisterBackend(BackendInfo{Name: "zz-regtest-a" + suffix, New: newNop}) })
	names := Backends()
	if !slices.IsSorted(names) {
		t.Fatalf("Backends not sorted: %v", names)
	}
	if !slices.Contains(names, "zz-regtest-a"+suffix) || !slices.Contains(names, "zz-regtest-b"+suffix) || slices.Contains(names, "zz-regtest-c"+suffix) {
		t.Fatalf("Backends = %v", names)
	}
	if _, ok := LookupBackend("zz-regtest-a" + suffix); !ok {
		t.Fatal("LookupBackend: not found")
	}
}

func TestCallParams(t *testing.T) {
	c := &Call{Params: map[string]any{
		"s": "x", "n": float64(3), "f": 1.5, "b": true, "one": "a", "many": []any{"a", "b"}, "bad": []any{1}, "null": nil,
	}}
	code := func(err error) int {
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("error %v is not *Error", err)
		}
		return e.Code
	}
	if s, err := c.String("s"); err != nil || s != "x" {
		t.Fatalf("String = %q, %v", s, err)
	}
	if _, err := c.String("absent"); code(err) != CodeMissingRequiredField {
		t.Fatalf("String(absent) code %d", code(err))
	}
	if _, err := c.String("null"); code(err) != CodeMissingRequiredField {
		t.Fatal("String(null) not 4003")
	}
	if _, err := c.String("n"); code(err) != CodeInvalidParameterType {
		t.Fatal("String(number) not 4004")
	}
	if n, err := c.Int("n"); err != nil || n != 3 {
		t.Fatalf("Int = %d, %v", n, err)
	}
	if _, err := c.Int("f"); code(err) != CodeInvalidParameterType {
		t.Fatal("Int(1.5) not 4004")
	}
	if f, err := c.Float("f"); err != nil || f != 1.5 {
		t.Fatalf("Float = %v, %v", f, err)
	}
	if b, err := c.Bool("b"); err != nil || !b {
		t.Fatalf("Bool = %v, %v", b, err)
	}
	if v, err := c.Strings("one"); err != nil || !slices.Equal(v, []string{"a"}) {
		t.Fatalf("Strings(one) = %v, %v", v, err)
	}
	if v, err := c.Strings("many"); err != nil || !slices.Equal(v, []string{"a", "b"}) {
		t.Fatalf("Strings(many) = %v, %v", v, err)
	}
	if _, err := c.Strings("bad"); code(err) != CodeInvalidParameterType {
		t.Fatal("Strings([1]) not 4004")
	}
	if HTTPStatus(0) != 200 || HTTPStatus(4003) != 400 || HTTPStatus(5006) != 500 {
		t.Fatal("HTTPStatus")
	}
}
