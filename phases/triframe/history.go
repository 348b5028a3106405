package triframe

import (
	"fmt"
	"strings"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/agent"
	"github.com/flockrun/flock/record"
)

// Histories are built from the log newest-first: entries are decoded only
// until the budget is exceeded, so a long run costs no more per phase than
// a short one once its history outgrows the budget.

// isHistory reports whether entries of type typ appear in histories.
func isHistory(typ string) bool {
	switch typ {
	case EntryAdvice, EntryChoice, EntryToolOutput, EntryWarning, record.EntryTypeOperatorMessage:
		return true
	}
	return false
}

// render turns one log entry into messages for a reader.
type render func(e phases.Entry) ([]operations.Message, error)

// rendered is the messages of one log entry.
type rendered struct {
	typ  string
	msgs []operations.Message
}

// collect walks the log newest-first, rendering history entries until the
// size of those that count (all, when counts is nil) exceeds budget and
// the newest choice (the agent's last action) is rendered: that action and
// what followed it always reach fit, which keeps them (see lastTurn). It
// returns the rendered entries oldest first and the number of history
// entries left out before them.
func collect(st phases.State, budget, perMessage int, fn render, counts func(typ string) bool) ([]rendered, int, error) {
	var rev []rendered
	size, i := 0, st.Len()-1
	acted := false
	for ; i >= 0; i-- {
		e := st.Entry(i)
		if !isHistory(e.Type) {
			continue
		}
		acted = acted || e.Type == EntryChoice
		msgs, err := fn(e)
		if err != nil {
			return nil, 0, err
		}
		if len(msgs) == 0 {
			continue
		}
		for k := range msgs {
			msgs[k].Content = agent.Trim(msgs[k].Content, perMessage)
			if counts == nil || counts(e.Type) {
				size += agent.Size(msgs[k])
			}
		}
		rev = append(rev, rendered{e.Type, msgs})
		if budget > 0 && size > budget && acted {
			i--
			break
		}
	}
	earlier := 0
	for ; i >= 0; i-- {
		if isHistory(st.Entry(i).Type) {
			earlier++
		}
	}
	out := make([]rendered, 0, len(rev))
	for k := len(rev) - 1; k >= 0; k-- {
		out = append(out, rev[k])
	}
	return out, earlier, nil
}

// lastTurn counts the messages flatten(rs, skip) gives from the newest
// choice on: the agent's last action, its result and whatever followed
// (advice, warnings). They are kept in every prompt, clipped to fit.
func lastTurn(rs []rendered, skip func(typ string) bool) int {
	n := 0
	for k := len(rs) - 1; k >= 0; k-- {
		if skip != nil && skip(rs[k].typ) {
			continue
		}
		n += len(rs[k].msgs)
		if rs[k].typ == EntryChoice {
			return n
		}
	}
	return 0
}

// flatten concatenates rendered entries, skipping types skip rejects.
func flatten(rs []rendered, skip func(typ string) bool) []operations.Message {
	var out []operations.Message
	for _, r := range rs {
		if skip == nil || !skip(r.typ) {
			out = append(out, r.msgs...)
		}
	}
	return out
}

// actorRender renders entries as the actor's own conversation.
func actorRender(mode agent.Mode) render {
	return func(e phases.Entry) ([]operations.Message, error) {
		switch e.Type {
		case EntryAdvice:
			a, err := decode[Advice](e.Data)
			if err != nil || a.Advice == "" {
				return nil, err
			}
			return []operations.Message{{Role: operations.RoleUser, Content: adviceMessage(a.Advice)}}, nil
		case EntryChoice:
			c, err := decode[Choice](e.Data)
			if err != nil {
				return nil, err
			}
			return []operations.Message{assistantMessage(c.Option, mode)}, nil
		case EntryToolOutput:
			t, err := decode[agent.ToolOutput](e.Data)
			if err != nil {
				return nil, err
			}
			return []operations.Message{toolMessage(t, mode)}, nil
		case EntryWarning:
			w, err := decode[agent.Warning](e.Data)
			if err != nil {
				return nil, err
			}
			return []operations.Message{{Role: operations.RoleUser, Content: "Warning: " + w.Message}}, nil
		case record.EntryTypeOperatorMessage:
			m, err := decode[record.OperatorMessage](e.Data)
			if err != nil || m.Content == "" {
				return nil, err
			}
			return []operations.Message{{Role: operations.RoleUser, Content: "Message from the operator: " + m.Content}}, nil
		}
		return nil, nil
	}
}

