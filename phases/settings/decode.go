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
)

// Decoder decodes settings documents into tagged structs. The zero
// Decoder leaves keys the struct does not know to the caller (a run's
// settings hold the engine's keys beside the workflow's, and the engine
// warns about the unknown ones with Keys.Check).
type Decoder struct {
	// Strict refuses a document with a key the struct does not know, at
	// any depth (an *Error at the root naming each key, with the closest
	// known one: `unknown key "max_dept" (did you mean "max_depth"?)`).
	// Keys tagged settings:"flock-unused" and deprecated names are known.
	Strict bool
	// Allow are top-level keys that others read (the engine's), accepted
	// with anything below them when Strict.
	Allow []string
}

// Decode is Decoder{}.Decode: a document's unknown keys are ignored.
func Decode(doc []byte, v any) error { return Decoder{}.Decode(doc, v) }

// Decode decodes the JSON object doc into v, a non-nil pointer to a
// struct, then completes and checks it:
//
//  1. keys are matched to the json tags as encoding/json matches them
//     (a key that differs only in case still decodes), values decoded
//     with encoding/json, a type's UnmarshalJSON included; an empty
//     document or null is {};
//  2. fields still zero get their default tag, then Normalize runs
//     (Normalizer), for v and every value below it, inner values first;
//  3. the min, max and enum tags are checked, then Validate runs
//     (Validator), for v and every value below it, in field order.
//
// The first error is returned as an *Error naming the setting's JSON path
// ("limits.tokens: must be >= 0", "tools[2]: want a string, got JSON
// number"). Decode panics when v is not a pointer to a struct or a tag of
// its type is malformed: programming errors.
func (d Decoder) Decode(doc []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("settings: Decode wants a non-nil pointer to a struct, got %T", v))
	}
	doc = bytes.TrimSpace(doc)
	if len(doc) == 0 || string(doc) == "null" {
		doc = []byte("{}")
	}
	if d.Strict {
		keys := KeysOf(v)
		if len(d.Allow) > 0 {
			keys = keys.Merge(OpenKeys(d.Allow...))
		}
		if err := UnknownError(keys.Check(doc)); err != nil {
			return err
		}
	}
	if doc[0] != '{' {
		if !json.Valid(doc) {
			return syntaxError(doc, "")
		}
		return &Error{Reason: "must be a JSON object, got JSON " + jsonKind(doc)}
	}
	if err := decodeFast(doc, rv.Elem()); err != nil {
		return err
	}
	if !needsWalk(rv.Elem().Type()) {
		return nil
	}
	if err := complete(rv.Elem(), ""); err != nil {
		return err
	}
	return check(rv.Elem(), "")
}

// Unmarshal decodes the JSON value raw into v, a non-nil pointer, as Decode
// decodes (errors are *Error naming the path below v), without defaults,
// checks or hooks: for a type's UnmarshalJSON that decodes a form of its
// own (a model entry written as a bare name or as an object), so that a
// mistake inside still names its path. The Decode that reached the type
// gives the defaults and runs the checks afterwards.
func Unmarshal(raw []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic(fmt.Sprintf("settings: Unmarshal wants a non-nil pointer, got %T", v))
	}
	raw = bytes.TrimSpace(raw)
	if !json.Valid(raw) {
		return syntaxError(raw, "")
	}
	return decodeFast(raw, rv.Elem())
}

// decodeFast decodes raw into v with encoding/json in one pass, the
// common case; only when that fails does it decode again, value by value
// into a scratch value, to name the path of what is wrong.
func decodeFast(raw []byte, v reflect.Value) error {
	err := json.Unmarshal(raw, v.Addr().Interface())
	if err == nil {
		return nil
	}
	if fieldwise(v.Type()) {
		if perr := decodeValue(raw, reflect.New(v.Type()).Elem(), ""); perr != nil {
			return perr
		}
	}
	return jsonError(err, raw, "")
}

// fieldwise reports whether the decoder goes inside values of t (a
// struct, or a container of one) rather than handing them to
// encoding/json whole.
func fieldwise(t reflect.Type) bool {
	if decodesItself(t) {
		return false
	}
	switch t.Kind() {
	case reflect.Struct:
		return true
	case reflect.Pointer, reflect.Slice:
		return fieldwise(t.Elem())
	case reflect.Map:
		return t.Key().Kind() == reflect.String && fieldwise(t.Elem())
	}
	return false
}

