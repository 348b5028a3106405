package triframe

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/agent"
)

// Phase names.
const (
	PhaseInit             = "init"
	PhaseAdvisor          = "advisor"
	PhaseActor            = "actor"
	PhaseAdvisorRatings   = "advisor_ratings"
	PhaseAggregateRatings = "aggregate_ratings"
	PhaseProcess          = "process"
	PhaseToolOutput       = "tool_output"
	PhaseSubagents        = "subagents"
	PhaseTournament       = "tournament"
)

// End reasons of triframe runs (besides the engine's limit_* reasons).
const (
	ReasonSubmitted     = "submitted"
	ReasonConcluded     = "concluded"
	ReasonNoValidAction = "no_valid_action"
)

// Meta keys of triframe's operations. A generate's role is the shared
// operations.MetaRole, so that a model stand-in answers in kind.
const (
	metaRole    = operations.MetaRole
	metaIndex   = "index"
	metaAdvice  = "advice"
	metaAgent   = "agent"
	metaGroup   = "group"
	metaA       = "a"
	metaB       = "b"
	roleAdvisor = operations.ModelRoleAdvisor
	roleActor   = operations.ModelRoleActor
	roleRater   = operations.ModelRoleRater
	roleJudge   = operations.ModelRoleJudge
)

// typed hands triframe's phases their parsed settings (see phases.Typed).
var typed = phases.NewTyped(ParseSettings)

// loadVars reads the run's vars (the timeout defaults to the settings').
func loadVars(in phases.Input, s *Settings) (vars, error) {
	v := vars{Timeout: s.Timeout}
	if _, err := phases.GetVar(in.State, varState, &v); err != nil {
		return v, err
	}
	return v, nil
}

func lastEntry[T any](st phases.State, typ string) (T, bool, error) {
	var v T
	i := phases.Last(st, typ)
	if i < 0 {
		return v, false, nil
	}
	err := st.Entry(i).Decode(&v)
	return v, err == nil, err
}

// resultIndex returns the index label triframe puts on its advisor, actor,
// rater and subagent ops, or -1 when the label is absent; a malformed label
// (only a damaged journal has one) is an error naming the phase's role.
func resultIndex(r operations.Result) (int, error) {
	n, ok, err := r.Meta.Int(metaIndex)
	if err != nil {
		return 0, fmt.Errorf("%s result: %w", r.Meta[metaRole], err)
	}
	if !ok {
		return -1, nil
	}
	return n, nil
}

// pending is a State that also shows the entries a phase is appending.
type pending struct {
	phases.State
	add []phases.Entry
}

func (p pending) Len() int { return p.State.Len() + len(p.add) }
func (p pending) Entry(i int) phases.Entry {
	if n := p.State.Len(); i >= n {
		return p.add[i-n]
	}
	return p.State.Entry(i)
}

// Init checks the settings, records the task and sets up the run's vars.
func Init(in phases.Input, s *Settings) (phases.Output, error) {
	v, err := loadVars(in, s)
	if err != nil {
		return phases.Output{}, err
	}
	var out phases.Output
	tools := append(s.Toolset().Names(), s.Tools...)
	out.Append = append(out.Append, phases.MustEntry(EntryTask, Task{
		Summary: "task: " + agent.Line(in.Run.Task, 200),
		Task:    in.Run.Task, Tools: tools, Mode: s.Mode(),
	}))
	v.Timeout = s.Timeout
	if err := out.SetVar(varState, v); err != nil {
		return out, err
	}
	out.Next = PhaseAdvisor
	return out, nil
}

// Advisor asks every advisor for advice, or goes straight to the actors
// when advising is off (or no advisor is configured).
func Advisor(in phases.Input, s *Settings) (phases.Output, error) {
	out := phases.Output{Next: PhaseActor}
	if !s.Advising() {
		return out, nil
	}
	msgs, err := advisorMessages(in, s, s.Toolset().Names())
	if err != nil {
		return out, err
	}
	var tools []operations.Tool
	choice := "auto"
	if s.Mode() == agent.ModeTools {
		tools = agent.Tools(agent.ToolAdvise)
		if s.RequireFunctionCall {
			choice = agent.ToolAdvise
		}
	}
	for i, m := range s.Advisors {
		out.Ops = append(out.Ops, agent.WithFormat(operations.NewGenerate(m.Request(msgs, tools, choice)).
			WithMeta(metaRole, roleAdvisor).WithMeta(metaIndex, strconv.Itoa(i)), s.Mode()))
	}
	return out, nil
}

