package declarative

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
	"github.com/goccy/go-yaml/ast"
)

// Limits on declarative expressions.
const (
	// maxExprNodes caps the AST size of one expression.
	maxExprNodes = 2000
	// maxExprLen caps the source length of one expression.
	maxExprLen = 8 << 10
)

// pos is a 1-based line and column in a workflow file.
type pos struct{ line, col int }

func posOf(n ast.Node) pos {
	if n == nil {
		return pos{1, 1}
	}
	t := n.GetToken()
	if t == nil || t.Position == nil {
		return pos{1, 1}
	}
	return pos{max(t.Position.Line, 1), max(t.Position.Column, 1)}
}

// posError is a load error at a position; the loader adds the file name.
type posError struct {
	at  pos
	msg string
	err error
}

func (e *posError) Error() string {
	if e.err == nil {
		return e.msg
	}
	return e.msg + ": " + e.err.Error()
}

func (e *posError) Unwrap() error { return e.err }

func errAt(at pos, err error, format string, args ...any) *posError {
	return &posError{at: at, msg: fmt.Sprintf(format, args...), err: err}
}

// compiledExpr is an expression compiled at load.
type compiledExpr struct {
	src  string
	at   pos
	prog *vm.Program
}

// exprOptions are the compile options of every expression: a typed
// environment, no clock, bounded size, deterministic map helpers.
func exprOptions(asBool bool) []expr.Option {
	opts := []expr.Option{
		expr.Env(Env{}),
		expr.DisableBuiltin("now"),
		expr.DisableBuiltin("date"),
		expr.DisableBuiltin("timezone"),
		expr.MaxNodes(maxExprNodes),
		expr.Function("keys", sortedKeys, new(func(map[string]any) []any), new(func(map[string]string) []any)),
		expr.Function("values", sortedValues, new(func(map[string]any) []any), new(func(map[string]string) []any)),
		expr.Function("toPairs", sortedPairs, new(func(map[string]any) []any), new(func(map[string]string) []any)),
		expr.Function("shell", shellQuote, new(func(string) string)),
		expr.Function("clip", clipText, new(func(string, int) string)),
	}
	if asBool {
		opts = append(opts, expr.AsBool())
	}
	return opts
}

// compileExpr compiles src; asBool requires a boolean result.
func compileExpr(src string, at pos, asBool bool) (*compiledExpr, error) {
	if strings.TrimSpace(src) == "" {
		return nil, errAt(at, nil, "empty expression")
	}
	if len(src) > maxExprLen {
		return nil, errAt(at, nil, "expression longer than %d bytes", maxExprLen)
	}
	prog, err := compileSafely(src, asBool)
	if err != nil {
		return nil, errAt(at, err, "expression %q", src)
	}
	return &compiledExpr{src: src, at: at, prog: prog}, nil
}

// compileSafely compiles, turning a panic of the compiler into an error.
func compileSafely(src string, asBool bool) (prog *vm.Program, err error) {
	defer func() {
		if p := recover(); p != nil {
			prog, err = nil, fmt.Errorf("compiler panicked: %v", p)
		}
	}()
	return expr.Compile(src, exprOptions(asBool)...)
}

func (c *compiledExpr) eval(env *Env) (any, error) {
	v, err := expr.Run(c.prog, *env)
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", c.src, err)
	}
	return v, nil
}

func (c *compiledExpr) evalBool(env *Env) (bool, error) {
	if c == nil {
		return true, nil
	}
	v, err := c.eval(env)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("expression %q: got %T, want bool", c.src, v)
	}
	return b, nil
}

// exprNode decodes a scalar node as an expression source.
func exprNode(n ast.Node, asBool bool) (*compiledExpr, error) {
	src, ok := scalarText(n)
	if !ok {
		return nil, errAt(posOf(n), nil, "want an expression (a string), got a %s", nodeKind(n))
	}
	return compileExpr(src, posOf(n), asBool)
}

// scalarText returns the text of a scalar node.
func scalarText(n ast.Node) (string, bool) {
	switch t := n.(type) {
	case *ast.StringNode:
		return t.Value, true
	case *ast.LiteralNode:
		return t.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
		return n.GetToken().Value, true
	case *ast.AnchorNode:
		return scalarText(t.Value)
	case *ast.TagNode:
		return scalarText(t.Value)
	}
	return "", false
}

