package react

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/agent"
)

// Name is the workflow's registry name.
const Name = "react"

// Phase names.
const (
	PhaseStart   = "start"
	PhasePrompt  = "prompt"
	PhaseAct     = "act"
	PhaseObserve = "observe"
)

// ReasonGenerateFailed ends a run whose model call failed without a
// failure code (a scripted error line, a journal from before codes). A
// call that failed with one ends the run with the code as its reason:
// model_error, rate_limited, timeout, unavailable (operations.Code).
const ReasonGenerateFailed = "generate_failed"

func init() { phases.Register(Workflow()) }

// Workflow returns the react workflow declaration.
func Workflow() phases.Workflow {
	return phases.Workflow{
		Name:        Name,
		Description: "Tool-calling agent loop: every tool call of a turn runs in parallel and gets its own tool message; ends on submit, on a reply without tool calls or at max_turns; optional context folding.",
		Start:       PhaseStart,
		Phases: []phases.PhaseSpec{
			{Name: PhaseStart, Run: typed.Phase(Start), Next: []string{PhasePrompt, PhaseAct}},
			{Name: PhasePrompt, Run: typed.Phase(Prompt), Next: []string{PhaseAct}},
			{Name: PhaseAct, Run: typed.Phase(Act), Next: []string{PhaseObserve}},
			{Name: PhaseObserve, Run: typed.Phase(Observe), Next: []string{PhaseAct}},
		},
		Settings:      Settings{},
		CheckSettings: CheckSettings,
	}
}

// Start reads the system prompt file if one is configured, or opens the
// conversation.
func Start(in phases.Input, s *Settings) (phases.Output, error) {
	if s.SystemPrompt == "" && s.SystemPromptFile != "" {
		return phases.Output{Ops: []operations.Request{operations.NewReadFile(s.SystemPromptFile)}, Next: PhasePrompt}, nil
	}
	sys := string(s.SystemPrompt)
	if sys == "" {
		sys = DefaultSystemPrompt
	}
	return open(in, s, sys)
}

// Prompt opens the conversation with the system prompt read from the file.
func Prompt(in phases.Input, s *Settings) (phases.Output, error) {
	if len(in.Results) != 1 {
		return phases.Output{}, fmt.Errorf("%w: prompt got %d results, want 1", ErrState, len(in.Results))
	}
	r := in.Results[0]
	f := operations.ReadFile.Result(r)
	switch {
	case r.Error != "":
		return fail(in, s, loop{}, nil, "system_prompt_file: "+r.Error)
	case f == nil || !f.Exists:
		return fail(in, s, loop{}, nil, fmt.Sprintf("system_prompt_file: %s does not exist", s.SystemPromptFile))
	}
	return open(in, s, f.Content)
}

// open appends the system prompt and the task and asks for the first reply.
func open(in phases.Input, s *Settings, system string) (phases.Output, error) {
	var out phases.Output
	input := []operations.Message{{Role: operations.RoleUser, Content: in.Run.Task}}
	if len(s.InputMessages) > 0 {
		input = s.InputMessages
		if input[0].Role == operations.RoleSystem {
			system, input = input[0].Content, input[1:]
		}
	}
	msgs := []Message{{Message: operations.Message{Role: operations.RoleSystem, Content: system}, Summary: "system: " + agent.Line(system, 160)}}
	for _, m := range input {
		summary := "task: " + agent.Line(m.Content, 160)
		if m.Role != operations.RoleUser {
			summary = m.Role + ": " + agent.Line(m.Content, 160)
		}
		msgs = append(msgs, Message{Message: m, Summary: summary})
	}
	for _, m := range msgs {
		out.Append = append(out.Append, phases.MustEntry(EntryMessage, m))
	}
	out.Ops = kwargsOps(s)
	return generate(out, s, loop{}, toWire(msgs), "")
}

// purposeKwargs marks the ops that hand the task's kwargs to the tools.
const purposeKwargs = "task_kwargs"

