package declarative

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
)

// fileWorkflow is a compiled workflow file.
type fileWorkflow struct {
	file     string
	name     string
	vars     map[string]any // defaults
	varNames []string       // every var the file reads or sets, sorted
	settings map[string]any // defaults
	required []string
}

// filePhase is a compiled phase of a workflow file.
type filePhase struct {
	wf          *fileWorkflow
	name        string
	at          pos
	set         assignments
	appends     []appendDoc
	ops         []opDoc
	transitions []transitionDoc
}

// compile checks the decoded document and builds the workflow.
func (d *fileDoc) compile(file string) (phases.Workflow, error) {
	if d.Name == "" {
		return phases.Workflow{}, errAt(d.at, nil, "name: required")
	}
	if strings.ContainsAny(d.Name, " \t\n/") {
		return phases.Workflow{}, errAt(d.at, nil, "name %q contains a space or slash", d.Name)
	}
	if len(d.Phases) == 0 {
		return phases.Workflow{}, errAt(d.at, nil, "phases: at least one phase is required")
	}
	fw := &fileWorkflow{file: file, name: d.Name, vars: map[string]any{}, settings: map[string]any{}, required: d.Required}
	if d.Vars != nil {
		m, ok := d.Vars.v.(map[string]any)
		if !ok && d.Vars.v != nil {
			return phases.Workflow{}, errAt(d.Vars.at, nil, "vars: want a mapping of var name to initial value")
		}
		for k, v := range m {
			if !varName.MatchString(k) {
				return phases.Workflow{}, errAt(d.Vars.at, nil, "vars: var name %q is not an identifier", k)
			}
			fw.vars[k] = v
		}
	}
	if d.Settings != nil {
		m, ok := d.Settings.v.(map[string]any)
		if !ok && d.Settings.v != nil {
			return phases.Workflow{}, errAt(d.Settings.at, nil, "settings: want a mapping of setting to default value")
		}
		for k, v := range m {
			fw.settings[k] = v
		}
	}
	declared := map[string]pos{}
	for _, p := range d.Phases {
		if p.Name == "" {
			return phases.Workflow{}, errAt(p.at, nil, "phase: name required")
		}
		if prev, dup := declared[p.Name]; dup {
			return phases.Workflow{}, errAt(p.at, nil, "phase %q is declared twice (first at line %d)", p.Name, prev.line)
		}
		declared[p.Name] = p.at
	}
	start := d.Start
	if start == "" {
		start = d.Phases[0].Name
	}
	if _, ok := declared[start]; !ok {
		return phases.Workflow{}, errAt(d.at, nil, "start: phase %q is not declared", start)
	}
	names := map[string]bool{}
	for k := range fw.vars {
		names[k] = true
	}
	wf := phases.Workflow{Name: d.Name, Description: d.Description, Start: start, Source: "file:" + file}
	for i := range d.Phases {
		p := &d.Phases[i]
		fp, next, err := p.compile(fw, declared)
		if err != nil {
			return phases.Workflow{}, err
		}
		for _, a := range p.Set {
			names[a.name] = true
		}
		wf.Phases = append(wf.Phases, phases.PhaseSpec{Name: p.Name, Run: fp.run, Next: next})
	}
	for k := range names {
		fw.varNames = append(fw.varNames, k)
	}
	sort.Strings(fw.varNames)
	reached := wf.Reachable()
	for _, p := range d.Phases {
		if !reached[p.Name] {
			return phases.Workflow{}, errAt(p.at, nil, "phase %q is unreachable from start phase %q", p.Name, start)
		}
	}
	wf.CheckSettings = fw.checkSettings
	if err := wf.Validate(); err != nil {
		return phases.Workflow{}, errAt(d.at, err, "workflow")
	}
	return wf, nil
}