// Actor records the advisors' advice, then asks every actor for its next
// action: twice per actor when advising is on (with and without the advice
// in its history), once otherwise.
func Actor(in phases.Input, s *Settings) (phases.Output, error) {
	out := phases.Output{Next: PhaseAdvisorRatings}
	for _, r := range in.Results {
		if r.Meta[metaRole] != roleAdvisor {
			continue
		}
		i, err := resultIndex(r)
		if err != nil {
			return phases.Output{}, err
		}
		out.Append = append(out.Append, adviceEntries(r, i, s.Mode())...)
	}
	view := pending{in.State, out.Append}
	in.State = view
	tools := s.Toolset().Names()
	var defs []operations.Tool
	choice := "auto"
	if s.Mode() == agent.ModeTools {
		defs = append(agent.Tools(tools...), agent.SandboxTools(s.Tools, s.SandboxTools)...)
		if s.RequireFunctionCall {
			choice = "required"
		}
	}
	variants := []bool{false}
	if s.Advising() {
		variants = []bool{true, false}
	}
	var byVariant [2][]operations.Message
	var err error
	if byVariant[1], byVariant[0], err = actorMessages(in, s, tools, s.Advising()); err != nil {
		return out, err
	}
	for i, m := range s.Actors {
		for _, with := range variants {
			k, label := 0, "without"
			if with {
				k, label = 1, "with"
			}
			out.Ops = append(out.Ops, agent.WithFormat(operations.NewGenerate(m.Request(byVariant[k], defs, choice)).
				WithMeta(metaRole, roleActor).WithMeta(metaIndex, strconv.Itoa(i)).WithMeta(metaAdvice, label), s.Mode()))
		}
	}
	return out, nil
}

func adviceEntries(r operations.Result, i int, mode agent.Mode) []phases.Entry {
	g := operations.Generate.Result(r)
	if r.Error != "" || g == nil {
		why := "generate failed: " + r.Error
		return []phases.Entry{phases.MustEntry(EntryAdvice, Advice{
			Summary: fmt.Sprintf("advisor %d gave no advice (%s)", i, agent.Line(why, 120)), Invalid: why, Advisor: i})}
	}
	var out []phases.Entry
	for j, o := range g.Outputs {
		a := Advice{Advisor: i, Sample: j}
		p := agent.ParseOutput(o, mode, []string{agent.ToolAdvise})
		switch {
		case p.Call != nil:
			var args agent.AdviseArgs
			_ = p.Call.Decode(&args)
			a.Advice = strings.TrimSpace(args.Advice)
			a.Summary = "advice: " + agent.Line(a.Advice, 200)
		default:
			a.Invalid = p.Invalid
			if a.Invalid == "" {
				a.Invalid = "no advise call in the reply"
			}
			a.Summary = fmt.Sprintf("advisor %d gave no usable advice (%s)", i, agent.Line(a.Invalid, 120))
		}
		out = append(out, phases.MustEntry(EntryAdvice, a))
	}
	return out
}