// kwargsOps returns the ops that give the offered bash and python tools
// the task's kwargs; they run beside the first generate.
func kwargsOps(s *Settings) []operations.Request {
	if len(s.TaskKwargs) == 0 {
		return nil
	}
	all, _ := json.Marshal(s.TaskKwargs)
	var ops []operations.Request
	tools := s.ToolNames()
	if contains(tools, agent.ToolBash) {
		cmd := "export FLOCK_TASK_KWARGS=" + shellQuote(string(all))
		for _, k := range slices.Sorted(maps.Keys(s.TaskKwargs)) {
			if !shellName.MatchString(k) {
				continue
			}
			v := string(s.TaskKwargs[k])
			var str string
			if json.Unmarshal(s.TaskKwargs[k], &str) == nil {
				v = str
			}
			cmd += " " + k + "=" + shellQuote(v)
		}
		ops = append(ops, operations.NewBash(cmd, 0).WithMeta("purpose", purposeKwargs))
	}
	if contains(tools, agent.ToolPython) {
		lit, _ := json.Marshal(string(all))
		ops = append(ops, operations.NewPython("import json as _flock_json\ntask_kwargs = _flock_json.loads("+string(lit)+")\ndel _flock_json", 0).WithMeta("purpose", purposeKwargs))
	}
	return ops
}

var shellName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// generate asks for the next reply with ctx as the prompt.
func generate(out phases.Output, s *Settings, l loop, ctx []operations.Message, toolChoice string) (phases.Output, error) {
	if s.ContextChars > 0 {
		ctx, _ = agent.Budget{Limit: s.ContextChars, KeepFirst: 2, KeepLast: lastTurn(ctx)}.Fit(ctx)
	}
	m := s.Model.Model
	m.N = 1
	if toolChoice == "" {
		toolChoice = s.ToolChoice
	}
	tools := append(agent.Tools(s.ToolNames()...), agent.SandboxTools(s.ToolNames(), s.SandboxTools)...)
	req := m.Request(ctx, tools, toolChoice)
	// The role tells a model stand-in (the simulated provider) what to
	// play; live models ignore it.
	out.Ops = append(out.Ops, operations.NewGenerate(req).WithMeta(operations.MetaRole, operations.ModelRoleActor))
	l.Pending = nil
	if err := out.SetVar(varLoop, l); err != nil {
		return out, err
	}
	out.Next = PhaseAct
	return out, nil
}

// lastTurn counts the messages from the newest assistant message on (its
// calls, their results, a nudge): they stay in every prompt, clipped when
// they do not fit context_chars whole.
func lastTurn(ctx []operations.Message) int {
	for i := len(ctx) - 1; i >= 2; i-- {
		if ctx[i].Role == operations.RoleAssistant {
			return len(ctx) - i
		}
	}
	return 0
}

// kwargsError says why a task_kwargs op failed, or "".
func kwargsError(r operations.Result) string {
	b, p := operations.Bash.Result(r), operations.Python.Result(r)
	switch {
	case r.Error != "":
		return r.Error
	case b != nil && b.ExitCode != 0:
		return agent.Line(b.Stderr, 200)
	case p != nil && p.Error != "":
		return agent.Line(p.Error, 200)
	}
	return ""
}