func assistantMessage(o agent.Option, mode agent.Mode) operations.Message {
	m := operations.Message{Role: operations.RoleAssistant, Content: o.Content, Reasoning: o.Reasoning}
	switch {
	case o.Call == nil:
		if m.Content == "" {
			m.Content = "(no action)"
		}
	case mode == agent.ModeTools:
		m.ToolCalls = []operations.ToolCall{o.Call.ToolCall()}
	default:
		block := agent.RenderText(*o.Call, mode)
		if m.Content == "" {
			m.Content = block
		} else {
			m.Content += "\n\n" + block
		}
	}
	return m
}

func toolMessage(t agent.ToolOutput, mode agent.Mode) operations.Message {
	body := t.Output
	if t.Notice != "" {
		body += "\n\n" + t.Notice
	}
	if mode == agent.ModeTools && t.CallID != "" {
		return operations.Message{Role: operations.RoleTool, ToolCallID: t.CallID, Content: body, Images: t.Images}
	}
	return operations.Message{Role: operations.RoleUser, Content: outputTag(t.Tool, t.Output) + notice(t.Notice), Images: t.Images}
}

func outputTag(tool, output string) string {
	return "<" + tool + "-output>\n" + output + "\n</" + tool + "-output>"
}

func notice(n string) string {
	if n == "" {
		return ""
	}
	return "\n" + n
}

// transcriptRender renders entries for readers other than the actor
// (advisor, raters): the agent's actions and what they returned.
func transcriptRender(e phases.Entry) ([]operations.Message, error) {
	var text string
	switch e.Type {
	case EntryChoice:
		c, err := decode[Choice](e.Data)
		if err != nil {
			return nil, err
		}
		text = "<agent_action>\n" + actionText(c.Option) + "\n</agent_action>"
	case EntryToolOutput:
		t, err := decode[agent.ToolOutput](e.Data)
		if err != nil {
			return nil, err
		}
		text = outputTag(t.Tool, t.Output)
	case EntryWarning:
		w, err := decode[agent.Warning](e.Data)
		if err != nil {
			return nil, err
		}
		text = "<warning>\n" + w.Message + "\n</warning>"
	case record.EntryTypeOperatorMessage:
		m, err := decode[record.OperatorMessage](e.Data)
		if err != nil {
			return nil, err
		}
		text = "<operator_message>\n" + m.Content + "\n</operator_message>"
	default:
		return nil, nil
	}
	return []operations.Message{{Role: operations.RoleUser, Content: text}}, nil
}

// actionText renders an option: its text, then its call as name + JSON.
func actionText(o agent.Option) string {
	var parts []string
	if c := strings.TrimSpace(o.Content); c != "" {
		parts = append(parts, c)
	}
	switch {
	case o.Call != nil:
		parts = append(parts, "Tool call: "+o.Call.Name+" "+o.Call.ToolCall().Arguments)
	case o.Invalid != "":
		parts = append(parts, "Invalid tool call: "+o.Invalid)
	default:
		parts = append(parts, "(no tool call)")
	}
	return strings.Join(parts, "\n")
}

// actorMessages builds the actor prompts with and without advice, from
// one walk over the log.
func actorMessages(in phases.Input, s *Settings, tools []string, advising bool) (with, without []operations.Message, err error) {
	_, limits := in.State.Usage()
	head := []operations.Message{
		{Role: operations.RoleSystem, Content: actorSystem(s, tools, s.Limit().Describe(limits))},
		{Role: operations.RoleUser, Content: taskMessage(in.Run.Task, in.Run.WorkDir)},
	}
	notAdvice := func(typ string) bool { return typ != EntryAdvice }
	isAdvice := func(typ string) bool { return typ == EntryAdvice }
	rs, earlier, err := collect(in.State, max(s.ContextTrimmingThreshold-tailSize(head), 1), s.OutputLimit, actorRender(s.Mode()), notAdvice)
	if err != nil {
		return nil, nil, err
	}
	without = fit(s, head, flatten(rs, isAdvice), lastTurn(rs, isAdvice), earlier, nil)
	if advising {
		with = fit(s, head, flatten(rs, nil), lastTurn(rs, nil), earlier, nil)
	}
	return with, without, nil
}