// AdvisorRatings collects the actors' options: invalid calls and empty
// outputs are dropped, duplicates merged. No option sends the step back to
// the actors (bounded by max_actor_retries, then the run ends with
// no_valid_action); one option (or no raters) is chosen at once; several
// are sent to the raters.
func AdvisorRatings(in phases.Input, s *Settings) (phases.Output, error) {
	v, err := loadVars(in, s)
	if err != nil {
		return phases.Output{}, err
	}
	var out phases.Output
	mode := s.Mode()
	tools := s.Toolset().Names()
	var opts, callless []agent.Option
	var errs, invalid []string
	dropped, merged := 0, 0
	for _, r := range in.Results {
		if r.Meta[metaRole] != roleActor {
			continue
		}
		g := operations.Generate.Result(r)
		if r.Error != "" || g == nil {
			errs = append(errs, fmt.Sprintf("actor %s: %s", r.Meta[metaIndex], r.Error))
			continue
		}
		for j, o := range g.Outputs {
			p := agent.ParseOutputSandbox(o, mode, tools, s.Tools)
			opt := agent.Option{Content: p.Content, Call: p.Call, Invalid: p.Invalid, Reasoning: o.Reasoning,
				Source: fmt.Sprintf("actor %s %s advice #%d", r.Meta[metaIndex], r.Meta[metaAdvice], j)}
			if p.Call == nil {
				dropped++
				if p.Invalid != "" {
					invalid = append(invalid, p.Invalid)
				}
				if p.Content != "" || p.Invalid != "" {
					callless = append(callless, opt)
				}
				continue
			}
			if dup(opts, opt) {
				merged++
				continue
			}
			if opt.Call.ID == "" {
				opt.Call.ID = fmt.Sprintf("call_%d_%d", in.Run.Step, len(opts))
			}
			opts = append(opts, opt)
		}
	}
	summary := fmt.Sprintf("%d option(s)", len(opts))
	for i, o := range opts {
		sep := ": "
		if i > 0 {
			sep = " · "
		}
		summary += sep + fmt.Sprintf("[%d] %s", i, agent.Line(o.Describe(), 80))
	}
	if dropped+merged > 0 {
		summary += fmt.Sprintf(" (%d without a valid call dropped, %d duplicates merged)", dropped, merged)
	}
	out.Append = append(out.Append, phases.MustEntry(EntryOptions, Options{Summary: summary, Options: opts,
		Dropped: dropped, Merged: merged, Errors: errs}))
	switch {
	case len(opts) == 0:
		return retryActors(out, s, v, noOptionsMessage(callless, invalid, errs, tools, mode), nil)
	case len(opts) == 1 || len(s.Raters) == 0:
		note := ""
		if len(opts) > 1 {
			note = "no raters configured; the first option is taken"
		}
		return choose(in, s, out, v, opts[0], 0, nil, note)
	}
	msgs, err := raterMessages(in, s, opts)
	if err != nil {
		return out, err
	}
	var defs []operations.Tool
	choice := "auto"
	if mode == agent.ModeTools {
		defs = agent.Tools(agent.ToolRateOptions)
		if s.RequireFunctionCall {
			choice = agent.ToolRateOptions
		}
	}
	for i, m := range s.Raters {
		out.Ops = append(out.Ops, operations.NewGenerate(m.Request(msgs, defs, choice)).
			WithMeta(metaRole, roleRater).WithMeta(metaIndex, strconv.Itoa(i)))
	}
	if err := out.SetVar(varState, v); err != nil {
		return out, err
	}
	out.Next = PhaseAggregateRatings
	return out, nil
}

// sandboxName is the full name of the sandbox tool offered under the
// model name name.
func sandboxName(s *Settings, name string) (string, bool) {
	names, _ := agent.SandboxNames(s.Tools)
	full, ok := names[name]
	return full, ok
}

func dup(opts []agent.Option, o agent.Option) bool {
	for _, x := range opts {
		if x.Content == o.Content && x.Call.Same(*o.Call) {
			return true
		}
	}
	return false
}

func noOptionsMessage(callless []agent.Option, invalid, errs, tools []string, mode agent.Mode) string {
	var b strings.Builder
	b.WriteString("None of the proposed actions contained a valid tool call")
	switch {
	case len(invalid) > 0:
		b.WriteString(": " + agent.Line(invalid[0], 300))
		if len(invalid) > 1 {
			fmt.Fprintf(&b, " (and %d more invalid calls)", len(invalid)-1)
		}
	case len(errs) > 0 && len(callless) == 0:
		b.WriteString(" (the model requests failed: " + agent.Line(errs[0], 300) + ")")
	}
	b.WriteString(". Make exactly one call to one of: " + strings.Join(tools, ", "))
	if mode != agent.ModeTools {
		b.WriteString(", written as described in the instructions")
	}
	b.WriteString(".")
	return b.String()
}