// Act records the model's reply and runs its tool calls, all of them, in
// parallel; a reply without tool calls is the final answer.
func Act(in phases.Input, s *Settings) (phases.Output, error) {
	l, err := getLoop(in.State)
	if err != nil {
		return phases.Output{}, err
	}
	var results []operations.Result
	for _, r := range in.Results {
		if r.Meta["purpose"] != purposeKwargs {
			results = append(results, r)
			continue
		}
		if msg := kwargsError(r); msg != "" {
			return fail(in, s, l, nil, "task_kwargs: "+msg)
		}
	}
	if len(results) != 1 || results[0].Kind != operations.KindGenerate {
		return phases.Output{}, fmt.Errorf("%w: act wants one generate result, got %d results", ErrState, len(results))
	}
	r := results[0]
	g := operations.Generate.Result(r)
	if r.Error != "" || g == nil || len(g.Outputs) == 0 {
		msg := r.Error
		if msg == "" {
			msg = "the model returned no output"
		}
		// The run ends on any failed model call; its end reason is the
		// failure's code (ReasonGenerateFailed when the handler gave none).
		return failWith(in, s, l, nil, cmp.Or(string(r.Code), ReasonGenerateFailed), "generate: "+msg, msg)
	}
	o := g.Outputs[0]
	l.Turns++
	l.SegTurns++
	am := Message{
		Message:      operations.Message{Role: operations.RoleAssistant, Content: o.Content, Reasoning: o.Reasoning},
		Segment:      l.Segment,
		Turn:         l.Turns,
		FinishReason: o.FinishReason,
		TokenIDs:     o.TokenIDs,
		Usage:        &g.Usage,
	}
	for _, lp := range o.Logprobs {
		am.Logprobs = append(am.Logprobs, lp.Logprob)
	}
	var out phases.Output
	for i, tc := range o.ToolCalls {
		if tc.ID == "" {
			tc.ID = "call_" + strconv.Itoa(l.Turns) + "_" + strconv.Itoa(i)
		}
		am.ToolCalls = append(am.ToolCalls, tc)
	}
	if len(am.ToolCalls) == 0 {
		am.Summary = fmt.Sprintf("turn %d: %s", l.Turns, agent.Line(o.Content, 200))
		answer, source := ExtractAnswer(o.Content)
		return finish(in, s, l, []Message{am}, Result{Answer: answer, AnswerSource: source, TerminationReason: "env_done"})
	}
	var described []string
	sandboxNames, _ := agent.SandboxNames(s.ToolNames()) // checked by ParseSettings
	for _, tc := range am.ToolCalls {
		p := pending{ID: tc.ID, Name: tc.Name, Op: -1}
		if full, ok := sandboxNames[tc.Name]; ok {
			req, err := agent.SandboxCall(full, tc.Arguments, s.ToolTimeoutS)
			if err != nil {
				p.Invalid = err.Error()
				described = append(described, tc.Name+" (invalid)")
			} else {
				described = append(described, full+" "+agent.Line(string(operations.Sandbox.Params(req).Params), 80))
				p.Op = len(out.Ops)
				out.Ops = append(out.Ops, req.WithMeta("call_id", tc.ID))
			}
			l.Pending = append(l.Pending, p)
			continue
		}
		c, err := agent.Validate(tc.ID, tc.Name, tc.Arguments, s.ToolNames())
		if err != nil {
			p.Invalid = err.Error()
			described = append(described, tc.Name+" (invalid)")
			l.Pending = append(l.Pending, p)
			continue
		}
		described = append(described, agent.Describe(c))
		var req *operations.Request
		switch c.Name {
		case agent.ToolBash:
			var a agent.BashArgs
			_ = c.Decode(&a)
			r := operations.NewBash(a.Command, s.ToolTimeoutS)
			req = &r
		case agent.ToolPython:
			var a agent.PythonArgs
			_ = c.Decode(&a)
			r := operations.NewPython(a.Code, s.ToolTimeoutS)
			req = &r
		case agent.ToolSubmit:
			var a agent.SubmitArgs
			_ = c.Decode(&a)
			p.Text = a.Answer
			r := operations.NewSubmit(a.Answer)
			req = &r
		case agent.ToolSummarize:
			var a agent.SummarizeArgs
			_ = c.Decode(&a)
			p.Text = a.Summary
		}
		if req != nil {
			p.Op = len(out.Ops)
			out.Ops = append(out.Ops, req.WithMeta("call_id", tc.ID))
		}
		l.Pending = append(l.Pending, p)
	}
	am.Summary = fmt.Sprintf("turn %d: %s", l.Turns, agent.Line(strings.Join(described, "; "), 200))
	out.Append = append(out.Append, phases.MustEntry(EntryMessage, am))
	if err := out.SetVar(varLoop, l); err != nil {
		return out, err
	}
	out.Next = PhaseObserve
	return out, nil
}

// Observe answers every call of the turn with its own tool message, then
// ends on submit or max_turns, folds the context after a summarize call,
// nudges for a fold when the trigger is due, and asks for the next reply.
func Observe(in phases.Input, s *Settings) (phases.Output, error) {
	l, err := getLoop(in.State)
	if err != nil {
		return phases.Output{}, err
	}
	var (
		added     []Message
		submitted *pending
		summary   string
	)
	for i := range l.Pending {
		p := l.Pending[i]
		tm := Message{Message: operations.Message{Role: operations.RoleTool, ToolCallID: p.ID, Name: p.Name},
			Segment: l.Segment, Turn: l.Turns}
		failed := false
		switch {
		case p.Invalid != "":
			tm.Content = "Error: " + p.Invalid + ". Nothing was run; fix the call and try again."
			failed = true
		case p.Name == agent.ToolSummarize:
			tm.Content = "[Previous Summary]: " + p.Text
			if summary == "" {
				summary = p.Text
			}
		case p.Op < 0 || p.Op >= len(in.Results):
			return phases.Output{}, fmt.Errorf("%w: call %s has op %d of %d results", ErrState, p.ID, p.Op, len(in.Results))
		default:
			res := in.Results[p.Op]
			tm.Content = agent.FormatResult(res, s.OutputLimit)
			tm.Images = agent.ResultImages(res)
			failed = agent.Failed(res)
			if p.Name == agent.ToolSubmit && res.Error == "" && accepted(res) && submitted == nil {
				submitted = &l.Pending[i]
			}
		}
		status := "ok"
		if failed {
			status = "failed"
		}
		tm.Summary = fmt.Sprintf("%s %s: %s", p.Name, status, agent.Line(tm.Content, 160))
		added = append(added, tm)
	}
	l.Pending = nil
	if submitted != nil {
		return finish(in, s, l, added, Result{Answer: submitted.Text, AnswerSource: SourceSubmit, TerminationReason: "env_done"})
	}
	if l.Turns >= s.MaxTurns {
		answer, source := lastAnswer(in.State, added)
		return finish(in, s, l, added, Result{Answer: answer, AnswerSource: source, TerminationReason: "max_turns_exceeded"})
	}
	var out phases.Output
	for _, m := range added {
		out.Append = append(out.Append, phases.MustEntry(EntryMessage, m))
	}
	if summary != "" {
		return fold(in, s, l, out, summary, added)
	}
	ctx, err := contextOf(in.State)
	if err != nil {
		return out, err
	}
	ctx = append(ctx, toWire(added)...)
	choice := ""
	if s.Fold.TriggerTurns > 0 && l.SegTurns >= s.Fold.TriggerTurns && !l.Nudged {
		nudge := Message{Message: operations.Message{Role: operations.RoleUser, Content: s.nudgeText()},
			Segment: l.Segment, Turn: l.Turns, Summary: "fold nudge: " + agent.Line(s.nudgeText(), 120)}
		out.Append = append(out.Append, phases.MustEntry(EntryMessage, nudge))
		ctx = append(ctx, nudge.Message)
		l.Nudged = true
		if s.Fold.Force {
			choice = agent.ToolSummarize
		}
	}
	return generate(out, s, l, ctx, choice)
}

