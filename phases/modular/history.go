package modular

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/agent"
)

// conversation is the whole dialogue rebuilt from the log: the system
// prompt, the task, then one message per choice, tool output and model-
// facing warning. answers[i] marks a message that answers the assistant
// turn before it (a tool result, or a warning about the turn), which must
// not be separated from it. known holds the content tokens entries
// recorded, keyed by message fingerprint.
type conversation struct {
	msgs    []operations.Message
	answers []bool
	known   map[string]int
}

// fingerprint identifies a message's counted content; equal fingerprints
// mean equal token counts.
func fingerprint(m operations.Message) string {
	var b strings.Builder
	b.WriteString(m.Role)
	b.WriteByte(0)
	b.WriteString(m.Content)
	b.WriteByte(0)
	b.WriteString(m.Reasoning)
	for _, c := range m.ToolCalls {
		b.WriteByte(0)
		b.WriteString(c.Name)
		b.WriteByte(0)
		b.WriteString(c.Arguments)
	}
	return b.String()
}

// choiceMessage renders a choice as the assistant's turn: in tool mode the
// content with the native call (or the rejected attempt); in text modes the
// content followed by the executed call re-rendered as a block (an invalid
// attempt stays in the content as the model wrote it). Content is trimmed
// to limit; the call is never cut. Reasoning stays in the entry: the
// generate handler does not send it back, so it is neither replayed nor
// counted.
func choiceMessage(c Choice, mode agent.Mode, limit int) operations.Message {
	m := operations.Message{Role: operations.RoleAssistant, Content: agent.Trim(c.Content, limit)}
	switch {
	case mode == agent.ModeTools && c.Call != nil:
		tc := c.Call.ToolCall()
		tc.Arguments = plainJSON(c.Call.Arguments)
		m.ToolCalls = []operations.ToolCall{tc}
	case mode == agent.ModeTools && c.Attempt != nil:
		m.ToolCalls = []operations.ToolCall{*c.Attempt}
	case c.Call != nil:
		block := agent.RenderText(*c.Call, mode)
		if m.Content == "" {
			m.Content = block
		} else {
			m.Content += "\n\n" + block
		}
	}
	return m
}