// retryActors goes back to the actors with a warning, or, when the retries
// are used up, calls exhausted (nil: end the run with no_valid_action).
func retryActors(out phases.Output, s *Settings, v vars, msg string, exhausted func(phases.Output, vars) (phases.Output, error)) (phases.Output, error) {
	if v.Retries < *s.MaxActorRetries {
		v.Retries++
		w := agent.NewWarning(msg + fmt.Sprintf(" (retry %d of %d)", v.Retries, *s.MaxActorRetries))
		out.Append = append(out.Append, phases.MustEntry(EntryWarning, w))
		if err := out.SetVar(varState, v); err != nil {
			return out, err
		}
		out.Next = PhaseActor
		return out, nil
	}
	if exhausted != nil {
		return exhausted(out, v)
	}
	w := agent.NewWarning(fmt.Sprintf("%s Giving up: the actors made no usable proposal in %d attempts.", msg, *s.MaxActorRetries+1))
	out.Append = append(out.Append, phases.MustEntry(EntryWarning, w))
	out.End = &phases.End{Failed: true, Reason: ReasonNoValidAction}
	out.Next = ""
	return out, nil
}

// choose records the chosen option and hands it to process.
//
// With ask_human or in intervention mode the choice waits for a person
// instead: it is kept in the vars (Pending) and a human (approve or
// reject) or intervention (approve or replace) operation is asked; process
// records the choice once a person let it, or replaced it.
func choose(in phases.Input, s *Settings, out phases.Output, v vars, o agent.Option, index int, mean *float64, note string) (phases.Output, error) {
	summary := o.Describe()
	if mean != nil {
		summary += fmt.Sprintf(" (rated %.2f)", *mean)
	}
	if note != "" {
		summary += " — " + note
	}
	ch := Choice{Summary: summary, Option: o, Index: index, Mean: mean, Note: note}
	switch {
	case o.Call != nil && intervening(in, s):
		action, _ := json.Marshal(struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}{o.Call.Name, o.Call.Arguments})
		out.Ops = append(out.Ops, operations.NewIntervention("The agent chose: "+agent.Line(summary, 300)+". Approve it, or replace it with another action.", action))
		v.Pending = &ch
	case o.Call != nil && s.AskHuman:
		out.Ops = append(out.Ops, operations.NewHuman(operations.HumanRequest{
			Question: "Approve the agent's next action? " + agent.Line(summary, 300),
			Choices:  []string{answerApprove, answerReject}}))
		v.Pending = &ch
	default:
		out.Append = append(out.Append, phases.MustEntry(EntryChoice, ch))
	}
	v.Retries = 0
	if err := out.SetVar(varState, v); err != nil {
		return out, err
	}
	out.Next = PhaseProcess
	return out, nil
}

