package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/flockrun/flock/internal/editdist"
)

// Keys is the tree of the keys a settings document may hold, derived from
// the json tags of the structs it decodes into. The zero Keys knows no
// key. Keys values are immutable and safe for concurrent use.
type Keys struct{ root *node }

// nodeKind says what a settings value holds.
type nodeKind int

const (
	kindLeaf   nodeKind = iota // a scalar (or a type decoding itself from one)
	kindOpen                   // anything: not checked below
	kindStruct                 // an object with known keys (fields)
	kindMap                    // an object with any keys, each value an elem
	kindSlice                  // a list, each item an elem
)

// node is one level of a Keys tree.
type node struct {
	kind        nodeKind
	fields      map[string]*node // kindStruct
	elem        *node            // kindMap, kindSlice
	flockUnused bool             // a Flock key flock ignores
	renamedTo   string           // the key that replaces this deprecated one
}

var keysCache sync.Map // reflect.Type → *node

// KeysOf returns the keys of the settings type of v: a struct value, a
// pointer to one, or a reflect.Type. Below the top, a json.RawMessage or
// interface field accepts anything, as does a struct that decodes itself
// (json.Unmarshaler) and has no exported field; a map accepts any key
// (each value checked against the map's element type) and a list any
// number of items.
func KeysOf(v any) Keys {
	t, ok := v.(reflect.Type)
	if !ok {
		t = reflect.TypeOf(v)
	}
	if t == nil {
		return Keys{}
	}
	if n, ok := keysCache.Load(t); ok {
		return Keys{n.(*node)}
	}
	n := nodeOf(t, map[reflect.Type]bool{})
	keysCache.Store(t, n)
	return Keys{n}
}

// OpenKeys returns top-level keys that accept anything below them.
func OpenKeys(names ...string) Keys {
	n := &node{kind: kindStruct, fields: make(map[string]*node, len(names))}
	for _, k := range names {
		n.fields[k] = &node{kind: kindOpen}
	}
	return Keys{n}
}

// Merge returns the keys known to k or to o.
func (k Keys) Merge(o Keys) Keys { return Keys{merge(k.root, o.root)} }

// nodeOf derives the keys of type t.
func nodeOf(t reflect.Type, seen map[reflect.Type]bool) *node {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType || t.Kind() == reflect.Interface || seen[t] {
		return &node{kind: kindOpen}
	}
	switch t.Kind() {
	case reflect.Map:
		return &node{kind: kindMap, elem: nodeOf(t.Elem(), seen)}
	case reflect.Slice, reflect.Array:
		return &node{kind: kindSlice, elem: nodeOf(t.Elem(), seen)}
	case reflect.Struct:
	default:
		return &node{kind: kindLeaf}
	}
	seen[t] = true
	defer delete(seen, t)
	si := infoOf(t)
	if len(si.fields) == 0 && decodesItself(t) {
		// A type that decodes itself from its own form, with no keys of
		// its own to check (a size written "WxH" or [W, H]).
		return &node{kind: kindOpen}
	}
	n := &node{kind: kindStruct, fields: make(map[string]*node, len(si.fields))}
	for _, f := range si.fields {
		c := nodeOf(f.typ, seen)
		c.flockUnused = f.flockUnused
		c.renamedTo = f.renamedTo
		n.fields[f.name] = c
	}
	return n
}

// merge returns the union of two key trees; neither is modified.
func merge(a, b *node) *node {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.kind == kindOpen || b.kind == kindOpen:
		return &node{kind: kindOpen}
	case a.kind == kindLeaf:
		return b
	case b.kind == kindLeaf:
		return a
	case a.kind != b.kind:
		return &node{kind: kindOpen}
	}
	n := &node{kind: a.kind, elem: merge(a.elem, b.elem), flockUnused: a.flockUnused && b.flockUnused}
	if a.renamedTo == b.renamedTo {
		n.renamedTo = a.renamedTo
	}
	if a.kind == kindStruct {
		n.fields = make(map[string]*node, len(a.fields)+len(b.fields))
		for k, v := range a.fields {
			n.fields[k] = v
		}
		for k, v := range b.fields {
			n.fields[k] = merge(n.fields[k], v)
		}
	}
	return n
}

// FindingKind says what a Finding is about.
type FindingKind int

const (
	// Unknown is a key no one reads.
	Unknown FindingKind = iota
	// FlockUnused is a Flock key flock accepts and ignores (a field
	// tagged settings:"flock-unused"); nothing below it is checked.
	FlockUnused
	// Renamed is the deprecated name of a key (a field tagged
	// settings:"renamed:NEW"); Suggest is the new key's path.
	Renamed
)

