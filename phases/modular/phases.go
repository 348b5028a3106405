package modular

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/agent"
)

// Name is the workflow's registry name.
const Name = "modular"

// Phase names.
const (
	PhaseInit          = "init"
	PhasePrompter      = "prompter"
	PhaseGenerator     = "generator"
	PhaseDiscriminator = "discriminator"
	PhaseActor         = "actor"
	PhaseToolOutput    = "tool_output"
)

// End reasons of runs that end without a submission.
const (
	ReasonSubmitted      = "submitted"
	ReasonNoUsableOutput = "no_usable_output"
	ReasonNoValidCall    = "no_valid_call"
)

// Meta keys of the tool operations the actor asks for.
const (
	metaPurpose = "purpose"
	metaTool    = "tool"
	metaCallID  = "call_id"
)

// tokenizer resolves the settings' tokenizer for the generator's model.
func (s *Settings) tokenizer() string { return tokenizerFor(s.Tokenizer, s.endpointModel()) }

// Init records the task and the agent's setup. No operations: the task
// comes with the run and usage and limits are read from the state.
func Init(in phases.Input, s *Settings) (phases.Output, error) {
	t := Task{Summary: "task: " + agent.Line(in.Run.Task, 200), Task: in.Run.Task, Model: s.Generator.Model,
		Tokenizer: s.tokenizer(), Tools: append(s.Toolset(), s.Tools...), Mode: s.Mode()}
	return phases.Output{Append: []phases.Entry{phases.MustEntry(EntryTask, t)}, Next: PhasePrompter}, nil
}

// Prompter rebuilds the conversation from the log, writes the usage
// message and decides, by tokens, which messages the next prompt keeps.
// It stores only that decision (a small Context var), never the messages.
func Prompter(in phases.Input, s *Settings) (phases.Output, error) {
	var out phases.Output
	c, err := buildConversation(in.State, s, in.Run.Task)
	if err != nil {
		return out, err
	}
	u, l := in.State.Usage()
	ctx := plan(c, s, newCounter(s.tokenizer()), usageMessage(s, u, l))
	if err := out.SetVar(VarContext, ctx); err != nil {
		return out, err
	}
	out.Next = PhaseGenerator
	return out, nil
}

// Generator asks the generator model for the next action: one generate
// with the system prompt, the task, the history the prompter kept and the
// usage message, and the agent's tools in tool mode.
func Generator(in phases.Input, s *Settings) (phases.Output, error) {
	var out phases.Output
	var ctx Context
	ok, err := phases.GetVar(in.State, VarContext, &ctx)
	if err != nil {
		return out, err
	}
	if !ok {
		return out, fmt.Errorf("%w: generator called before the prompter (no %q var)", ErrState, VarContext)
	}
	c, err := buildConversation(in.State, s, in.Run.Task)
	if err != nil {
		return out, err
	}
	if ctx.Messages > len(c.msgs) {
		return out, fmt.Errorf("%w: the prompter planned %d messages, the log has %d", ErrState, ctx.Messages, len(c.msgs))
	}
	choice := ""
	if s.RequireFunctionCall {
		choice = "required"
	}
	g := s.Generator.Request(prompt(c, ctx, s), tools(s), choice)
	out.Ops = []operations.Request{agent.WithFormat(operations.NewGenerate(g).WithMeta(metaPurpose, PhaseGenerator).
		WithMeta(operations.MetaRole, operations.ModelRoleActor), s.Mode())}
	out.Next = PhaseDiscriminator
	return out, nil
}

// Discriminator picks the first output with content, a valid call or an
// attempted call (whose error the actor then explains to the model). When
// the generate failed or every output is empty it appends a warning and
// retries the generator, at most max_retries times in a row; then the run
// ends as failed (no_usable_output).
func Discriminator(in phases.Input, s *Settings) (phases.Output, error) {
	var out phases.Output
	mode, toolset := s.Mode(), s.Toolset()
	var res *operations.Result
	var g *operations.GenerateResult
	for i := range in.Results {
		if in.Results[i].Kind == operations.KindGenerate {
			res, g = &in.Results[i], operations.Generate.Result(in.Results[i])
			break
		}
	}
	var w Warning
	switch {
	case res == nil:
		return out, fmt.Errorf("%w: discriminator called without a generate result", ErrState)
	case res.Error != "":
		w = Warning{Warning: agent.NewWarning("The generate call failed: " + res.Error), Internal: true}
	case g == nil || len(g.Outputs) == 0:
		w = Warning{Warning: agent.NewWarning("The generate call returned no outputs."), Internal: true}
	default:
		outs := g.Outputs
		for i, o := range outs {
			p := agent.ParseOutputSandbox(o, mode, toolset, s.Tools)
			if p.Content == "" && p.Call == nil && p.Invalid == "" {
				continue
			}
			ch := Choice{Option: agent.Option{Content: p.Content, Call: p.Call, Invalid: p.Invalid, Reasoning: o.Reasoning,
				Source: fmt.Sprintf("%s #%d", s.Generator.Model, i)}, Output: i, Outputs: len(outs)}
			if mode == agent.ModeTools {
				if ch.Call != nil && ch.Call.ID == "" {
					ch.Call.ID = callID(in.Run.Step)
				}
				if ch.Call == nil && len(o.ToolCalls) > 0 {
					a := o.ToolCalls[0]
					if a.ID == "" {
						a.ID = callID(in.Run.Step)
					}
					if !json.Valid([]byte(a.Arguments)) {
						a.Arguments = "{}"
					}
					ch.Attempt = &a
				}
			}
			ch.Summary = ch.Option.Describe()
			ch.Tokens = newCounter(s.tokenizer()).contentTokens(choiceMessage(ch, mode, s.OutputLimit))
			out.Append = append(out.Append, phases.MustEntry(EntryChoice, ch))
			out.Next = PhaseActor
			return out, nil
		}
		w = Warning{Warning: agent.NewWarning(msgEmptyOutput)}
		w.Summary = fmt.Sprintf("no usable output (%d empty)", len(outs))
	}
	return retry(in, s, out, w, PhaseGenerator, ReasonNoUsableOutput)
}