func nodeKind(n ast.Node) string {
	if n == nil {
		return "nothing"
	}
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "mapping"
	case *ast.SequenceNode:
		return "list"
	case *ast.NullNode:
		return "null"
	}
	return strings.ToLower(n.Type().String())
}

// tmplKind says what a template node is.
type tmplKind int

const (
	tLiteral tmplKind = iota // a constant value
	tString                  // text with ${...} interpolations
	tWhole                   // exactly "${expr}": the expression's value, any type
	tMap
	tList
)

// template is a YAML value whose strings may interpolate ${expr}.
type template struct {
	at    pos
	kind  tmplKind
	lit   any
	text  []string // tString: len(exprs)+1 literal segments
	exprs []*compiledExpr
	keys  []string // tMap, in file order
	vals  []*template
	items []*template // tList
}

// isConst reports whether t contains no expression.
func (t *template) isConst() bool {
	switch t.kind {
	case tLiteral:
		return true
	case tMap:
		for _, v := range t.vals {
			if !v.isConst() {
				return false
			}
		}
		return true
	case tList:
		for _, v := range t.items {
			if !v.isConst() {
				return false
			}
		}
		return true
	}
	return false
}

// field returns the value of key in a map template.
func (t *template) field(key string) (*template, bool) {
	for i, k := range t.keys {
		if k == key {
			return t.vals[i], true
		}
	}
	return nil, false
}

// parseTemplate builds a template from a YAML node, compiling every
// interpolated expression.
func parseTemplate(n ast.Node) (*template, error) {
	at := posOf(n)
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return &template{at: at, kind: tLiteral}, nil
	case *ast.StringNode:
		return parseInterpolated(v.Value, at)
	case *ast.LiteralNode:
		return parseInterpolated(v.Value.Value, at)
	case *ast.AnchorNode:
		return parseTemplate(v.Value)
	case *ast.TagNode:
		return parseTemplate(v.Value)
	case *ast.AliasNode:
		return nil, errAt(at, nil, "YAML aliases are not supported in templates")
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		var x any
		if err := decodeScalar(n, &x); err != nil {
			return nil, errAt(at, err, "bad value")
		}
		if f, ok := x.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
			return nil, errAt(at, nil, "%v is not a JSON number", f)
		}
		return &template{at: at, kind: tLiteral, lit: x}, nil
	case *ast.SequenceNode:
		t := &template{at: at, kind: tList, items: []*template{}}
		for _, item := range v.Values {
			c, err := parseTemplate(item)
			if err != nil {
				return nil, err
			}
			t.items = append(t.items, c)
		}
		return t, nil
	case ast.MapNode:
		t := &template{at: at, kind: tMap}
		seen := map[string]bool{}
		iter := v.MapRange()
		for iter.Next() {
			key, ok := scalarText(iter.Key())
			if !ok {
				return nil, errAt(posOf(iter.Key()), nil, "mapping keys must be strings")
			}
			if seen[key] {
				return nil, errAt(posOf(iter.Key()), nil, "duplicate key %q", key)
			}
			seen[key] = true
			c, err := parseTemplate(iter.Value())
			if err != nil {
				return nil, err
			}
			t.keys = append(t.keys, key)
			t.vals = append(t.vals, c)
		}
		return t, nil
	}
	return nil, errAt(at, nil, "unsupported YAML value (%s)", nodeKind(n))
}

// parseInterpolated splits s into text and ${expr} parts. "$${" is a
// literal "${".
func parseInterpolated(s string, at pos) (*template, error) {
	if !strings.Contains(s, "${") {
		return &template{at: at, kind: tLiteral, lit: s}, nil
	}
	t := &template{at: at, kind: tString}
	var text strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			text.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end, err := closingBrace(s, i+2)
			if err != nil {
				return nil, errAt(at, err, "template %q", s)
			}
			c, err := compileExpr(s[i+2:end], at, false)
			if err != nil {
				return nil, err
			}
			t.text = append(t.text, text.String())
			text.Reset()
			t.exprs = append(t.exprs, c)
			i = end + 1
		default:
			text.WriteByte(s[i])
			i++
		}
	}
	t.text = append(t.text, text.String())
	if len(t.exprs) == 0 {
		return &template{at: at, kind: tLiteral, lit: t.text[0]}, nil
	}
	if len(t.exprs) == 1 && t.text[0] == "" && t.text[1] == "" {
		t.kind = tWhole
	}
	return t, nil
}