// compile checks one phase and returns its runtime form and its declared
// transitions.
func (p *phaseDoc) compile(fw *fileWorkflow, declared map[string]pos) (*filePhase, []string, error) {
	fp := &filePhase{wf: fw, name: p.Name, at: p.at, set: p.Set, appends: p.Append, ops: p.Ops, transitions: p.Transitions}
	for _, a := range p.Append {
		if a.Type == "" {
			return nil, nil, errAt(a.at, nil, "phase %q: append: type required", p.Name)
		}
		if a.Data == nil {
			return nil, nil, errAt(a.at, nil, "phase %q: append %s: data required", p.Name, a.Type)
		}
	}
	for i := range p.Ops {
		if err := p.Ops[i].check(p.Name); err != nil {
			return nil, nil, err
		}
	}
	if p.Next != nil {
		if len(p.Transitions) > 0 {
			return nil, nil, errAt(p.Next.at, nil, "phase %q: give next or transitions, not both", p.Name)
		}
		fp.transitions = []transitionDoc{{Next: p.Next, at: p.Next.at}}
	}
	var next []string
	uncond := -1
	for i, t := range fp.transitions {
		if uncond >= 0 {
			return nil, nil, errAt(t.at, nil, "phase %q: transition %d is never taken: transition %d has no if", p.Name, i, uncond)
		}
		if t.If == nil {
			uncond = i
		}
		switch {
		case t.Next != nil && t.End != nil:
			return nil, nil, errAt(t.at, nil, "phase %q: transition %d: give next or end, not both", p.Name, i)
		case t.Next == nil && t.End == nil:
			return nil, nil, errAt(t.at, nil, "phase %q: transition %d: give next or end", p.Name, i)
		case t.Next != nil:
			if _, ok := declared[t.Next.name]; !ok {
				return nil, nil, errAt(t.Next.at, nil, "phase %q: transition to undeclared phase %q", p.Name, t.Next.name)
			}
			if !slices.Contains(next, t.Next.name) {
				next = append(next, t.Next.name)
			}
		}
	}
	return fp, next, nil
}

// check validates an op declaration: known kind, known params, literal
// params of the right type, meta a mapping.
func (o *opDoc) check(phase string) error {
	kind := operations.Kind(o.Kind)
	if !kind.Valid() {
		return errAt(o.at, nil, "phase %q: op kind %q is not one of %v", phase, o.Kind, operations.Kinds())
	}
	if o.Params == nil {
		return nil
	}
	t := o.Params.t
	if t.kind == tWhole {
		return nil // the whole params object comes from an expression
	}
	if t.kind != tMap {
		return errAt(t.at, nil, "phase %q: %s params: want a mapping", phase, kind)
	}
	fields := paramFields(kind)
	for i, key := range t.keys {
		typ, ok := fields[key]
		if !ok {
			known := make([]string, 0, len(fields))
			for k := range fields {
				known = append(known, k)
			}
			sort.Strings(known)
			return errAt(t.vals[i].at, nil, "phase %q: %s params: unknown field %q (known: %s)", phase, kind, key, strings.Join(known, ", "))
		}
		if !t.vals[i].isConst() {
			continue
		}
		v, _ := t.vals[i].eval(&Env{})
		b, err := json.Marshal(v)
		if err == nil {
			err = json.Unmarshal(b, reflect.New(typ).Interface())
		}
		if err != nil {
			return errAt(t.vals[i].at, err, "phase %q: %s params: field %q", phase, kind, key)
		}
	}
	if o.Meta != nil && o.Meta.t.kind != tMap && o.Meta.t.kind != tWhole {
		return errAt(o.Meta.t.at, nil, "phase %q: meta: want a mapping of strings", phase)
	}
	return nil
}

// paramFields maps the JSON names of a kind's params to their types.
func paramFields(kind operations.Kind) map[string]reflect.Type {
	var req operations.Request
	if err := json.Unmarshal([]byte(`{"type":"`+string(kind)+`"}`), &req); err != nil {
		return nil
	}
	p := req.Params
	if p == nil {
		return nil
	}
	st := reflect.TypeOf(p).Elem()
	out := map[string]reflect.Type{}
	for j := 0; j < st.NumField(); j++ {
		sf := st.Field(j)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		out[name] = sf.Type
	}
	return out
}

// checkSettings checks a run's settings against required.
func (fw *fileWorkflow) checkSettings(raw json.RawMessage) error {
	s, err := fw.settingsOf(raw)
	if err != nil {
		return err
	}
	for _, k := range fw.required {
		if s[k] == nil {
			return fmt.Errorf("%s: required by workflow %s", k, fw.name)
		}
	}
	return nil
}

// settingsOf overlays the run's settings on the file's defaults.
func (fw *fileWorkflow) settingsOf(raw json.RawMessage) (map[string]any, error) {
	s := make(map[string]any, len(fw.settings))
	for k, v := range fw.settings {
		s[k] = v
	}
	if len(raw) == 0 || string(raw) == "null" {
		return s, nil
	}
	var run map[string]any
	if err := json.Unmarshal(raw, &run); err != nil {
		return nil, fmt.Errorf("settings: want a JSON object: %w", err)
	}
	for k, v := range run {
		s[k] = v
	}
	return s, nil
}

