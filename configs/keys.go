package configs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/flockrun/flock/internal/editdist"
)

// FlockKeys are the top-level keys of Flock's settings.json (triframe's and
// modular's settings). A run whose workflow does not read one of them is
// told so by name instead of being told the key is unknown.
var FlockKeys = []string{
	"actors", "advisors", "enable_advising", "enable_subagents", "enable_tool_use",
	"enable_xml", "generator", "intermediate_scoring", "limit_type", "raters",
	"require_function_call", "workflow_type",
}

// TagFlockUnused is the struct tag that marks a settings field as a Flock
// key flock accepts and ignores: `settings:"flock-unused"`. SettingsWarnings
// lists such keys when a document sets them.
const TagFlockUnused = "flock-unused"

// tagRenamed prefixes the struct tag that marks a settings field as the
// deprecated name of another key: `settings:"renamed:isolation"`.
// SettingsWarnings tells a document that sets it to use the new name, and
// suggests the new name for typos near the old one.
const tagRenamed = "renamed:"

// SettingsWarnings reports the keys of a run's settings document that no
// one reads: unknown keys (with the closest known key when one is near, so
// typos such as "limts" point at "limits"), nested ones included, and Flock
// keys that flock accepts but does not use. Warnings never reject a run.
//
// The known keys are those of RunSettings merged with the workflow's
// declared keys (phases.Workflow.Settings):
//   - a struct value (or a pointer to one): the json tags of its fields,
//     nested structs, maps and slices included, found by reflection;
//     json.RawMessage and interface fields accept anything below them;
//   - a []string: top-level keys, each accepting anything below it;
//   - nil: the workflow declared nothing (plugins that predate the field),
//     so top-level keys other than the common ones are not reported; keys
//     inside the common sections (limits, models.X, python ...) still are.
//
// workflow names the workflow in messages. The result is sorted by key and
// is nil when there is nothing to say or the document is not an object.
func SettingsWarnings(doc json.RawMessage, workflow string, declared any) []string {
	var top map[string]json.RawMessage
	if json.Unmarshal(doc, &top) != nil || top == nil {
		return nil
	}
	root := keysOf(reflect.TypeOf(RunSettings{}))
	open := declared == nil
	switch d := declared.(type) {
	case nil:
	case []string:
		n := &keyNode{kind: kindStruct, fields: map[string]*keyNode{}}
		for _, k := range d {
			n.fields[k] = &keyNode{kind: kindOpen}
		}
		root = merge(root, n)
	default:
		root = merge(root, keysOf(reflect.TypeOf(declared)))
	}
	c := checker{workflow: workflow}
	names := sortedKeys(top)
	for _, k := range names {
		n, ok := root.fields[k]
		switch {
		case ok:
			c.check(top[k], n, k)
		case open:
		case contains(FlockKeys, k):
			c.warn("settings key %q is a Flock setting that flock does not use in workflow %q", k, workflow)
		default:
			c.unknown(k, k, root)
		}
	}
	return c.out
}

// keyKind says what a settings value holds.
type keyKind int

const (
	kindLeaf   keyKind = iota // a scalar (or a type decoding itself from one)
	kindOpen                  // anything: not checked below
	kindStruct                // an object with known keys (fields)
	kindMap                   // an object with any keys, each value an elem
	kindSlice                 // a list, each item an elem
)

// keyNode is one level of the tree of known settings keys.
type keyNode struct {
	kind        keyKind
	fields      map[string]*keyNode // kindStruct
	elem        *keyNode            // kindMap, kindSlice
	flockUnused bool                // a Flock key flock ignores
	renamedTo   string              // the key that replaces this deprecated one
}

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

// keysOf derives the known keys of a settings type from its json tags.
func keysOf(t reflect.Type) *keyNode {
	return keysOfSeen(t, map[reflect.Type]bool{})
}