// AggregateRatings averages the ratings per option over every rater and
// sample and picks the best (ties: the lowest index). Nothing usable picks
// the first option; a best mean below rating_threshold sends the step back
// to the actors (bounded; when the retries are used up the best option is
// taken anyway, with a warning).
func AggregateRatings(in phases.Input, s *Settings) (phases.Output, error) {
	v, err := loadVars(in, s)
	if err != nil {
		return phases.Output{}, err
	}
	var out phases.Output
	opts, ok, err := lastEntry[Options](in.State, EntryOptions)
	if err != nil {
		return out, err
	}
	if !ok || len(opts.Options) == 0 {
		return out, fmt.Errorf("aggregate_ratings: no options entry to rate")
	}
	rt := Ratings{Best: -1}
	sums := make([]float64, len(opts.Options))
	scores := make([]OptionScore, len(opts.Options))
	for i := range scores {
		scores[i] = OptionScore{Option: i, Min: math.Inf(1), Max: math.Inf(-1)}
	}
	for _, r := range in.Results {
		if r.Meta[metaRole] != roleRater {
			continue
		}
		rater, err := resultIndex(r)
		if err != nil {
			return phases.Output{}, err
		}
		g := operations.Generate.Result(r)
		if r.Error != "" || g == nil {
			rt.Failed++
			continue
		}
		for j, o := range g.Outputs {
			c, err := agent.ParseStructured(o, s.Mode(), agent.ToolRateOptions)
			if err != nil {
				rt.Failed++
				continue
			}
			var args agent.RateOptionsArgs
			if c.Decode(&args) != nil {
				rt.Failed++
				continue
			}
			for _, g := range args.Ratings {
				if g.OptionIndex >= len(opts.Options) {
					rt.Ignored++
					continue
				}
				rt.Ratings = append(rt.Ratings, RaterRating{Rater: rater, Sample: j, Rating: g})
				sc := &scores[g.OptionIndex]
				sums[g.OptionIndex] += g.Rating
				sc.Count++
				sc.Min, sc.Max = math.Min(sc.Min, g.Rating), math.Max(sc.Max, g.Rating)
			}
		}
	}
	var parts []string
	for i := range scores {
		if scores[i].Count == 0 {
			scores[i].Min, scores[i].Max = 0, 0
			parts = append(parts, fmt.Sprintf("[%d] unrated", i))
			continue
		}
		scores[i].Mean = sums[i] / float64(scores[i].Count)
		parts = append(parts, fmt.Sprintf("[%d] %.2f (n=%d)", i, scores[i].Mean, scores[i].Count))
		if rt.Best < 0 || scores[i].Mean > scores[rt.Best].Mean {
			rt.Best = i
		}
	}
	rt.Scores = scores
	rt.Summary = "ratings: " + strings.Join(parts, " · ")
	if rt.Failed > 0 {
		rt.Summary += fmt.Sprintf(" (%d rater outputs unusable)", rt.Failed)
	}
	if rt.Best < 0 {
		rt.Summary += " → nothing usable, taking option 0"
		out.Append = append(out.Append, phases.MustEntry(EntryRatings, rt))
		return choose(in, s, out, v, opts.Options[0], 0, nil, "no usable ratings; the first option is taken")
	}
	best := scores[rt.Best]
	rt.Summary += fmt.Sprintf(" → option %d", rt.Best)
	out.Append = append(out.Append, phases.MustEntry(EntryRatings, rt))
	mean := best.Mean
	if mean < *s.RatingThreshold {
		msg := fmt.Sprintf("Every proposed action was rated poorly; the best (%s) has a mean rating of %.2f, below %.2f. Propose a different, better action.",
			agent.Line(opts.Options[rt.Best].Describe(), 120), mean, *s.RatingThreshold)
		return retryActors(out, s, v, msg, func(out phases.Output, v vars) (phases.Output, error) {
			note := fmt.Sprintf("taken despite its low rating: no better proposal after %d retries", *s.MaxActorRetries)
			out.Append = append(out.Append, phases.MustEntry(EntryWarning, agent.NewWarning("The actors found no well-rated action; the best-rated one is "+note+".")))
			return choose(in, s, out, v, opts.Options[rt.Best], rt.Best, &mean, note)
		})
	}
	return choose(in, s, out, v, opts.Options[rt.Best], rt.Best, &mean, "")
}

