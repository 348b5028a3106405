package settings

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// Struct tags read besides json (see the package doc).
const (
	tagDefault  = "default"
	tagMin      = "min"
	tagMax      = "max"
	tagEnum     = "enum"
	tagSettings = "settings"
	// TagFlockUnused is the settings tag of a field that is a Flock key
	// flock accepts and ignores: `settings:"flock-unused"`.
	TagFlockUnused = "flock-unused"
	// tagRenamed prefixes the settings tag of a field that is the
	// deprecated name of another key: `settings:"renamed:isolation"`.
	tagRenamed = "renamed:"
)

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	normalizerType  = reflect.TypeFor[Normalizer]()
	validatorType   = reflect.TypeFor[Validator]()
	boundedType     = reflect.TypeFor[Bounded]()
)

// field is one settings key of a struct type.
type field struct {
	name  string
	index []int // reflect.Value.FieldByIndex; may cross embedded structs
	typ   reflect.Type

	def      string        // the default tag, a JSON literal ("" when none)
	defValue reflect.Value // def decoded into typ
	min, max *float64      // the min and max tags
	enum     []string      // the enum tag's values

	flockUnused bool   // a Flock key flock accepts and ignores
	renamedTo   string // the key that replaces this deprecated one
}

// structInfo is what the decoder knows of a struct type.
type structInfo struct {
	fields []*field          // in declaration order, embedded structs' in place
	byName map[string]*field // by json name
	// The fields with a default tag, with a min, max or enum tag, and
	// those whose values have something to walk (needsWalk).
	defaults, checked, walked []*field
}

var structInfos sync.Map // reflect.Type → *structInfo

// infoOf returns the structInfo of struct type t, built on first use. It
// panics on a malformed tag, a programming error found by the first
// decode of the type (so by its package's tests).
func infoOf(t reflect.Type) *structInfo {
	if si, ok := structInfos.Load(t); ok {
		return si.(*structInfo)
	}
	si := &structInfo{byName: map[string]*field{}}
	depth := map[string]int{}
	collectFields(t, nil, 0, si, depth)
	for _, f := range si.fields {
		if f.def != "" {
			si.defaults = append(si.defaults, f)
		}
		if f.min != nil || f.max != nil || f.enum != nil || bounded(f.typ) {
			si.checked = append(si.checked, f)
		}
		if needsWalk(f.typ) {
			si.walked = append(si.walked, f)
		}
	}
	actual, _ := structInfos.LoadOrStore(t, si)
	return actual.(*structInfo)
}

// collectFields adds t's fields at index prefix to si. A field of an
// embedded struct without a json name is promoted, as encoding/json does:
// of fields with one name, the least deep wins (a tie keeps the first).
func collectFields(t reflect.Type, prefix []int, level int, si *structInfo, depth map[string]int) {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		index := append(append([]int{}, prefix...), i)
		ft := sf.Type
		if sf.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				collectFields(et, index, level+1, si, depth)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if d, ok := depth[name]; ok && d <= level {
			continue
		}
		f := newField(t, sf, name, index)
		if old, ok := si.byName[name]; ok {
			for j, g := range si.fields {
				if g == old {
					si.fields = append(si.fields[:j], si.fields[j+1:]...)
					break
				}
			}
		}
		depth[name] = level
		si.byName[name] = f
		si.fields = append(si.fields, f)
	}
}