// call is the evaluation state of one phase call.
type call struct {
	p   *filePhase
	in  phases.Input
	env Env
	// appended holds the data of entries appended so far in this call, by type.
	appended map[string][]any
	// history caches historyOf by type.
	history map[string][]any
}

// errorf prefixes a runtime error with the file, line and phase.
func (c *call) errorf(at pos, what string, err error) error {
	return fmt.Errorf("%s:%d: phase %s: %s: %w", c.p.wf.file, at.line, c.p.name, what, err)
}

// run is the phases.Phase of a file phase. Order: set (in file order,
// each assignment visible to the next), append, ops, transitions; later
// steps see the vars set and the entries appended by earlier ones.
func (p *filePhase) run(in phases.Input) (phases.Output, error) {
	c := &call{p: p, in: in, appended: map[string][]any{}, history: map[string][]any{}}
	if err := c.buildEnv(); err != nil {
		return phases.Output{}, err
	}
	var out phases.Output
	for _, a := range p.set {
		v, err := a.c.eval(&c.env)
		if err == nil {
			v, err = normalize(v)
		}
		if err != nil {
			return out, c.errorf(a.c.at, "set "+a.name, err)
		}
		c.env.Vars[a.name] = v
		if err := out.SetVar(a.name, v); err != nil {
			return out, c.errorf(a.c.at, "set "+a.name, err)
		}
	}
	for i, a := range p.appends {
		ok, err := a.If.eval(&c.env)
		if err != nil {
			return out, c.errorf(a.at, fmt.Sprintf("append %d: if", i), err)
		}
		if !ok {
			continue
		}
		v, err := a.Data.t.eval(&c.env)
		if err == nil {
			v, err = normalize(v)
		}
		if err != nil {
			return out, c.errorf(a.at, fmt.Sprintf("append %d (%s)", i, a.Type), err)
		}
		e, err := phases.NewEntry(a.Type, v)
		if err != nil {
			return out, c.errorf(a.at, fmt.Sprintf("append %d", i), err)
		}
		out.Append = append(out.Append, e)
		c.appended[a.Type] = append(c.appended[a.Type], v)
		if h, ok := c.history[a.Type]; ok {
			c.history[a.Type] = append(h, v)
		}
		c.env.Entries++
	}
	for i := range p.ops {
		reqs, err := c.buildOps(&p.ops[i])
		if err != nil {
			return out, c.errorf(p.ops[i].at, fmt.Sprintf("op %d (%s)", i, p.ops[i].Kind), err)
		}
		out.Ops = append(out.Ops, reqs...)
	}
	for i, t := range p.transitions {
		ok, err := t.If.eval(&c.env)
		if err != nil {
			return out, c.errorf(t.at, fmt.Sprintf("transition %d: if", i), err)
		}
		if !ok {
			continue
		}
		if t.Next != nil {
			out.Next = t.Next.name
			return out, nil
		}
		end, err := c.buildEnd(t.End)
		if err != nil {
			return out, c.errorf(t.at, fmt.Sprintf("transition %d: end", i), err)
		}
		out.End = end
		return out, nil
	}
	if len(p.transitions) > 0 {
		return out, c.errorf(p.at, "transitions", fmt.Errorf("no transition matched"))
	}
	return out, nil // no transitions: the run ends (succeeded) once the ops finish
}

// eval evaluates a condition; an absent one is true.
func (e *exprBool) eval(env *Env) (bool, error) {
	if e == nil {
		return true, nil
	}
	return e.c.evalBool(env)
}

// buildEnv fills the expression environment from the phase input.
func (c *call) buildEnv() error {
	in, fw := c.in, c.p.wf
	settings, err := fw.settingsOf(in.Run.Settings)
	if err != nil {
		return c.errorf(c.p.at, "settings", err)
	}
	vars := make(map[string]any, len(fw.varNames))
	for k, v := range fw.vars {
		vars[k] = v
	}
	for _, k := range fw.varNames {
		raw := in.State.Var(k)
		if raw == nil {
			continue
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return c.errorf(c.p.at, "var "+k, err)
		}
		vars[k] = v
	}
	results := make([]ResultView, len(in.Results))
	for i, r := range in.Results {
		results[i] = newResultView(r)
	}
	u, l := in.State.Usage()
	c.env = Env{
		Vars:     vars,
		Settings: settings,
		Results:  results,
		Task:     in.Run.Task,
		Step:     int(in.Run.Step),
		Phase:    c.p.name,
		Entries:  in.State.Len(),
		Usage:    UsageView{Tokens: u.Tokens, Actions: u.Actions, Seconds: u.Seconds, Cost: u.Cost},
		Limits:   LimitsView{Tokens: l.Tokens, Actions: l.Actions, Seconds: l.Seconds, Cost: l.Cost},
		Run:      RunView{ID: in.Run.ID, ParentID: in.Run.ParentID, Workflow: in.Run.Workflow},
		History:  c.historyOf,
	}
	return nil
}