// Process executes the chosen option: bash, python, score and score_log
// become operations (then tool_output); set_timeout changes the timeout;
// submit submits and ends the run; conclude ends a subagent with its
// report; launch_subagents spawns the subagents (then subagents).
func Process(in phases.Input, s *Settings) (phases.Output, error) {
	v, err := loadVars(in, s)
	if err != nil {
		return phases.Output{}, err
	}
	var out phases.Output
	ch, ok, err := lastEntry[Choice](in.State, EntryChoice)
	if err != nil {
		return out, err
	}
	if v.Pending != nil {
		// A person decided on the chosen action (see choose).
		var rejected string
		ch, rejected = decide(in, *v.Pending)
		ok, v.Pending = true, nil
		if rejected != "" {
			out.Append = append(out.Append, phases.MustEntry(EntryWarning, agent.NewWarning(rejected)))
			out.Next = PhaseAdvisor
			if err := out.SetVar(varState, v); err != nil {
				return out, err
			}
			return out, nil
		}
		out.Append = append(out.Append, phases.MustEntry(EntryChoice, ch))
	}
	if !ok || ch.Option.Call == nil {
		why := "The chosen action has no valid tool call"
		if ch.Option.Invalid != "" {
			why += ": " + ch.Option.Invalid
		}
		out.Append = append(out.Append, phases.MustEntry(EntryWarning, agent.NewWarning(why+".")))
		out.Next = PhaseAdvisor
		return out, nil
	}
	c := *ch.Option.Call
	timeout := float64(v.Timeout)
	answer := func(text string, failed bool) {
		out.Append = append(out.Append, phases.MustEntry(EntryToolOutput, agent.ToolOutput{
			Summary: c.Name + ": " + agent.Line(text, 200), Tool: c.Name, CallID: c.ID, Output: text, Failed: failed}))
		out.Next = PhaseAdvisor
	}
	switch c.Name {
	case agent.ToolBash:
		var a agent.BashArgs
		_ = c.Decode(&a)
		out.Ops = append(out.Ops, operations.NewBash(a.Command, timeout))
		out.Next = PhaseToolOutput
	case agent.ToolPython:
		var a agent.PythonArgs
		_ = c.Decode(&a)
		out.Ops = append(out.Ops, operations.NewPython(a.Code, timeout))
		out.Next = PhaseToolOutput
	case agent.ToolScore:
		out.Ops = append(out.Ops, operations.NewScore())
		out.Next = PhaseToolOutput
	case agent.ToolScoreLog:
		out.Ops = append(out.Ops, operations.NewScoreLog())
		out.Next = PhaseToolOutput
	case agent.ToolSetTimeout:
		var a agent.SetTimeoutArgs
		if err := c.Decode(&a); err != nil || a.Timeout < agent.MinTimeout || a.Timeout > agent.MaxTimeout {
			answer(fmt.Sprintf("Error: the timeout must be a whole number of seconds between %d and %d; it stays %d seconds.", agent.MinTimeout, agent.MaxTimeout, v.Timeout), true)
			break
		}
		v.Timeout = a.Timeout
		answer(fmt.Sprintf("Timeout set to %d seconds: later bash and python calls are interrupted after that long.", a.Timeout), false)
	case agent.ToolSubmit:
		var a agent.SubmitArgs
		_ = c.Decode(&a)
		out.Ops = append(out.Ops, operations.NewSubmit(a.Answer))
		out.End = &phases.End{Reason: ReasonSubmitted}
		out.Next = ""
	case agent.ToolConclude:
		var a agent.ConcludeArgs
		_ = c.Decode(&a)
		report, err := conclusionReport(in.State, s.Subagents.ReportActions, s.OutputLimit)
		if err != nil {
			return out, err
		}
		con := Conclusion{Summary: "conclude: " + agent.Line(a.Result, 200), Conclusion: a.Result, Report: report}
		out.Append = append(out.Append, phases.MustEntry(EntryConclusion, con))
		con.Summary = ""
		result, _ := json.Marshal(con)
		out.End = &phases.End{Reason: ReasonConcluded, Result: result}
		out.Next = ""
	case agent.ToolLaunchSubagents:
		ops, msg := launch(in, s, c)
		if msg != "" {
			answer(msg, true)
			break
		}
		out.Ops = ops
		out.Next = PhaseSubagents
	default:
		full, ok := sandboxName(s, c.Name)
		if !ok {
			answer(fmt.Sprintf("Error: the tool %s is not available here.", c.Name), true)
			break
		}
		req, err := agent.SandboxCall(full, string(c.Arguments), timeout)
		if err != nil {
			answer("Error: "+err.Error(), true)
			break
		}
		out.Ops = append(out.Ops, req.WithMeta("call_id", c.ID))
		out.Next = PhaseToolOutput
	}
	if err := out.SetVar(varState, v); err != nil {
		return out, err
	}
	return out, nil
}

// Answers of the ask_human approval question.
const (
	answerApprove = "approve"
	answerReject  = "reject"
)

// intervening reports whether the run is in intervention mode: the
// intervention setting, or the run var "intervention" set to true (a fork
// switching it on).
func intervening(in phases.Input, s *Settings) bool {
	if s.Intervention {
		return true
	}
	var on bool
	b := in.State.Var(VarIntervention)
	return b != nil && json.Unmarshal(b, &on) == nil && on
}

// VarIntervention is the run var that switches intervention mode on
// (true) from the step it is set at, e.g. in a fork's vars.
const VarIntervention = "intervention"