// Finding is a key of a document that Keys.Check has something to say
// about.
type Finding struct {
	Kind FindingKind
	// Key is the key; Parent the path of the object holding it ("" at the
	// top); Path their join ("limits.tokns", "actors[1].modle").
	Key, Parent, Path string
	// Suggest is, for Unknown, the path of the known key nearest to Key
	// when one is near enough to be a likely typo (else ""); for Renamed,
	// the path of the key that replaces it.
	Suggest string
}

// String words an Unknown finding as an error, `unknown key "max_dept"
// (did you mean "max_depth"?)`, and the others as warnings.
func (f Finding) String() string {
	switch f.Kind {
	case FlockUnused:
		return fmt.Sprintf("key %q is a Flock setting that flock does not use", f.Path)
	case Renamed:
		return fmt.Sprintf("key %q is deprecated: use %q (same value)", f.Path, f.Suggest)
	}
	if f.Suggest == "" {
		return fmt.Sprintf("unknown key %q", f.Path)
	}
	return fmt.Sprintf("unknown key %q (did you mean %q?)", f.Path, f.Suggest)
}

// UnknownError returns the Unknown findings as one *Error at the root
// naming each, `unknown key "a"; unknown key "b" (did you mean "c"?)`,
// or nil when there is none.
func UnknownError(findings []Finding) error {
	var msgs []string
	for _, f := range findings {
		if f.Kind == Unknown {
			msgs = append(msgs, f.String())
		}
	}
	if msgs == nil {
		return nil
	}
	return &Error{Reason: strings.Join(msgs, "; "), Err: ErrUnknownKey}
}

// ErrUnknownKey is wrapped by UnknownError's error.
var ErrUnknownKey = errors.New("unknown key")

// Check walks the JSON object doc against k and reports, in key order
// (depth first), the keys k does not know (with the closest known key
// when one is near), the Flock keys flock ignores and the deprecated
// names. It is nil when there is nothing to say or doc is not an object
// (the decode reports that).
func (k Keys) Check(doc []byte) []Finding {
	if k.root == nil || k.root.kind != kindStruct {
		return nil
	}
	var c checker
	c.check(doc, k.root, "")
	return c.out
}

// checker collects findings.
type checker struct{ out []Finding }

// check walks value v, found at path, against n.
func (c *checker) check(v json.RawMessage, n *node, path string) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return
	}
	switch {
	case n.kind == kindStruct && v[0] == '{':
		var obj map[string]json.RawMessage
		if json.Unmarshal(v, &obj) != nil {
			return
		}
		for _, key := range sortedKeys(obj) {
			f, ok := n.fields[key]
			switch {
			case !ok:
				c.unknown(key, path, n)
			case f.flockUnused:
				c.out = append(c.out, Finding{Kind: FlockUnused, Key: key, Parent: path, Path: Join(path, key)})
			default:
				if f.renamedTo != "" {
					c.out = append(c.out, Finding{Kind: Renamed, Key: key, Parent: path, Path: Join(path, key), Suggest: Join(path, f.renamedTo)})
				}
				c.check(obj[key], f, Join(path, key))
			}
		}
	case n.kind == kindMap && v[0] == '{':
		var obj map[string]json.RawMessage
		if json.Unmarshal(v, &obj) != nil {
			return
		}
		for _, key := range sortedKeys(obj) {
			c.check(obj[key], n.elem, Join(path, key))
		}
	case n.kind == kindSlice && v[0] == '[':
		var list []json.RawMessage
		if json.Unmarshal(v, &list) != nil {
			return
		}
		for i, item := range list {
			c.check(item, n.elem, path+"["+strconv.Itoa(i)+"]")
		}
	}
}

// unknown reports key, in the object at parent, which n does not know.
func (c *checker) unknown(key, parent string, n *node) {
	f := Finding{Kind: Unknown, Key: key, Parent: parent, Path: Join(parent, key)}
	if best := closest(key, n.fields); best != "" {
		f.Suggest = Join(parent, best)
	}
	c.out = append(c.out, f)
}

// closest returns the known key nearest to key, or "" when none is near
// enough to be a likely typo: within a third of the key's length (at least
// 2 edits), or one of them a prefix of the other, case ignored. A
// deprecated key that is nearest is answered with the key that replaces
// it; Flock keys flock ignores are never suggested.
func closest(key string, known map[string]*node) string {
	best, bestD := "", 0
	lk := strings.ToLower(key)
	for _, k := range sortedKeys(known) {
		if known[k].flockUnused {
			continue
		}
		d := editdist.Distance([]byte(lk), []byte(strings.ToLower(k)))
		if best == "" || d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	lb := strings.ToLower(best)
	near := bestD <= max(2, len(key)/3) || len(key) >= 3 && (strings.HasPrefix(lb, lk) || strings.HasPrefix(lk, lb))
	switch {
	case !near:
		return ""
	case known[best].renamedTo != "":
		return known[best].renamedTo
	}
	return best
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
