package declarative

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/flockrun/flock/phases"
)

// maxWorkflowFile caps the size of a workflow file.
const maxWorkflowFile = 1 << 20

// WorkflowFileError is a load error at a line of a workflow file.
type WorkflowFileError struct {
	File   string
	Line   int
	Column int
	Msg    string
}

func (e *WorkflowFileError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
}

// Is makes errors.Is(err, ErrWorkflowFile) true.
func (e *WorkflowFileError) Is(target error) bool { return target == ErrWorkflowFile }

// IsWorkflowFile reports whether name has a workflow file extension
// (.yaml, .yml or .json).
func IsWorkflowFile(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// LoadWorkflowDir loads every workflow file of dir (see IsWorkflowFile),
// in sorted order, and registers them into r. It stops at the first
// error, which names the file and line.
func LoadWorkflowDir(r *phases.Registry, dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("workflow directory: %w", err)
	}
	var files []string
	for _, e := range ents {
		if !e.IsDir() && IsWorkflowFile(e.Name()) {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(files)
	for _, f := range files {
		wf, err := LoadWorkflowFile(f)
		if err != nil {
			return err
		}
		if err := r.Register(wf); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	return nil
}

// LoadWorkflowFile reads and compiles a declarative workflow file. Its
// Source is "file:<path>".
func LoadWorkflowFile(path string) (phases.Workflow, error) {
	st, err := os.Stat(path)
	if err != nil {
		return phases.Workflow{}, fmt.Errorf("%w: %w", ErrWorkflowFile, err)
	}
	if st.Size() > maxWorkflowFile {
		return phases.Workflow{}, &WorkflowFileError{File: path, Line: 1, Column: 1, Msg: fmt.Sprintf("file is larger than %d bytes", maxWorkflowFile)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return phases.Workflow{}, fmt.Errorf("%w: %w", ErrWorkflowFile, err)
	}
	return ParseWorkflow(path, data)
}

// ParseWorkflow compiles a declarative workflow from YAML or JSON data;
// file names it in errors and in the workflow's Source ("file:<file>").
// Every expression and template is compiled here: a workflow that loads
// never fails a run with a syntax or type error.
func ParseWorkflow(file string, data []byte) (wf phases.Workflow, err error) {
	defer func() {
		if p := recover(); p != nil {
			wf, err = phases.Workflow{}, &WorkflowFileError{File: file, Line: 1, Column: 1, Msg: fmt.Sprintf("internal error: %v", p)}
		}
	}()
	if len(data) > maxWorkflowFile {
		return wf, &WorkflowFileError{File: file, Line: 1, Column: 1, Msg: fmt.Sprintf("file is larger than %d bytes", maxWorkflowFile)}
	}
	d, err := decodeFile(data)
	if err != nil {
		return wf, fileError(file, err)
	}
	wf, err = d.compile(file)
	if err != nil {
		return wf, fileError(file, err)
	}
	wf.Settings = d.settingsKeys(data)
	return wf, nil
}

// settingsRef finds settings.NAME and settings["NAME"] in a workflow file.
var settingsRef = regexp.MustCompile(`\bsettings\s*(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*["']([^"']+)["']\s*\])`)

// settingsKeys are the settings keys a workflow file declares, for the
// unknown-key warnings: the keys of its settings defaults, its required
// keys and every settings.NAME (or settings["NAME"]) its text mentions.
// A file that reaches settings by a computed name (settings[var]) may see
// warnings about keys it does read; they never reject a run.
func (d *fileDoc) settingsKeys(data []byte) []string {
	seen := map[string]bool{}
	if d.Settings != nil {
		if m, ok := d.Settings.v.(map[string]any); ok {
			for k := range m {
				seen[k] = true
			}
		}
	}
	for _, k := range d.Required {
		seen[k] = true
	}
	for _, m := range settingsRef.FindAllSubmatch(data, -1) {
		if len(m[1]) > 0 {
			seen[string(m[1])] = true
		} else {
			seen[string(m[2])] = true
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// fileError converts a decode or compile error into a *WorkflowFileError.
func fileError(file string, err error) error {
	var pe *posError
	if errors.As(err, &pe) {
		// Fields decoded from null nodes have no position: line 1.
		return &WorkflowFileError{File: file, Line: max(pe.at.line, 1), Column: max(pe.at.col, 1), Msg: pe.Error()}
	}
	var ye yaml.Error
	if errors.As(err, &ye) {
		at := pos{1, 1}
		if t := ye.GetToken(); t != nil && t.Position != nil {
			at = pos{max(t.Position.Line, 1), max(t.Position.Column, 1)}
		}
		return &WorkflowFileError{File: file, Line: at.line, Column: at.col, Msg: ye.GetMessage()}
	}
	return &WorkflowFileError{File: file, Line: 1, Column: 1, Msg: err.Error()}
}

// The file format. Expression-bearing fields decode through
// NodeUnmarshaler so that they keep their positions.

type fileDoc struct {
	Name        string     `yaml:"name"`
	Description string     `yaml:"description"`
	Start       string     `yaml:"start"`
	Vars        *rawValue  `yaml:"vars"`
	Settings    *rawValue  `yaml:"settings"`
	Required    []string   `yaml:"required"`
	Phases      []phaseDoc `yaml:"phases"`
	at          pos
}

type phaseDoc struct {
	Name        string          `yaml:"name"`
	Description string          `yaml:"description"`
	Set         assignments     `yaml:"set"`
	Append      []appendDoc     `yaml:"append"`
	Ops         []opDoc         `yaml:"ops"`
	Next        *nameAt         `yaml:"next"`
	Transitions []transitionDoc `yaml:"transitions"`
	at          pos
}

type appendDoc struct {
	If   *exprBool `yaml:"if"`
	Type string    `yaml:"type"`
	Data *tmplDoc  `yaml:"data"`
	at   pos
}

type opDoc struct {
	If      *exprBool `yaml:"if"`
	ForEach *exprAny  `yaml:"for_each"`
	Kind    string    `yaml:"kind"`
	Params  *tmplDoc  `yaml:"params"`
	Meta    *tmplDoc  `yaml:"meta"`
	at      pos
}

type transitionDoc struct {
	If   *exprBool `yaml:"if"`
	Next *nameAt   `yaml:"next"`
	End  *endDoc   `yaml:"end"`
	at   pos
}

type endDoc struct {
	Failed bool     `yaml:"failed"`
	Reason *tmplDoc `yaml:"reason"`
	Result *tmplDoc `yaml:"result"`
	at     pos
}

// decodeStrict decodes node into v, rejecting unknown fields.
func decodeStrict(n ast.Node, v any) error {
	return yaml.NodeToValue(n, v, yaml.DisallowUnknownField())
}

func decodeScalar(n ast.Node, v any) error { return yaml.NodeToValue(n, v) }

func (d *fileDoc) UnmarshalYAML(n ast.Node) error {
	type plain fileDoc
	d.at = posOf(n)
	return decodeStrict(n, (*plain)(d))
}

func (p *phaseDoc) UnmarshalYAML(n ast.Node) error {
	type plain phaseDoc
	p.at = posOf(n)
	return decodeStrict(n, (*plain)(p))
}

func (a *appendDoc) UnmarshalYAML(n ast.Node) error {
	type plain appendDoc
	a.at = posOf(n)
	return decodeStrict(n, (*plain)(a))
}

func (o *opDoc) UnmarshalYAML(n ast.Node) error {
	type plain opDoc
	o.at = posOf(n)
	return decodeStrict(n, (*plain)(o))
}

func (t *transitionDoc) UnmarshalYAML(n ast.Node) error {
	type plain transitionDoc
	t.at = posOf(n)
	return decodeStrict(n, (*plain)(t))
}

func (e *endDoc) UnmarshalYAML(n ast.Node) error {
	type plain endDoc
	e.at = posOf(n)
	return decodeStrict(n, (*plain)(e))
}

// nameAt is a phase name with its position.
type nameAt struct {
	name string
	at   pos
}

func (s *nameAt) UnmarshalYAML(n ast.Node) error {
	s.at = posOf(n)
	name, ok := scalarText(n)
	if !ok {
		return errAt(s.at, nil, "want a phase name, got a %s", nodeKind(n))
	}
	s.name = name
	return nil
}

// exprBool is a condition compiled at decode time.
type exprBool struct{ c *compiledExpr }

func (e *exprBool) UnmarshalYAML(n ast.Node) (err error) {
	e.c, err = exprNode(n, true)
	return err
}

// exprAny is an expression of any type compiled at decode time.
type exprAny struct{ c *compiledExpr }

func (e *exprAny) UnmarshalYAML(n ast.Node) (err error) {
	e.c, err = exprNode(n, false)
	return err
}

// tmplDoc is a template compiled at decode time.
type tmplDoc struct{ t *template }

func (d *tmplDoc) UnmarshalYAML(n ast.Node) (err error) {
	d.t, err = parseTemplate(n)
	return err
}

// rawValue is a literal YAML value (no expressions) with its position.
type rawValue struct {
	v  any
	at pos
}

func (r *rawValue) UnmarshalYAML(n ast.Node) error {
	r.at = posOf(n)
	t, err := parseTemplate(n)
	if err != nil {
		return err
	}
	if !t.isConst() {
		return errAt(r.at, nil, "values here are literal: ${...} is not evaluated")
	}
	v, err := t.eval(&Env{})
	if err != nil {
		return errAt(r.at, err, "bad value")
	}
	r.v, err = normalize(v)
	if err != nil {
		return errAt(r.at, err, "bad value")
	}
	return nil
}

// assignments is the ordered "set" mapping of var name to expression.
type assignments []assignment

type assignment struct {
	name string
	c    *compiledExpr
}

var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (a *assignments) UnmarshalYAML(n ast.Node) error {
	m, ok := n.(ast.MapNode)
	if !ok {
		return errAt(posOf(n), nil, "set: want a mapping of var name to expression, got a %s", nodeKind(n))
	}
	seen := map[string]bool{}
	iter := m.MapRange()
	for iter.Next() {
		name, ok := scalarText(iter.Key())
		at := posOf(iter.Key())
		if !ok || !varName.MatchString(name) {
			return errAt(at, nil, "set: var name %q is not an identifier", name)
		}
		if seen[name] {
			return errAt(at, nil, "set: var %q assigned twice", name)
		}
		seen[name] = true
		c, err := exprNode(iter.Value(), false)
		if err != nil {
			return err
		}
		*a = append(*a, assignment{name: name, c: c})
	}
	return nil
}

// decodeFile parses and decodes a workflow document.
func decodeFile(data []byte) (*fileDoc, error) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, err
	}
	if len(f.Docs) != 1 || f.Docs[0].Body == nil {
		return nil, errAt(pos{1, 1}, nil, "want exactly one YAML or JSON document")
	}
	body := f.Docs[0].Body
	if _, ok := body.(ast.MapNode); !ok {
		return nil, errAt(posOf(body), nil, "want a mapping at the top, got a %s", nodeKind(body))
	}
	d := &fileDoc{}
	if err := d.UnmarshalYAML(body); err != nil {
		return nil, err
	}
	return d, nil
}