// historyOf returns the decoded data of the entries of type typ: those in
// the state, then those appended earlier in this call. A decode failure
// panics, which expr reports as the expression's error.
func (c *call) historyOf(typ string) []any {
	h, ok := c.history[typ]
	if !ok {
		h = []any{}
		for i := 0; i < c.in.State.Len(); i++ {
			e := c.in.State.Entry(i)
			if e.Type != typ {
				continue
			}
			var v any
			if err := json.Unmarshal(e.Data, &v); err != nil {
				panic(fmt.Sprintf("decode %s entry %d: %v", typ, e.Seq, err))
			}
			h = append(h, v)
		}
		h = append(h, c.appended[typ]...)
		c.history[typ] = h
	}
	return h[:len(h):len(h)]
}

// buildOps renders one op declaration into requests (several with for_each).
func (c *call) buildOps(o *opDoc) ([]operations.Request, error) {
	items := []any{nil}
	each := o.ForEach != nil
	if each {
		v, err := o.ForEach.c.eval(&c.env)
		if err != nil {
			return nil, fmt.Errorf("for_each: %w", err)
		}
		if v, err = normalize(v); err != nil {
			return nil, fmt.Errorf("for_each: %w", err)
		}
		list, ok := v.([]any)
		if !ok && v != nil {
			return nil, fmt.Errorf("for_each: got %T, want a list", v)
		}
		items = list
	}
	defer func() { c.env.Item, c.env.Index = nil, 0 }()
	var reqs []operations.Request
	for i, item := range items {
		c.env.Item, c.env.Index = item, i
		ok, err := o.If.eval(&c.env)
		if err != nil {
			return nil, fmt.Errorf("if: %w", err)
		}
		if !ok {
			continue
		}
		req, err := c.buildOp(o)
		if err != nil {
			if each {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			return nil, err
		}
		reqs = append(reqs, req)
	}
	return reqs, nil
}

func (c *call) buildOp(o *opDoc) (operations.Request, error) {
	var req operations.Request
	wire := map[string]any{"type": o.Kind}
	if o.Params != nil {
		v, err := o.Params.t.eval(&c.env)
		if err != nil {
			return req, fmt.Errorf("params: %w", err)
		}
		if _, ok := v.(map[string]any); !ok && v != nil {
			return req, fmt.Errorf("params: got %T, want a mapping", v)
		}
		wire["params"] = v
	}
	if o.Meta != nil {
		v, err := o.Meta.t.eval(&c.env)
		if err != nil {
			return req, fmt.Errorf("meta: %w", err)
		}
		m, ok := v.(map[string]any)
		if !ok && v != nil {
			return req, fmt.Errorf("meta: got %T, want a mapping", v)
		}
		meta := make(map[string]string, len(m))
		for k, x := range m {
			s, err := stringify(x)
			if err != nil {
				return req, fmt.Errorf("meta %s: %w", k, err)
			}
			meta[k] = s
		}
		wire["meta"] = meta
	}
	b, err := json.Marshal(wire)
	if err != nil {
		return req, err
	}
	if err := json.Unmarshal(b, &req); err != nil {
		return req, err
	}
	if err := req.Validate(); err != nil {
		return req, err
	}
	return req, nil
}

func (c *call) buildEnd(e *endDoc) (*phases.End, error) {
	end := &phases.End{Failed: e.Failed}
	if e.Reason != nil {
		s, err := e.Reason.t.evalString(&c.env)
		if err != nil {
			return nil, fmt.Errorf("reason: %w", err)
		}
		end.Reason = s
	}
	if e.Result != nil {
		v, err := e.Result.t.eval(&c.env)
		if err != nil {
			return nil, fmt.Errorf("result: %w", err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("result: %w", err)
		}
		end.Result = b
	}
	return end, nil
}