// decodeValue decodes raw into the settable v found at path.
func decodeValue(raw []byte, v reflect.Value, path string) error {
	t := v.Type()
	if !fieldwise(t) {
		return jsonInto(raw, v, path)
	}
	if string(raw) == "null" {
		if t.Kind() != reflect.Struct {
			v.SetZero()
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return decodeValue(raw, v.Elem(), path)
	case reflect.Struct:
		return decodeStruct(raw, v, path)
	case reflect.Map:
		return decodeMap(raw, v, path)
	default: // reflect.Slice
		return decodeSlice(raw, v, path)
	}
}

// decodeStruct decodes the object raw into struct v.
func decodeStruct(raw []byte, v reflect.Value, path string) error {
	members, err := object(raw, path)
	if err != nil {
		return err
	}
	si := infoOf(v.Type())
	// A key matches its field exactly or, when no key does, by case
	// (encoding/json's rule); unknown keys are the caller's concern.
	matched := make(map[*field]string, len(members))
	var folded []string
	for k := range members {
		if f, ok := si.byName[k]; ok {
			matched[f] = k
		} else {
			folded = append(folded, k)
		}
	}
	slices.Sort(folded)
	for _, k := range folded {
		for _, f := range si.fields {
			if _, ok := matched[f]; !ok && strings.EqualFold(k, f.name) {
				matched[f] = k
				break
			}
		}
	}
	for _, f := range si.fields {
		k, ok := matched[f]
		if !ok {
			continue
		}
		if err := decodeValue(members[k], fieldAlloc(v, f.index), Join(path, f.name)); err != nil {
			return err
		}
	}
	return nil
}

// decodeMap decodes the object raw into map v (string keys), each value
// at path.key.
func decodeMap(raw []byte, v reflect.Value, path string) error {
	members, err := object(raw, path)
	if err != nil {
		return err
	}
	t := v.Type()
	if v.IsNil() {
		v.Set(reflect.MakeMapWithSize(t, len(members)))
	}
	keys := make([]string, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		e := reflect.New(t.Elem()).Elem()
		if err := decodeValue(members[k], e, Join(path, k)); err != nil {
			return err
		}
		v.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), e)
	}
	return nil
}

// decodeSlice decodes the list raw into slice v, each item at path[i].
func decodeSlice(raw []byte, v reflect.Value, path string) error {
	if raw[0] != '[' {
		return &Error{Path: path, Reason: "want a list, got JSON " + jsonKind(raw)}
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return syntaxError(raw, path)
	}
	s := reflect.MakeSlice(v.Type(), len(items), len(items))
	for i, item := range items {
		if err := decodeValue(item, s.Index(i), path+"["+strconv.Itoa(i)+"]"); err != nil {
			return err
		}
	}
	v.Set(s)
	return nil
}

// object splits the JSON object raw into its members.
func object(raw []byte, path string) (map[string]json.RawMessage, error) {
	if raw[0] != '{' {
		return nil, &Error{Path: path, Reason: "want an object, got JSON " + jsonKind(raw)}
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil, syntaxError(raw, path)
	}
	return members, nil
}

// jsonInto decodes raw into v with encoding/json, naming the path of a
// value of the wrong type.
func jsonInto(raw []byte, v reflect.Value, path string) error {
	err := json.Unmarshal(raw, v.Addr().Interface())
	if err == nil {
		return nil
	}
	// encoding/json's paths leave out map keys and list indexes: find the
	// culprit item by item.
	if t := v.Type(); !decodesItself(t) {
		switch {
		case t.Kind() == reflect.Slice && len(raw) > 0 && raw[0] == '[':
			return decodeSlice(raw, v, path)
		case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && len(raw) > 0 && raw[0] == '{':
			v.SetZero()
			return decodeMap(raw, v, path)
		}
	}
	return jsonError(err, raw, path)
}

// jsonError describes an error of encoding/json decoding raw at path.
func jsonError(err error, raw []byte, path string) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &Error{Path: Join(path, te.Field), Reason: fmt.Sprintf("want %s, got JSON %s", describe(te.Type), te.Value)}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return syntaxError(raw, path)
	}
	return At(path, err)
}

// syntaxError describes malformed JSON at path.
func syntaxError(raw []byte, path string) error {
	err := json.Unmarshal(raw, new(any))
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &Error{Path: path, Reason: fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, se), Err: err}
	}
	if err == nil {
		err = errors.New("malformed JSON")
	}
	return &Error{Path: path, Reason: err.Error(), Err: err}
}

// fieldAlloc returns the field at index of struct v, allocating the
// embedded structs on the way that are nil pointers.
func fieldAlloc(v reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

// fieldOf returns the field at index of struct v; ok is false when an
// embedded struct on the way is a nil pointer.
func fieldOf(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

// jsonKind names the kind of the JSON value raw starts with.
func jsonKind(raw []byte) string {
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

// describe says what a value of t is written as.
func describe(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another value"
}