// retry appends w and goes to next, or ends the run as failed with reason
// once max_retries consecutive failures are exceeded.
func retry(in phases.Input, s *Settings, out phases.Output, w Warning, next, reason string) (phases.Output, error) {
	var failures int
	if _, err := phases.GetVar(in.State, VarFailures, &failures); err != nil {
		return out, err
	}
	failures++
	if failures > *s.MaxRetries {
		w.Message += fmt.Sprintf("\nGiving up after %d consecutive attempts without a usable action.", failures)
		w.Summary += fmt.Sprintf(" (giving up after %d attempts)", failures)
		out.Append = append(out.Append, phases.MustEntry(EntryWarning, w))
		out.End = &phases.End{Failed: true, Reason: reason}
		return out, out.SetVar(VarFailures, nil)
	}
	w.Summary += fmt.Sprintf(" (retry %d of %d)", failures, *s.MaxRetries)
	out.Append = append(out.Append, phases.MustEntry(EntryWarning, w))
	out.Next = next
	return out, out.SetVar(VarFailures, failures)
}

// Actor carries out the chosen call: bash, python, score and score_log
// become operations whose result tool_output formats; set_timeout changes
// the timeout and goes back to the prompter; submit submits and ends the
// run. A choice without a valid call gets a warning that answers the call
// (when there was one) and goes back to the prompter, within max_retries.
func Actor(in phases.Input, s *Settings) (phases.Output, error) {
	var out phases.Output
	i := phases.Last(in.State, EntryChoice)
	if i < 0 {
		return out, fmt.Errorf("%w: actor called without a choice", ErrState)
	}
	var ch Choice
	if err := in.State.Entry(i).Decode(&ch); err != nil {
		return out, err
	}
	if ch.Call == nil {
		w := Warning{Warning: agent.NewWarning(noCallHint(s))}
		if ch.Invalid != "" {
			w = Warning{Warning: agent.NewWarning(fmt.Sprintf(msgInvalidCall, ch.Invalid, strings.Join(s.Toolset(), ", ")))}
			w.Summary = "invalid call: " + agent.Line(ch.Invalid, 160)
		} else {
			w.Summary = "no tool call"
		}
		if ch.Attempt != nil {
			w.CallID = ch.Attempt.ID
		}
		return retry(in, s, out, w, PhasePrompter, ReasonNoValidCall)
	}
	if raw := in.State.Var(VarFailures); raw != nil {
		if err := out.SetVar(VarFailures, nil); err != nil {
			return out, err
		}
	}
	c := *ch.Call
	timeout := s.Timeout
	if _, err := phases.GetVar(in.State, VarTimeout, &timeout); err != nil {
		return out, err
	}
	var op operations.Request
	switch c.Name {
	case agent.ToolSetTimeout:
		var a agent.SetTimeoutArgs
		if err := c.Decode(&a); err != nil {
			return out, err
		}
		if err := out.SetVar(VarTimeout, a.Timeout); err != nil {
			return out, err
		}
		t := agent.ToolOutput{Summary: "timeout set to " + strconv.Itoa(a.Timeout) + " s", Tool: c.Name, CallID: c.ID,
			Output: fmt.Sprintf("The timeout of bash and python calls is now %d seconds (it was %d).", a.Timeout, timeout)}
		out.Append = append(out.Append, phases.MustEntry(EntryToolOutput, toolOutput(s, t)))
		out.Next = PhasePrompter
		return out, nil
	case agent.ToolSubmit:
		var a agent.SubmitArgs
		if err := c.Decode(&a); err != nil {
			return out, err
		}
		out.Ops = []operations.Request{operations.NewSubmit(a.Answer)}
		out.End = &phases.End{Reason: ReasonSubmitted}
		return out, nil
	case agent.ToolBash:
		var a agent.BashArgs
		if err := c.Decode(&a); err != nil {
			return out, err
		}
		op = operations.NewBash(a.Command, float64(timeout))
	case agent.ToolPython:
		var a agent.PythonArgs
		if err := c.Decode(&a); err != nil {
			return out, err
		}
		op = operations.NewPython(a.Code, float64(timeout))
	case agent.ToolScore:
		op = operations.NewScore()
	case agent.ToolScoreLog:
		op = operations.NewScoreLog()
	default:
		names, _ := agent.SandboxNames(s.Tools) // checked by ParseSettings
		full, ok := names[c.Name]
		if !ok {
			// Validation admits only the toolset, so this is a bug, not a model error.
			return out, fmt.Errorf("%w: no action for tool %q", ErrState, c.Name)
		}
		req, err := agent.SandboxCall(full, string(c.Arguments), float64(timeout))
		if err != nil {
			return out, err
		}
		op = req
	}
	op = op.WithMeta(metaTool, c.Name)
	if c.ID != "" {
		op = op.WithMeta(metaCallID, c.ID)
	}
	out.Ops = []operations.Request{op}
	out.Next = PhaseToolOutput
	return out, nil
}