// fold ends the current segment and opens the next one with the system
// prompt and the task followed by the summary (AgentFly's fold, without
// its caveats: the task message is plain text, and earlier summaries are
// not repeated because the new context is rebuilt from the original task).
// The folding turn's other calls and their results (answers, the tool
// messages of the turn) are carried into the new segment, so the model
// sees what they returned.
func fold(in phases.Input, s *Settings, l loop, out phases.Output, summary string, answers []Message) (phases.Output, error) {
	sys, task, err := prompt(in.State)
	if err != nil {
		return out, err
	}
	l.Segment++
	l.SegTurns = 0
	l.Nudged = false
	out.Append = append(out.Append, phases.MustEntry(EntryFold, FoldRecord{
		Summary: fmt.Sprintf("context folded after turn %d; segment %d starts", l.Turns, l.Segment),
		Segment: l.Segment, Turn: l.Turns, Text: summary,
	}))
	user := task + "\n\n[Previous Summary]: " + summary
	msgs := []Message{
		{Message: operations.Message{Role: operations.RoleSystem, Content: sys}, Segment: l.Segment, Turn: l.Turns, Summary: "system (segment " + strconv.Itoa(l.Segment) + ")"},
		{Message: operations.Message{Role: operations.RoleUser, Content: user}, Segment: l.Segment, Turn: l.Turns, Summary: "task + summary: " + agent.Line(summary, 160)},
	}
	carried, err := carry(in.State, answers, l)
	if err != nil {
		return out, err
	}
	msgs = append(msgs, carried...)
	for _, m := range msgs {
		out.Append = append(out.Append, phases.MustEntry(EntryMessage, m))
	}
	return generate(out, s, l, toWire(msgs), "")
}

// carry returns the folding turn's calls other than summarize, as a copy
// of its assistant message marked Carried, followed by their answers; nil
// when summarize was its only call.
func carry(st phases.State, answers []Message, l loop) ([]Message, error) {
	i := phases.Last(st, EntryMessage)
	for ; i >= 0; i-- {
		e := st.Entry(i)
		if e.Type != EntryMessage {
			continue
		}
		var m Message
		if err := e.Decode(&m); err != nil {
			return nil, err
		}
		if m.Role != operations.RoleAssistant {
			continue
		}
		a := Message{Message: operations.Message{Role: operations.RoleAssistant, Content: m.Content},
			Segment: l.Segment, Turn: m.Turn, Carried: true}
		keep := map[string]bool{}
		for _, tc := range m.ToolCalls {
			if tc.Name != agent.ToolSummarize {
				a.ToolCalls = append(a.ToolCalls, tc)
				keep[tc.ID] = true
			}
		}
		if len(a.ToolCalls) == 0 {
			return nil, nil
		}
		a.Summary = fmt.Sprintf("turn %d carried into segment %d: %d call(s) and their results", m.Turn, l.Segment, len(a.ToolCalls))
		out := []Message{a}
		for _, r := range answers {
			if r.Role == operations.RoleTool && keep[r.ToolCallID] {
				r.Segment = l.Segment
				out = append(out, r)
			}
		}
		return out, nil
	}
	return nil, nil
}

