package settings

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// complete gives the zero fields of v (addressable, at path) and of every
// value below it their default tags, then runs the Normalize hooks, inner
// values first.
func complete(v reflect.Value, path string) error {
	if v.Kind() == reflect.Struct {
		for _, f := range infoOf(v.Type()).defaults {
			if fv, ok := fieldOf(v, f.index); ok && fv.IsZero() {
				setDefault(fv, f)
			}
		}
	}
	if err := below(v, path, complete); err != nil {
		return err
	}
	if v.Kind() == reflect.Pointer {
		return nil
	}
	switch h := hooksOf(v.Type()); {
	case h.normalizePtr:
		return At(path, v.Addr().Interface().(Normalizer).Normalize())
	case h.normalize:
		return At(path, v.Interface().(Normalizer).Normalize())
	}
	return nil
}

// check checks the min, max and enum tags of v's fields (v addressable,
// at path), then every value below it, then runs v's Validate hook.
func check(v reflect.Value, path string) error {
	if v.Kind() == reflect.Struct {
		for _, f := range infoOf(v.Type()).checked {
			if fv, ok := fieldOf(v, f.index); ok {
				if err := checkTags(fv, f, Join(path, f.name)); err != nil {
					return err
				}
			}
		}
	}
	if err := below(v, path, check); err != nil {
		return err
	}
	if v.Kind() == reflect.Pointer {
		return nil
	}
	switch h := hooksOf(v.Type()); {
	case h.validatePtr:
		return At(path, v.Addr().Interface().(Validator).Validate())
	case h.validate:
		return At(path, v.Interface().(Validator).Validate())
	}
	return nil
}

// below calls fn on each value right below v, with its path: the value a
// non-nil pointer points to, a struct's fields, a list's items, a map's
// values (in key order, through addressable copies stored back).
func below(v reflect.Value, path string, fn func(reflect.Value, string) error) error {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() && needsWalk(v.Type().Elem()) {
			return fn(v.Elem(), path)
		}
	case reflect.Struct:
		for _, f := range infoOf(v.Type()).walked {
			if fv, ok := fieldOf(v, f.index); ok {
				if err := fn(fv, Join(path, f.name)); err != nil {
					return err
				}
			}
		}
	case reflect.Slice, reflect.Array:
		if !needsWalk(v.Type().Elem()) {
			return nil
		}
		for i := 0; i < v.Len(); i++ {
			if err := fn(v.Index(i), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case reflect.Map:
		if !needsWalk(v.Type().Elem()) {
			return nil
		}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		for _, k := range keys {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			if err := fn(e, Join(path, k.String())); err != nil {
				return err
			}
			v.SetMapIndex(k, e)
		}
	}
	return nil
}

// hook returns v (addressable) as an H when v or its address implements
// H.
func hook[H any](v reflect.Value) (H, bool) {
	if h, ok := v.Interface().(H); ok {
		return h, true
	}
	if v.CanAddr() {
		if h, ok := v.Addr().Interface().(H); ok {
			return h, true
		}
	}
	var zero H
	return zero, false
}

// setDefault sets fv, which is zero, to a copy of f's default.
func setDefault(fv reflect.Value, f *field) {
	if !copyValue(fv, f.defValue) {
		// A composite default: decode the literal again, so that the value
		// shares nothing with the next decode's.
		_ = json.Unmarshal([]byte(f.def), fv.Addr().Interface())
	}
}

// copyValue sets dst to a deep copy of src for scalars, pointers and
// slices of them; false for anything else (dst then unchanged).
func copyValue(dst, src reflect.Value) bool {
	switch src.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.String:
		dst.Set(src)
		return true
	case reflect.Pointer:
		if src.IsNil() {
			dst.SetZero()
			return true
		}
		n := reflect.New(src.Type().Elem())
		if !copyValue(n.Elem(), src.Elem()) {
			return false
		}
		dst.Set(n)
		return true
	case reflect.Slice:
		if src.IsNil() {
			dst.SetZero()
			return true
		}
		n := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := 0; i < src.Len(); i++ {
			if !copyValue(n.Index(i), src.Index(i)) {
				return false
			}
		}
		dst.Set(n)
		return true
	}
	return false
}

// checkTags checks fv, field f at path, against f's min, max and enum tags.
func checkTags(fv reflect.Value, f *field, path string) error {
	if b, ok := hook[Bounded](fv); ok {
		if fv.Kind() == reflect.Pointer && fv.IsNil() {
			return nil
		}
		return At(path, b.CheckBounds(f.min, f.max))
	}
	if f.min != nil || f.max != nil {
		if x, ok := number(fv); ok {
			if err := inBounds(x, f.min, f.max); err != nil {
				return At(path, err)
			}
		}
	}
	if f.enum != nil {
		return checkEnum(fv, f.enum, path)
	}
	return nil
}

// number returns the value of a numeric (or pointer to numeric) v; false
// for a nil pointer.
func number(v reflect.Value) (float64, bool) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return 0, false
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(v.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(v.Uint()), true
	case reflect.Float32, reflect.Float64:
		return v.Float(), true
	}
	return 0, false
}

// inBounds checks x against min and max (either may be nil).
func inBounds(x float64, min, max *float64) error {
	switch {
	case min != nil && max != nil && (x < *min || x > *max || x != x):
		return &Error{Reason: "must be between " + FormatNumber(*min) + " and " + FormatNumber(*max)}
	case min != nil && (x < *min || x != x):
		return &Error{Reason: "must be >= " + FormatNumber(*min)}
	case max != nil && (x > *max || x != x):
		return &Error{Reason: "must be <= " + FormatNumber(*max)}
	}
	return nil
}

// FormatNumber writes x as the shortest decimal that reads back as x
// (1e+07, 0.001, 16).
func FormatNumber(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// checkEnum checks a string (or each string of a list) against values;
// the empty string is unset and passes.
func checkEnum(v reflect.Value, values []string, path string) error {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return checkEnum(v.Elem(), values, path)
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if err := checkEnum(v.Index(i), values, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		return nil
	}
	s := v.String()
	if s == "" || slices.Contains(values, s) {
		return nil
	}
	return Errorf(path, "%q is not one of %s", s, strings.Join(values, ", "))
}
