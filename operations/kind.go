package operations

import (
	"fmt"
	"reflect"
	"sort"
	"sync"
)

// Kind names an operation. The values are wire names and never change.
type Kind string

// The built-in operation kinds (docs/design.md), built into Request and Result as typed
// fields. Other kinds are registered with RegisterKind.
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

// builtinKinds are the kinds with a typed field in Request and Result.
var builtinKinds = []Kind{KindAction, KindBash, KindGenerate, KindGetTask, KindGetUsage, KindLog,
	KindObservation, KindPython, KindReadFile, KindSandbox, KindScore, KindScoreLog, KindSpawn, KindSubmit,
	KindWriteFile}

// KindInfo is an operation kind's data contract: its wire payloads and how
// workflow files see its results. Built-in kinds are registered by this
// package; a handler package that adds a kind registers it from init.
type KindInfo struct {
	// Kind is the wire name: non-empty, lowercase, unique.
	Kind Kind
	// NewParams and NewResult return a new zero payload, a pointer to a
	// JSON-tagged struct, for a kind without a field in Request and Result:
	// it is carried in Request.Ext and Result.Ext. A result payload may
	// implement Effector. Both are nil for built-in kinds.
	NewParams func() any
	NewResult func() any
	// View flattens a result into the fields a workflow file's expressions
	// read (results[i].NAME) and says whether the operation did its job;
	// Result.View adds kind, error, meta and ok. It must return every field
	// of the kind even for a result without payload (an error result), so
	// that the set of field names and their types is known at
	// registration. Nil: the kind has no fields beyond the common ones.
	View func(Result) (fields map[string]any, ok bool)
}

var kinds = struct {
	sync.RWMutex
	byKind map[Kind]KindInfo
	// fields are the zero values of every registered kind's view fields,
	// by name; two kinds sharing a name share its type.
	fields map[string]any
}{byKind: map[Kind]KindInfo{}, fields: map[string]any{}}

// commonFields are the view fields of every result (see Result.View).
var commonFields = map[string]bool{"kind": true, "error": true, "ok": true, "meta": true}

// RegisterKind adds a kind. It panics, like http.Handle, on an empty or
// already registered kind, on a kind registered outside this package
// without payload constructors, and on a view field whose type differs
// from another kind's field of the same name. Call it from init.
func RegisterKind(info KindInfo) {
	if info.Kind == "" {
		panic("operations: RegisterKind with an empty kind")
	}
	builtin := isBuiltin(info.Kind)
	if !builtin && (info.NewParams == nil || info.NewResult == nil) {
		panic(fmt.Sprintf("operations: kind %q needs NewParams and NewResult", info.Kind))
	}
	kinds.Lock()
	defer kinds.Unlock()
	if _, dup := kinds.byKind[info.Kind]; dup {
		panic(fmt.Sprintf("operations: kind %q registered twice", info.Kind))
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

// LookupKind returns a registered kind's contract.
func LookupKind(k Kind) (KindInfo, bool) {
	kinds.RLock()
	defer kinds.RUnlock()
	info, ok := kinds.byKind[k]
	return info, ok
}

// Kinds lists every registered kind, sorted.
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

// Valid reports whether k is a registered kind.
func (k Kind) Valid() bool {
	_, ok := LookupKind(k)
	return ok
}

func isBuiltin(k Kind) bool {
	for _, b := range builtinKinds {
		if b == k {
			return true
		}
	}
	return false
}