// advisorMessages builds the advisor prompt.
func advisorMessages(in phases.Input, s *Settings, tools []string) ([]operations.Message, error) {
	_, limits := in.State.Usage()
	head := []operations.Message{
		{Role: operations.RoleSystem, Content: advisorSystem(s, tools, s.Limit().Describe(limits))},
		{Role: operations.RoleUser, Content: taskMessage(in.Run.Task, in.Run.WorkDir)},
	}
	tail := []operations.Message{{Role: operations.RoleUser, Content: advisorRequest}}
	rs, earlier, err := collect(in.State, max(s.ContextTrimmingThreshold-tailSize(head)-tailSize(tail), 1), s.OutputLimit, transcriptRender, nil)
	if err != nil {
		return nil, err
	}
	return fit(s, head, flatten(rs, nil), lastTurn(rs, nil), earlier, tail), nil
}

// fit is head + the part of hist that fits + tail, the whole within
// context_trimming_threshold: the last keepLast messages of hist (the
// newest action and what followed it) are always kept, clipped head and
// tail when they do not fit whole.
func fit(s *Settings, head, hist []operations.Message, keepLast, earlier int, tail []operations.Message) []operations.Message {
	all := append(append(make([]operations.Message, 0, len(head)+len(hist)+len(tail)+1), head...), hist...)
	b := agent.Budget{Limit: s.ContextTrimmingThreshold - tailSize(tail), PerMessage: s.OutputLimit, KeepFirst: len(head),
		KeepLast: keepLast, Earlier: earlier}
	out, _ := b.Fit(all)
	return append(out, tail...)
}

func tailSize(tail []operations.Message) int {
	n := 0
	for _, m := range tail {
		n += agent.Size(m)
	}
	return n
}

// raterMessages builds the rater prompt for opts.
func raterMessages(in phases.Input, s *Settings, opts []agent.Option) ([]operations.Message, error) {
	var o strings.Builder
	o.WriteString("Candidate next actions:\n")
	for i, op := range opts {
		fmt.Fprintf(&o, "\n<option_%d>\n%s\n</option_%d>\n", i, agent.Trim(actionText(op), s.OutputLimit), i)
	}
	// Nothing but the request follows the options: readers (and the
	// simulated rater) take an option's text to run until the next one.
	o.WriteString("\nRate every one of these " + fmt.Sprint(len(opts)) + " options on the scale above.")
	system := raterSystem(s)
	task := taskMessage(in.Run.Task, in.Run.WorkDir)
	const (
		intro   = "\n\nTranscript of the agent's work so far"
		nothing = ": nothing yet, this is its first action.\n"
	)
	left := func(n int) string { return fmt.Sprintf(" (the %d oldest entries are left out):\n", n) }
	// Everything but the transcript's entries, at its largest.
	fixed := len(system) + len(task) + len(intro) + len(nothing) + len("\n"+ratingScale+"\n\n") + o.Len()
	budget := s.ContextTrimmingThreshold - fixed
	rs, earlier, err := collect(in.State, max(budget, 1), s.OutputLimit, transcriptRender, nil)
	if err != nil {
		return nil, err
	}
	hist := flatten(rs, nil)
	// Each entry is written between newlines; the note stands for the
	// "left out" remark, at its widest.
	b := agent.Budget{Limit: max(budget, 1), PerMessage: s.OutputLimit, KeepLast: lastTurn(rs, nil), Earlier: earlier,
		Measure: func(m operations.Message) int { return agent.Size(m) + 2 }, Note: left(len(hist) + earlier)}
	kept, dropped := b.Fit(hist)
	var t strings.Builder
	t.WriteString(task + intro)
	switch {
	case len(hist) == 0 && earlier == 0:
		t.WriteString(nothing)
	case dropped > 0:
		t.WriteString(left(dropped))
		kept = kept[1:]
	default:
		t.WriteString(":\n")
	}
	for _, m := range kept {
		t.WriteString("\n" + m.Content + "\n")
	}
	t.WriteString("\n" + ratingScale + "\n\n" + o.String())
	return []operations.Message{
		{Role: operations.RoleSystem, Content: system},
		{Role: operations.RoleUser, Content: t.String()},
	}, nil
}
