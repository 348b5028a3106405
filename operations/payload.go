package operations

import (
	"fmt"
	"reflect"
	"sync"
)

// Request and Result hold one pointer field per built-in kind, named after
// the kind in CamelCase (bash -> Bash, score_log -> ScoreLog). payloadOf
// finds that field by reflection, once per type, so that the kind-to-field
// mapping is written down exactly once: in the field list itself. The
// payload of a kind registered with RegisterKind is in the Ext field.

var fieldIndex sync.Map // reflect.Type -> map[Kind]int

func fieldsOf(t reflect.Type) map[Kind]int {
	if m, ok := fieldIndex.Load(t); ok {
		return m.(map[Kind]int)
	}
	m := make(map[Kind]int, len(builtinKinds))
	for _, k := range builtinKinds {
		f, ok := t.FieldByName(camel(string(k)))
		if !ok || f.Type.Kind() != reflect.Pointer {
			panic(fmt.Sprintf("operations: %s has no pointer field for kind %q", t, k))
		}
		m[k] = f.Index[0]
	}
	fieldIndex.Store(t, m)
	return m
}

// payloadOf returns the payload field of *v (a *Request or *Result) for
// kind, first setting it to a new zero value when alloc is true.
func payloadOf(v any, kind Kind, alloc bool) (any, error) {
	rv := reflect.ValueOf(v).Elem()
	if i, ok := fieldsOf(rv.Type())[kind]; ok {
		f := rv.Field(i)
		if alloc {
			f.Set(reflect.New(f.Type().Elem()))
		}
		return f.Interface(), nil
	}
	info, ok := LookupKind(kind)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownKind, kind)
	}
	f := rv.FieldByName("Ext")
	if alloc {
		newPayload := info.NewResult
		if _, isReq := v.(*Request); isReq {
			newPayload = info.NewParams
		}
		f.Set(reflect.ValueOf(newPayload()))
	}
	return f.Interface(), nil
}

// camel turns a wire name into its field name: score_log -> ScoreLog.
func camel(s string) string {
	out := make([]byte, 0, len(s))
	up := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' {
			up = true
			continue
		}
		if up && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		up = false
		out = append(out, c)
	}
	return string(out)
}
