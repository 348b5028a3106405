package server

import (
	"encoding/json"
	"path"
	"reflect"
	"strings"
	"time"

	"github.com/flockrun/flock/record"
)

// schemas turns Go view types (package api) into JSON Schema (draft
// 2020-12, the dialect of OpenAPI 3.1) by reflection over their fields and
// json tags: named structs become components referenced with $ref, a
// field without omitempty is required, a `doc` tag is its description.
type schemas struct {
	defs map[string]any
	// names are the component names given, by type: a struct named as
	// one of another package (sandbox.Error, api.Error) gets its
	// package's name in front.
	names map[reflect.Type]string
}

var (
	timeType   = reflect.TypeFor[time.Time]()
	rawType    = reflect.TypeFor[json.RawMessage]()
	statusType = reflect.TypeFor[record.Status]()
	eventType  = reflect.TypeFor[record.EventType]()
)

// of returns the schema of t, adding the structs it names to s.defs.
func (s *schemas) of(t reflect.Type) map[string]any {
	switch t {
	case timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case rawType:
		return map[string]any{} // any JSON value
	case statusType:
		return map[string]any{"type": "string", "enum": []string{
			string(record.StatusRunning), string(record.StatusPaused), string(record.StatusSucceeded),
			string(record.StatusFailed), string(record.StatusCancelled)}}
	case eventType:
		return map[string]any{"type": "string", "enum": []string{
			string(record.EventRun), string(record.EventPhase), string(record.EventOp)}}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return s.of(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": s.of(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": s.of(t.Elem())}
	case reflect.Struct:
		return s.ref(t)
	}
	// Interfaces, channels, funcs: not part of any view type.
	return map[string]any{}
}

// ref adds the struct t to s.defs once and returns a reference to it.
func (s *schemas) ref(t reflect.Type) map[string]any {
	name, seen := s.names[t]
	if !seen {
		name = t.Name()
		if _, taken := s.defs[name]; taken {
			name = path.Base(t.PkgPath()) + "." + name
		}
		if s.names == nil {
			s.names = map[reflect.Type]string{}
		}
		s.names[t] = name
	}
	ref := map[string]any{"$ref": "#/components/schemas/" + name}
	if seen {
		return ref
	}
	obj := map[string]any{"type": "object"}
	s.defs[name] = obj // before the fields, for recursive types
	props := map[string]any{}
	required := []string{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		p := s.of(f.Type)
		if d := f.Tag.Get("doc"); d != "" {
			if _, isRef := p["$ref"]; isRef {
				// A sibling of $ref is allowed in 2020-12; keep the ref.
				p = map[string]any{"$ref": p["$ref"], "description": d}
			} else {
				p["description"] = d
			}
		}
		omit := hasOpt(opts, "omitempty") || hasOpt(opts, "omitzero")
		if f.Type.Kind() == reflect.Pointer && !omit {
			p = nullable(p) // a nil pointer is null
		}
		props[name] = p
		if !omit {
			required = append(required, name)
		}
	}
	obj["properties"] = props
	if len(required) > 0 {
		obj["required"] = required
	}
	return ref
}

// nullable returns p that also allows null: a type list with "null", or
// anyOf a reference and null.
func nullable(p map[string]any) map[string]any {
	if t, ok := p["type"].(string); ok {
		p["type"] = []any{t, "null"}
		return p
	}
	if ref, ok := p["$ref"]; ok {
		q := map[string]any{"anyOf": []any{map[string]any{"$ref": ref}, map[string]any{"type": "null"}}}
		if d, ok := p["description"]; ok {
			q["description"] = d
		}
		return q
	}
	return p // any JSON already
}

func hasOpt(opts, want string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}
