package operations

import (
	"fmt"
	"reflect"
	"sort"
	"sync"
)

// Kind names an operation. The values are wire names and never change.
type Kind string

// The wire names of the kinds this package declares (see builtin.go,
// human.go, external.go). A kind declared elsewhere names its own.
const (
	KindBash        Kind = "bash"
	KindPython      Kind = "python"
	KindGenerate    Kind = "generate"
	KindSpawn       Kind = "spawn"
	KindSubmit      Kind = "submit"
	KindScore       Kind = "score"
	KindScoreLog    Kind = "score_log"
	KindGetUsage    Kind = "get_usage"
	KindGetTask     Kind = "get_task"
	KindLog         Kind = "log"
	KindAction      Kind = "action"
	KindObservation Kind = "observation"
	KindSandbox     Kind = "sandbox"
	// KindReadFile and KindWriteFile let pure phases read inputs (datasets,
	// earlier results) and write outputs (result files) through the journal.
	KindReadFile  Kind = "read_file"
	KindWriteFile Kind = "write_file"
)

// View is how workflow files see a kind's results: it flattens a result
// into the fields expressions read as results[i].NAME and says whether the
// operation did its job; Result.View adds kind, error, failure, meta and
// ok. data is the result's payload, nil when it has none (an error
// result): the view must still return every field of the kind, so that the
// set of field names and their types is known when the kind is declared.
type View[R any] func(r Result, data *R) (fields map[string]any, ok bool)

// KindOf is an operation kind declared with Declare: requests of the kind
// carry a *P in Request.Params and results a *R in Result.Data. Its
// methods read and build them typed.
type KindOf[P, R any] struct{ kind Kind }

// Declare declares an operation kind: its wire name, its params type P and
// its result type R (JSON-tagged structs, journaled as the request's
// "params" and the result's "data"), and how workflow files see its
// results (view may be nil: no fields beyond the common ones). A result
// type that implements Effector changes its run (see Effects).
//
// Every kind is declared this way, those of this package included; a
// package that adds a kind (a handler package, a plugin) declares it from
// a package-level variable or init, and registers its handler with package
// handlers. Declare panics, like http.Handle, on an empty or already
// declared kind, on payload types that are not structs, and on a view
// field whose type differs from another kind's field of the same name.
func Declare[P, R any](kind Kind, view View[R]) KindOf[P, R] {
	if kind == "" {
		panic("operations: Declare with an empty kind")
	}
	for _, t := range []reflect.Type{reflect.TypeFor[P](), reflect.TypeFor[R]()} {
		if t.Kind() != reflect.Struct {
			panic(fmt.Sprintf("operations: kind %q: payload type %s is not a struct", kind, t))
		}
	}
	info := KindInfo{Kind: kind,
		NewParams: func() any { return new(P) }, NewResult: func() any { return new(R) },
		params: reflect.TypeFor[*P](), result: reflect.TypeFor[*R]()}
	if view != nil {
		info.View = func(r Result) (map[string]any, bool) {
			d, _ := r.Data.(*R)
			return view(r, d)
		}
	}
	register(info)
	return KindOf[P, R]{kind: kind}
}

// Kind returns k's wire name.
func (k KindOf[P, R]) Kind() Kind { return k.kind }

// New returns a request of kind k with params p.
func (k KindOf[P, R]) New(p P) Request { return Request{Kind: k.kind, Params: &p} }

// Params returns r's params when r is a request of kind k that has them,
// else nil.
func (k KindOf[P, R]) Params(r Request) *P {
	if r.Kind != k.kind {
		return nil
	}
	p, _ := r.Params.(*P)
	return p
}

// Result returns r's data when r is a result of kind k that has it, else
// nil (a failed operation's result may have none).
func (k KindOf[P, R]) Result(r Result) *R {
	if r.Kind != k.kind {
		return nil
	}
	d, _ := r.Data.(*R)
	return d
}

// KindInfo is a declared kind as the registry holds it, untyped: what the
// codec, the executor and the workflow-file compiler need of every kind.
type KindInfo struct {
	Kind Kind
	// NewParams and NewResult return a new zero payload: a *P and a *R of
	// the declaration.
	NewParams func() any
	NewResult func() any
	// View is the declaration's view over any result of the kind, or nil.
	View func(Result) (fields map[string]any, ok bool)

	params, result reflect.Type
}

var kinds = struct {
	sync.RWMutex
	byKind map[Kind]KindInfo
	// fields are the zero values of every declared kind's view fields,
	// by name; two kinds sharing a name share its type.
	fields map[string]any
}{byKind: map[Kind]KindInfo{}, fields: map[string]any{}}

// commonFields are the view fields of every result (see Result.View).
var commonFields = map[string]bool{"kind": true, "error": true, "ok": true, "meta": true}

func register(info KindInfo) {
	kinds.Lock()
	defer kinds.Unlock()
	if _, dup := kinds.byKind[info.Kind]; dup {
		panic(fmt.Sprintf("operations: kind %q declared twice", info.Kind))
	}
	zeros := map[string]any{}
	if info.View != nil {
		fields, _ := info.View(Result{Kind: info.Kind})
		for name, v := range fields {
			var zero any
			if v != nil {
				zero = reflect.Zero(reflect.TypeOf(v)).Interface()
			}
			if prev, ok := kinds.fields[name]; ok && reflect.TypeOf(prev) != reflect.TypeOf(zero) {
				panic(fmt.Sprintf("operations: kind %q: result field %q is a %T, another kind's is a %T", info.Kind, name, zero, prev))
			}
			if !commonFields[name] {
				zeros[name] = zero
			}
		}
	}
	for name, zero := range zeros {
		kinds.fields[name] = zero
	}
	kinds.byKind[info.Kind] = info
}

// LookupKind returns a declared kind's contract.
func LookupKind(k Kind) (KindInfo, bool) {
	kinds.RLock()
	defer kinds.RUnlock()
	info, ok := kinds.byKind[k]
	return info, ok
}

// Kinds lists every declared kind, sorted.
func Kinds() []Kind {
	kinds.RLock()
	defer kinds.RUnlock()
	out := make([]Kind, 0, len(kinds.byKind))
	for k := range kinds.byKind {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Valid reports whether k is a declared kind.
func (k Kind) Valid() bool {
	_, ok := LookupKind(k)
	return ok
}

// payloadInfo returns the contract of kind, for a payload p of it (nil
// when absent): an error wrapping ErrUnknownKind for an undeclared kind,
// ErrPayloadType for a payload that is not the declared type (want is
// the declared type: params or result).
func payloadInfo(kind Kind, p any, params bool) (KindInfo, error) {
	info, ok := LookupKind(kind)
	if !ok {
		return info, fmt.Errorf("%w: %q", ErrUnknownKind, kind)
	}
	if isNilPayload(p) {
		return info, nil
	}
	want, what := info.result, "result"
	if params {
		want, what = info.params, "params"
	}
	if t := reflect.TypeOf(p); t != want {
		return info, fmt.Errorf("%w: %s %s are a %s, want a %s", ErrPayloadType, kind, what, t, want)
	}
	return info, nil
}

// isNilPayload reports whether p holds no payload: nil, or a nil pointer.
func isNilPayload(p any) bool {
	if p == nil {
		return true
	}
	v := reflect.ValueOf(p)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