// plainJSON re-encodes JSON without HTML escaping. Call arguments are a
// json.RawMessage inside entries, and encoding an entry escapes <, > and &
// in it (\u003e); replayed arguments must read as the model wrote them,
// and the same before and after the log round trip (token counts are
// keyed by the replayed text).
func plainJSON(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// outputContent is what the model sees of a tool output: the text as is
// in tool mode (the tool message says which call it answers), wrapped in
// <name-output> tags in text modes.
func outputContent(t agent.ToolOutput, mode agent.Mode) string {
	if mode == agent.ModeTools {
		return t.Output
	}
	return "<" + t.Tool + "-output>\n" + t.Output + "\n</" + t.Tool + "-output>"
}

// answer renders a result of the pending call id: a tool message in tool
// mode, a user message otherwise (text modes, or nothing pending).
func answer(content, pending string) operations.Message {
	if pending != "" {
		return operations.Message{Role: operations.RoleTool, ToolCallID: pending, Content: content}
	}
	return operations.Message{Role: operations.RoleUser, Content: content}
}

// noResult answers a call whose result is missing from the log, so that
// every tool call of the prompt has its answer.
const noResult = "(no result was recorded for this call)"

// buildConversation rebuilds the dialogue from the settings, the run's
// limits and its log. It never splits a call from its answer: a call left
// unanswered (which the phases do not produce) gets a placeholder answer.
func buildConversation(st phases.State, s *Settings, task string) (conversation, error) {
	_, limits := st.Usage()
	mode := s.Mode()
	c := conversation{known: map[string]int{}}
	c.msgs = append(c.msgs,
		operations.Message{Role: operations.RoleSystem, Content: systemPrompt(s, limits)},
		operations.Message{Role: operations.RoleUser, Content: taskMessage(task)})
	c.answers = append(c.answers, false, false)
	pending := ""
	afterChoice := false
	add := func(m operations.Message, tokens int, isChoice bool) {
		if tokens > 0 {
			c.known[fingerprint(m)] = tokens
		}
		c.msgs = append(c.msgs, m)
		c.answers = append(c.answers, afterChoice && !isChoice)
		afterChoice = isChoice
	}
	flush := func() {
		if pending != "" {
			add(answer(noResult, pending), 0, false)
			pending = ""
		}
	}
	for i := 0; i < st.Len(); i++ {
		e := st.Entry(i)
		switch e.Type {
		case EntryChoice:
			var ch Choice
			if err := e.Decode(&ch); err != nil {
				return c, err
			}
			flush()
			m := choiceMessage(ch, mode, s.OutputLimit)
			add(m, ch.Tokens, true)
			if len(m.ToolCalls) > 0 {
				pending = m.ToolCalls[0].ID
			}
		case EntryToolOutput:
			var t ToolOutput
			if err := e.Decode(&t); err != nil {
				return c, err
			}
			m := answer(outputContent(t.ToolOutput, mode), pending)
			m.Images = t.Images
			add(m, t.Tokens, false)
			pending = ""
		case EntryWarning:
			var w Warning
			if err := e.Decode(&w); err != nil {
				return c, err
			}
			if w.Internal {
				continue
			}
			if w.CallID == "" || w.CallID != pending {
				flush()
			}
			add(answer(w.Message, pending), 0, false)
			pending = ""
		}
	}
	flush()
	return c, nil
}

// measure returns the Measure of a conversation: recorded counts where
// entries have them, the counter otherwise, plus the framing overhead.
func (c conversation) measure(count counter) func(operations.Message) int {
	return func(m operations.Message) int {
		fp := fingerprint(m)
		n, ok := c.known[fp]
		if !ok {
			n = count.contentTokens(m)
			c.known[fp] = n
		}
		return n + perMessageTokens
	}
}

// tools are the tool definitions sent with the generate (tool mode only).
func tools(s *Settings) []operations.Tool {
	if s.Mode() != agent.ModeTools {
		return nil
	}
	return append(agent.Tools(s.Toolset()...), agent.SandboxTools(s.Tools, s.SandboxTools)...)
}

// plan decides what of the conversation fits the token budget: the first
// KeepFirstMessages (extended over the answers of the turn at the
// boundary), the newest turn (the last choice and what answers it), then
// as many of the most recent messages as fit, never separating a turn from
// its answers (agent.Budget with a token Measure; Budget keeps tool
// results with their call, and an answer left first in the recent part is
// dropped too). When the newest turn does not fit whole, everything older
// beyond the first messages goes and its contents are clipped head and
// tail (Context.Clips), so the model always sees the result of its last
// action.
func plan(c conversation, s *Settings, count counter, usage string) Context {
	measure := c.measure(count)
	keep := min(*s.KeepFirstMessages, len(c.msgs))
	for keep < len(c.msgs) && c.answers[keep] {
		keep++
	}
	last := 0
	for i := len(c.msgs) - 1; i >= 2; i-- {
		if c.msgs[i].Role == operations.RoleAssistant {
			last = len(c.msgs) - i
			break
		}
	}
	fixed := count.toolsTokens(tools(s)) + replyTokens
	// The notice's size, with the largest count it could show, is
	// reserved by Budget when it is inserted.
	note := trimmedNote(len(c.msgs), s.ContextTrimmingThreshold)
	reserve := fixed + measure(operations.Message{Role: operations.RoleUser, Content: usage})
	p := agent.Budget{Limit: max(1, s.ContextTrimmingThreshold-reserve), KeepFirst: keep, KeepLast: last, Measure: measure,
		Note: note, NoteRole: operations.RoleUser}.Plan(c.msgs)
	dropped := p.Dropped
	for dropped > 0 && keep+dropped < len(c.msgs) && c.answers[keep+dropped] {
		dropped++
	}
	ctx := Context{Messages: len(c.msgs), KeepFirst: keep, Dropped: dropped, Clips: p.Clips, Usage: usage}
	ctx.Tokens = fixed
	for _, m := range prompt(c, ctx, s) {
		ctx.Tokens += measure(m)
	}
	return ctx
}

// prompt applies a plan to the conversation: the kept first messages, the
// trimmed-history notice, the recent messages (including any appended
// since the plan was made, such as a retry warning) and the usage message,
// with the plan's clips applied.
func prompt(c conversation, ctx Context, s *Settings) []operations.Message {
	k := min(ctx.KeepFirst, len(c.msgs))
	from := min(k+ctx.Dropped, len(c.msgs))
	clipped := func(i int) operations.Message {
		m := c.msgs[i]
		for _, cl := range ctx.Clips {
			if cl.Index == i {
				m.Content = agent.Trim(m.Content, cl.Limit)
			}
		}
		return m
	}
	out := make([]operations.Message, 0, len(c.msgs)-from+k+2)
	for i := 0; i < k; i++ {
		out = append(out, clipped(i))
	}
	if ctx.Dropped > 0 {
		out = append(out, operations.Message{Role: operations.RoleUser, Content: trimmedNote(ctx.Dropped, s.ContextTrimmingThreshold)})
	}
	for i := from; i < len(c.msgs); i++ {
		out = append(out, clipped(i))
	}
	return append(out, operations.Message{Role: operations.RoleUser, Content: ctx.Usage})
}

// callID gives a call without an id (text modes, some endpoints) one that
// is unique in the run.
func callID(step uint64) string { return "call_" + strconv.FormatUint(step, 10) }