// decide applies a person's decision on a pending choice: the choice to
// run (the operator's replacement, or the agent's), or why none runs.
func decide(in phases.Input, ch Choice) (Choice, string) {
	for _, r := range in.Results {
		switch r.Kind {
		case operations.KindHuman:
			h := operations.Human.Result(r)
			if h == nil {
				return ch, fmt.Sprintf("Nobody approved the action %s (%s); it was not run.", agent.Line(ch.Option.Describe(), 120), r.Error)
			}
			if h.Text() != answerApprove {
				return ch, fmt.Sprintf("The operator rejected the action %s; it was not run. Propose a different action.", agent.Line(ch.Option.Describe(), 120))
			}
			return ch, ""
		case operations.KindIntervention:
			d := operations.Intervention.Result(r)
			if d == nil {
				return ch, fmt.Sprintf("Nobody approved the action %s (%s); it was not run.", agent.Line(ch.Option.Describe(), 120), r.Error)
			}
			if d.Approved || len(d.Action) == 0 {
				return ch, ""
			}
			var call agent.Call
			if err := json.Unmarshal(d.Action, &call); err != nil || call.Name == "" {
				return ch, "The operator's replacement action could not be read; nothing was run."
			}
			if len(call.Arguments) == 0 {
				call.Arguments = json.RawMessage(`{}`)
			}
			call.ID = fmt.Sprintf("call_operator_%d", in.Run.Step)
			o := agent.Option{Call: &call, Source: "operator"}
			return Choice{Summary: o.Describe() + " — replaced by the operator (the agent chose " + agent.Line(ch.Option.Describe(), 120) + ")",
				Option: o, Index: -1, Note: "replaced by the operator"}, ""
		}
	}
	return ch, ""
}

// ToolOutput formats the result of the executed call, with a usage notice,
// for the model's history.
func ToolOutput(in phases.Input, s *Settings) (phases.Output, error) {
	out := phases.Output{Next: PhaseAdvisor}
	ch, _, err := lastEntry[Choice](in.State, EntryChoice)
	if err != nil {
		return out, err
	}
	t := agent.ToolOutput{Output: "(no result)", Failed: true}
	if ch.Option.Call != nil {
		t.Tool, t.CallID = ch.Option.Call.Name, ch.Option.Call.ID
	}
	if len(in.Results) > 0 {
		res := in.Results[len(in.Results)-1]
		t.Output = agent.FormatResult(res, s.OutputLimit)
		t.Images = agent.ResultImages(res)
		t.Failed = agent.Failed(res)
		if t.Tool == "" {
			t.Tool = string(res.Kind)
		}
		t.Summary = outputSummary(res, t.Output)
	}
	if t.Summary == "" {
		t.Summary = t.Tool + ": " + agent.Line(t.Output, 200)
	}
	u, l := in.State.Usage()
	t.Notice = agent.UsageNotice(s.Limit(), u, l, s.thresholds())
	out.Append = append(out.Append, phases.MustEntry(EntryToolOutput, t))
	return out, nil
}

func outputSummary(res operations.Result, formatted string) string {
	b := operations.Bash.Result(res)
	switch {
	case res.Error != "":
		return fmt.Sprintf("%s failed: %s", res.Kind, agent.Line(res.Error, 200))
	case b != nil:
		head := agent.Line(b.Stdout, 160)
		if head == "" {
			head = agent.Line(b.Stderr, 160)
		}
		if head == "" {
			head = "(no output)"
		}
		if b.TimedOut {
			return "bash timed out: " + head
		}
		return fmt.Sprintf("bash exit %d: %s", b.ExitCode, head)
	}
	if operations.Sandbox.Result(res) != nil {
		formatted = strings.Join(strings.Fields(formatted), " ")
	}
	return fmt.Sprintf("%s: %s", res.Kind, agent.Line(formatted, 200))
}

// conclusionReport renders a subagent's last actions and their outputs,
// oldest first, for the judge and the parent.
func conclusionReport(st phases.State, actions, limit int) (string, error) {
	var rev []string
	per := max(200, limit/max(1, actions))
	for i := st.Len() - 1; i >= 0 && len(rev) < 2*actions; i-- {
		e := st.Entry(i)
		switch e.Type {
		case EntryChoice:
			c, err := decode[Choice](e.Data)
			if err != nil {
				return "", err
			}
			rev = append(rev, "Action: "+c.Option.Describe())
		case EntryToolOutput:
			t, err := decode[agent.ToolOutput](e.Data)
			if err != nil {
				return "", err
			}
			rev = append(rev, "Output: "+agent.Trim(t.Output, per))
		}
	}
	var b strings.Builder
	for k := len(rev) - 1; k >= 0; k-- {
		b.WriteString(rev[k] + "\n")
	}
	if b.Len() == 0 {
		return "(no actions)", nil
	}
	return strings.TrimRight(b.String(), "\n"), nil
}