// prompt returns the original system prompt and task (the first two
// messages of the log).
func prompt(st phases.State) (system, task string, err error) {
	var found int
	for i := 0; i < st.Len() && found < 2; i++ {
		e := st.Entry(i)
		if e.Type != EntryMessage {
			continue
		}
		var m Message
		if err := e.Decode(&m); err != nil {
			return "", "", err
		}
		switch {
		case found == 0 && m.Role == operations.RoleSystem:
			system = m.Content
		case found == 1 && m.Role == operations.RoleUser:
			task = m.Content
		default:
			return "", "", fmt.Errorf("%w: the log does not start with the system prompt and the task", ErrState)
		}
		found++
	}
	if found < 2 {
		return "", "", fmt.Errorf("%w: the log does not start with the system prompt and the task", ErrState)
	}
	return system, task, nil
}

// contextOf returns the messages of the current segment.
func contextOf(st phases.State) ([]operations.Message, error) {
	msgs, err := messages(st, phases.Last(st, EntryFold)+1)
	if err != nil {
		return nil, err
	}
	return toWire(msgs), nil
}

// lastAnswer extracts an answer from the newest assistant message with
// content, for runs that end at max_turns.
func lastAnswer(st phases.State, added []Message) (string, string) {
	for i := len(added) - 1; i >= 0; i-- {
		if added[i].Role == operations.RoleAssistant && strings.TrimSpace(added[i].Content) != "" {
			return ExtractAnswer(added[i].Content)
		}
	}
	for i := st.Len() - 1; i >= 0; i-- {
		e := st.Entry(i)
		if e.Type != EntryMessage {
			continue
		}
		var m Message
		if e.Decode(&m) == nil && m.Role == operations.RoleAssistant && strings.TrimSpace(m.Content) != "" {
			return ExtractAnswer(m.Content)
		}
	}
	return "", SourceNone
}

// fail ends the run as failed with the reason, after writing the
// trajectory so far.
func fail(in phases.Input, s *Settings, l loop, added []Message, reason string) (phases.Output, error) {
	return failWith(in, s, l, added, "error: "+agent.Line(reason, 200), reason, "")
}

// failWith is fail with the end reason given apart from the message (the
// result's error) and the run's error (runErr; "" is the reason).
func failWith(in phases.Input, s *Settings, l loop, added []Message, reason, msg, runErr string) (phases.Output, error) {
	out, err := finish(in, s, l, added, Result{TerminationReason: "error", AnswerSource: SourceNone, Error: msg})
	if out.End != nil {
		out.End.Failed = true
		out.End.Reason = reason
		out.End.Error = runErr
	}
	return out, err
}

// finish ends the run with res, appending the last messages and writing
// the trajectory file when configured.
func finish(in phases.Input, s *Settings, l loop, added []Message, res Result) (phases.Output, error) {
	var out phases.Output
	for _, m := range added {
		out.Append = append(out.Append, phases.MustEntry(EntryMessage, m))
	}
	l.Pending = nil
	res.Turns = l.Turns
	res.Segments = l.Segment + 1
	if err := out.SetVar(varLoop, l); err != nil {
		return out, err
	}
	if s.TrajectoryFile != "" {
		t, err := BuildTrajectory(in.State, added, s.TrajectoryName)
		if err != nil {
			return out, err
		}
		b, err := json.Marshal(t)
		if err != nil {
			return out, fmt.Errorf("encode trajectory: %w", err)
		}
		out.Ops = append(out.Ops, operations.NewWriteFile(s.TrajectoryFile, string(b), false))
	}
	b, err := json.Marshal(res)
	if err != nil {
		return out, err
	}
	reason := "answered"
	if res.AnswerSource == SourceSubmit {
		reason = "submitted"
	} else if res.TerminationReason == "max_turns_exceeded" {
		reason = "max_turns"
	}
	out.End = &phases.End{Reason: reason, Result: b}
	return out, nil
}

func toWire(msgs []Message) []operations.Message {
	out := make([]operations.Message, len(msgs))
	for i, m := range msgs {
		out[i] = m.Message
	}
	return out
}

// typed hands the phases their parsed settings (see phases.Typed).
var typed = phases.NewTyped(ParseSettings)

// accepted reports whether res is an accepted submission.
func accepted(res operations.Result) bool {
	s := operations.Submit.Result(res)
	return s != nil && s.Accepted
}