// ToolOutputPhase formats the result of the actor's operation for the
// model (phases/agent's FormatResult, trimmed to output_limit) and goes
// back to the prompter.
func ToolOutputPhase(in phases.Input, s *Settings) (phases.Output, error) {
	var out phases.Output
	if len(in.Results) != 1 {
		return out, fmt.Errorf("%w: tool_output expects one result, got %d", ErrState, len(in.Results))
	}
	res := in.Results[0]
	tool := res.Meta[metaTool]
	if tool == "" {
		tool = string(res.Kind)
	}
	text := agent.FormatResult(res, s.OutputLimit)
	t := agent.ToolOutput{Tool: tool, CallID: res.Meta[metaCallID], Output: text, Failed: agent.Failed(res), Images: agent.ResultImages(res)}
	verb := "output"
	switch {
	case timedOut(res):
		verb = "timed out"
	case t.Failed:
		verb = "failed"
	}
	line := text
	if operations.Sandbox.Result(res) != nil {
		line = strings.Join(strings.Fields(text), " ")
	}
	t.Summary = tool + " " + verb + ": " + agent.Line(line, 160)
	out.Append = []phases.Entry{phases.MustEntry(EntryToolOutput, toolOutput(s, t))}
	out.Next = PhasePrompter
	return out, nil
}

// toolOutput adds the token count of the output as the model sees it.
func toolOutput(s *Settings, t agent.ToolOutput) ToolOutput {
	return ToolOutput{ToolOutput: t, Tokens: newCounter(s.tokenizer())(outputContent(t, s.Mode()))}
}

// Workflow returns the modular workflow's declaration.
func Workflow() phases.Workflow {
	return phases.Workflow{
		Name: Name,
		Description: "A single-model agent loop: prompter (token-budgeted history) -> generator -> discriminator -> " +
			"actor -> tool_output; Flock's modular workflow.",
		Start: PhaseInit,
		Phases: []phases.PhaseSpec{
			{Name: PhaseInit, Run: phases.EndOnFatal(typed.Phase(Init)), Next: []string{PhasePrompter}},
			{Name: PhasePrompter, Run: phases.EndOnFatal(typed.Phase(Prompter)), Next: []string{PhaseGenerator}},
			{Name: PhaseGenerator, Run: phases.EndOnFatal(typed.Phase(Generator)), Next: []string{PhaseDiscriminator}},
			{Name: PhaseDiscriminator, Run: phases.EndOnFatal(typed.Phase(Discriminator)), Next: []string{PhaseActor, PhaseGenerator}},
			{Name: PhaseActor, Run: phases.EndOnFatal(typed.Phase(Actor)), Next: []string{PhaseToolOutput, PhasePrompter}},
			{Name: PhaseToolOutput, Run: phases.EndOnFatal(typed.Phase(ToolOutputPhase)), Next: []string{PhasePrompter}},
		},
		Settings:      Settings{},
		CheckSettings: CheckSettings,
	}
}

// CheckSettings checks a run's settings at start: ParseSettings, then the
// keys that govern what another key already does (agent.ErrSettingsConflict,
// naming both): bash.timeout_s or python.timeout_s beside modular's own
// timeout, and a generator with both temp and temperature.
func CheckSettings(doc json.RawMessage) error {
	s, err := ParseSettings(doc)
	if err != nil {
		return err
	}
	if err := agent.CheckTimeoutKeys(doc, Name, "timeout", DefaultTimeout); err != nil {
		return err
	}
	return s.Generator.CheckConflicts("generator")
}

func init() { phases.Register(Workflow()) }

var (
	_ phases.Phase = typed.Phase(Init)
	_ phases.Phase = typed.Phase(Prompter)
	_ phases.Phase = typed.Phase(Generator)
	_ phases.Phase = typed.Phase(Discriminator)
	_ phases.Phase = typed.Phase(Actor)
	_ phases.Phase = typed.Phase(ToolOutputPhase)
)

// typed hands the phases their parsed settings (see phases.Typed).
var typed = phases.NewTyped(ParseSettings)

// timedOut reports whether res is a bash or python result that timed out.
func timedOut(res operations.Result) bool {
	b, p := operations.Bash.Result(res), operations.Python.Result(res)
	return b != nil && b.TimedOut || p != nil && p.TimedOut
}