// closingBrace returns the index of the "}" closing an interpolation
// whose expression starts at i, skipping braces inside string literals
// and nested map literals.
func closingBrace(s string, i int) (int, error) {
	depth := 0
	for ; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'', '`':
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' && c != '`' {
					j++
				}
			}
			if j >= len(s) {
				return 0, errors.New("unterminated string literal in ${...}")
			}
			i = j
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return i, nil
			}
			depth--
		}
	}
	return 0, errors.New("missing } to close ${")
}

// eval renders t over env into plain JSON-able values.
func (t *template) eval(env *Env) (any, error) {
	switch t.kind {
	case tLiteral:
		return t.lit, nil
	case tWhole:
		v, err := t.exprs[0].eval(env)
		if err != nil {
			return nil, err
		}
		return normalize(v)
	case tString:
		var b strings.Builder
		for i, c := range t.exprs {
			b.WriteString(t.text[i])
			v, err := c.eval(env)
			if err != nil {
				return nil, err
			}
			s, err := stringify(v)
			if err != nil {
				return nil, fmt.Errorf("expression %q: %w", c.src, err)
			}
			b.WriteString(s)
		}
		b.WriteString(t.text[len(t.exprs)])
		return b.String(), nil
	case tMap:
		m := make(map[string]any, len(t.keys))
		for i, k := range t.keys {
			v, err := t.vals[i].eval(env)
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		return m, nil
	case tList:
		l := make([]any, len(t.items))
		for i, item := range t.items {
			v, err := item.eval(env)
			if err != nil {
				return nil, err
			}
			l[i] = v
		}
		return l, nil
	}
	return nil, fmt.Errorf("bad template kind %d", t.kind)
}

// evalString renders t and requires a string (numbers and booleans are
// formatted).
func (t *template) evalString(env *Env) (string, error) {
	v, err := t.eval(env)
	if err != nil {
		return "", err
	}
	return stringify(v)
}

// normalize turns an expression value into plain JSON values (maps,
// slices, strings, float64, bool, nil), so that what a phase sees from its
// own assignments is what the next phase sees from the store.
func normalize(v any) (any, error) {
	switch v.(type) {
	case nil, string, bool, float64:
		return v, nil
	case int:
		return float64(v.(int)), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("value is not JSON: %w", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// stringify formats a value for interpolation into text: strings as is,
// nil as "", numbers without a trailing .0, anything else as JSON.
func stringify(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return "", fmt.Errorf("%v is not a number to print", x)
		}
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("value is not JSON: %w", err)
	}
	return string(b), nil
}

// sortedKeys is keys() with keys in sorted order (determinism).
func sortedKeys(params ...any) (any, error) {
	keys, _, err := mapSorted(params)
	return keys, err
}

func sortedValues(params ...any) (any, error) {
	_, vals, err := mapSorted(params)
	return vals, err
}

func sortedPairs(params ...any) (any, error) {
	keys, vals, err := mapSorted(params)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(keys))
	for i := range keys {
		out[i] = []any{keys[i], vals[i]}
	}
	return out, nil
}

func mapSorted(params []any) ([]any, []any, error) {
	if len(params) != 1 {
		return nil, nil, fmt.Errorf("want 1 argument, got %d", len(params))
	}
	v := reflect.ValueOf(params[0])
	if v.Kind() != reflect.Map {
		return nil, nil, fmt.Errorf("cannot get keys from %T", params[0])
	}
	keys := v.MapKeys()
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i].Interface()) < fmt.Sprint(keys[j].Interface()) })
	ks, vs := make([]any, len(keys)), make([]any, len(keys))
	for i, k := range keys {
		ks[i], vs[i] = k.Interface(), v.MapIndex(k).Interface()
	}
	return ks, vs, nil
}

// shellQuote quotes a string for a POSIX shell: shell(x) in expressions.
func shellQuote(params ...any) (any, error) {
	s, _ := params[0].(string)
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'", nil
}

// clipText keeps the first n bytes of a string (on a rune boundary) and
// notes how much was cut: clip(s, n) in expressions.
func clipText(params ...any) (any, error) {
	s, _ := params[0].(string)
	n, _ := params[1].(int)
	if n < 0 {
		n = 0
	}
	if len(s) <= n {
		return s, nil
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s\n[... %d bytes clipped]", s[:cut], len(s)-cut), nil
}