// newField reads the tags of struct field sf of t.
func newField(t reflect.Type, sf reflect.StructField, name string, index []int) *field {
	f := &field{name: name, index: index, typ: sf.Type}
	where := func() string { return t.String() + "." + sf.Name }
	if d, ok := sf.Tag.Lookup(tagDefault); ok {
		if plainString(sf.Type) {
			d = strconv.Quote(d)
		}
		f.def = d
		v := reflect.New(sf.Type)
		if err := json.Unmarshal([]byte(d), v.Interface()); err != nil {
			panic(fmt.Sprintf("settings: %s: default %q: %v", where(), d, err))
		}
		f.defValue = v.Elem()
	}
	for _, b := range []struct {
		tag string
		dst **float64
	}{{tagMin, &f.min}, {tagMax, &f.max}} {
		if s, ok := sf.Tag.Lookup(b.tag); ok {
			x, err := strconv.ParseFloat(s, 64)
			if err != nil {
				panic(fmt.Sprintf("settings: %s: %s %q is not a number", where(), b.tag, s))
			}
			*b.dst = &x
		}
	}
	if (f.min != nil || f.max != nil) && !numeric(sf.Type) {
		panic(fmt.Sprintf("settings: %s: min and max are for numbers (or a Bounded type)", where()))
	}
	if s, ok := sf.Tag.Lookup(tagEnum); ok {
		f.enum = strings.Split(s, ",")
		if !stringish(sf.Type) {
			panic(fmt.Sprintf("settings: %s: enum is for strings and lists of strings", where()))
		}
	}
	st := sf.Tag.Get(tagSettings)
	f.flockUnused = st == TagFlockUnused
	f.renamedTo, _ = strings.CutPrefix(st, tagRenamed)
	return f
}

// plainString reports whether t is a string (or a pointer to one) that
// decodes as encoding/json decodes strings: its default tag is the string
// itself, unquoted.
func plainString(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.String && !decodesItself(t)
}

// bounded reports whether t (or *t) implements Bounded.
func bounded(t reflect.Type) bool {
	return t.Implements(boundedType) || reflect.PointerTo(t).Implements(boundedType)
}

// numeric reports whether min and max tags apply to t.
func numeric(t reflect.Type) bool {
	if bounded(t) {
		return true
	}
	if t.Kind() == reflect.Pointer {
		return numeric(t.Elem())
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// stringish reports whether an enum tag applies to t.
func stringish(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return stringish(t.Elem())
	}
	return false
}

// hasHooks reports whether t (or *t) implements Normalizer or Validator.
func hasHooks(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(normalizerType) || t.Implements(validatorType) ||
		p.Implements(normalizerType) || p.Implements(validatorType)
}

var walkNeeds sync.Map // reflect.Type → bool

// needsWalk is walkNeeded, cached by type.
func needsWalk(t reflect.Type) bool {
	if b, ok := walkNeeds.Load(t); ok {
		return b.(bool)
	}
	b := walkNeeded(t, map[reflect.Type]bool{})
	walkNeeds.Store(t, b)
	return b
}

// hooks says which hooks a type has, and whether by its pointer.
type hooks struct {
	normalize, normalizePtr, validate, validatePtr bool
}

var hookCache sync.Map // reflect.Type → hooks

// hooksOf returns t's hooks.
func hooksOf(t reflect.Type) hooks {
	if h, ok := hookCache.Load(t); ok {
		return h.(hooks)
	}
	p := reflect.PointerTo(t)
	h := hooks{
		normalize: t.Implements(normalizerType), normalizePtr: p.Implements(normalizerType),
		validate: t.Implements(validatorType), validatePtr: p.Implements(validatorType),
	}
	hookCache.Store(t, h)
	return h
}

// walkNeeded reports whether values of t need the defaults and checks
// walk: a struct with a tag or hook, or a container of one.
func walkNeeded(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t.Kind() != reflect.Pointer && hasHooks(t) {
		return true
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return walkNeeded(t.Elem(), seen)
	case reflect.Struct:
	default:
		return false
	}
	if seen[t] {
		return false
	}
	seen[t] = true
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if sf.Tag.Get("json") == "-" {
			continue
		}
		if _, ok := sf.Tag.Lookup(tagDefault); ok {
			return true
		}
		for _, tag := range []string{tagMin, tagMax, tagEnum} {
			if _, ok := sf.Tag.Lookup(tag); ok {
				return true
			}
		}
		if bounded(sf.Type) {
			return true
		}
		if walkNeeded(sf.Type, seen) {
			return true
		}
	}
	return false
}

// decodesItself reports whether values of t decode with their own
// UnmarshalJSON (or are raw JSON), so the decoder does not go inside.
func decodesItself(t reflect.Type) bool {
	return t == rawMessageType || t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType)
}