func keysOfSeen(t reflect.Type, seen map[reflect.Type]bool) *keyNode {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType || t.Kind() == reflect.Interface || seen[t] {
		return &keyNode{kind: kindOpen}
	}
	switch t.Kind() {
	case reflect.Map:
		return &keyNode{kind: kindMap, elem: keysOfSeen(t.Elem(), seen)}
	case reflect.Slice, reflect.Array:
		return &keyNode{kind: kindSlice, elem: keysOfSeen(t.Elem(), seen)}
	case reflect.Struct:
	default:
		return &keyNode{kind: kindLeaf}
	}
	seen[t] = true
	defer delete(seen, t)
	n := &keyNode{kind: kindStruct, fields: map[string]*keyNode{}}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" && tag == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				n = merge(n, keysOfSeen(ft, seen))
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		c := keysOfSeen(f.Type, seen)
		c.flockUnused = f.Tag.Get("settings") == TagFlockUnused
		c.renamedTo, _ = strings.CutPrefix(f.Tag.Get("settings"), tagRenamed)
		n.fields[name] = merge(n.fields[name], c)
	}
	return n
}

// merge returns the union of two key trees.
func merge(a, b *keyNode) *keyNode {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.kind == kindOpen || b.kind == kindOpen:
		return &keyNode{kind: kindOpen}
	case a.kind == kindLeaf:
		return b
	case b.kind == kindLeaf:
		return a
	case a.kind != b.kind:
		return &keyNode{kind: kindOpen}
	}
	n := &keyNode{kind: a.kind, elem: merge(a.elem, b.elem), flockUnused: a.flockUnused && b.flockUnused}
	if a.renamedTo == b.renamedTo {
		n.renamedTo = a.renamedTo
	}
	if a.kind == kindStruct {
		n.fields = make(map[string]*keyNode, len(a.fields)+len(b.fields))
		for k, v := range a.fields {
			n.fields[k] = v
		}
		for k, v := range b.fields {
			n.fields[k] = merge(n.fields[k], v)
		}
	}
	return n
}

// checker collects warnings.
type checker struct {
	workflow string
	out      []string
}

func (c *checker) warn(format string, args ...any) {
	c.out = append(c.out, fmt.Sprintf(format, args...))
}

// check walks value v, found at path, against n.
func (c *checker) check(v json.RawMessage, n *keyNode, path string) {
	if n.flockUnused {
		c.warn("settings key %q is a Flock setting that flock does not use", path)
		return
	}
	if n.renamedTo != "" {
		c.warn("settings key %q is deprecated: use %q (same value)", path, path[:strings.LastIndex(path, ".")+1]+n.renamedTo)
	}
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
		for _, k := range sortedKeys(obj) {
			p := path + "." + k
			if f, ok := n.fields[k]; ok {
				c.check(obj[k], f, p)
			} else {
				c.unknown(k, p, n)
			}
		}
	case n.kind == kindMap && v[0] == '{':
		var obj map[string]json.RawMessage
		if json.Unmarshal(v, &obj) != nil {
			return
		}
		for _, k := range sortedKeys(obj) {
			c.check(obj[k], n.elem, path+"."+k)
		}
	case n.kind == kindSlice && v[0] == '[':
		var list []json.RawMessage
		if json.Unmarshal(v, &list) != nil {
			return
		}
		for i, item := range list {
			c.check(item, n.elem, fmt.Sprintf("%s[%d]", path, i))
		}
	}
}

// unknown reports key, at path, which parent does not know.
func (c *checker) unknown(key, path string, parent *keyNode) {
	best := closest(key, parent.fields)
	if best == "" {
		c.warn("unknown settings key %q", path)
		return
	}
	c.warn("unknown settings key %q (did you mean %q?)", path, strings.TrimSuffix(path, key)+best)
}

// closest returns the known key nearest to key, or "" when none is near
// enough to be a likely typo: within a third of the key's length (at least
// 2 edits), or one of them a prefix of the other. A deprecated key that is
// nearest is answered with the key that replaces it.
func closest(key string, known map[string]*keyNode) string {
	best, bestD := "", 0
	for _, k := range sortedKeys(known) {
		if known[k].flockUnused {
			continue
		}
		d := editDistance(strings.ToLower(key), strings.ToLower(k))
		if best == "" || d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	near := bestD <= max(2, len(key)/3)
	lk, lb := strings.ToLower(key), strings.ToLower(best)
	near = near || len(key) >= 3 && (strings.HasPrefix(lb, lk) || strings.HasPrefix(lk, lb))
	switch {
	case !near:
		return ""
	case known[best].renamedTo != "":
		return known[best].renamedTo
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int { return editdist.Distance([]byte(a), []byte(b)) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
