package agent

import (
	"github.com/flockrun/flock/operations"
)

// Budget fits a conversation into a context budget.
//
// Fit keeps the first KeepFirst messages, then walks the rest newest-first
// and keeps every unit that still fits, stopping at the first that does
// not (so the kept history is always a contiguous recent part). A unit is
// one message, or an assistant message with tool calls together with the
// tool messages answering it, so a call is never separated from its result.
// Each message's content (except the first KeepFirst) is first trimmed to
// PerMessage (see Trim). When
// anything was dropped, a note is inserted after the kept first messages.
type Budget struct {
	// Limit is the budget in Measure units; <= 0 keeps everything.
	Limit int
	// PerMessage trims each message's content (bytes, head+tail); <= 0 keeps it whole.
	PerMessage int
	// KeepFirst messages are always kept (system prompt, task).
	KeepFirst int
	// Measure sizes a message; the default counts the bytes of its content,
	// reasoning and tool-call arguments.
	Measure func(operations.Message) int
	// Note is the content of the inserted note; "%d" is not expanded. The
	// default says that earlier history was trimmed.
	Note string
	// NoteRole is the note's role (default user).
	NoteRole string
	// Earlier counts messages the caller already left out before the ones
	// given (for example because it stopped reading old entries once it had
	// more than the budget); with Earlier > 0 the note is always added.
	Earlier int
}

// DefaultNote is the note Fit inserts when it dropped messages.
const DefaultNote = "[Earlier parts of this conversation were removed to fit the context window.]"

// Size is the default measure: the bytes of a message's content, reasoning
// and tool-call names and arguments.
func Size(m operations.Message) int {
	n := len(m.Content) + len(m.Reasoning)
	for _, c := range m.ToolCalls {
		n += len(c.Name) + len(c.Arguments)
	}
	return n
}

// Fit returns the messages that fit and how many were dropped. msgs is not
// modified.
func (b Budget) Fit(msgs []operations.Message) ([]operations.Message, int) {
	measure := b.Measure
	if measure == nil {
		measure = Size
	}
	first := min(max(0, b.KeepFirst), len(msgs))
	trimmed := make([]operations.Message, len(msgs))
	for i, m := range msgs {
		if b.PerMessage > 0 && i >= first {
			m.Content = Trim(m.Content, b.PerMessage)
		}
		trimmed[i] = m
	}
	if b.Limit <= 0 && b.Earlier == 0 {
		return trimmed, 0
	}
	if b.Limit <= 0 {
		b.Limit = int(^uint(0) >> 1)
	}
	used := 0
	for _, m := range trimmed[:first] {
		used += measure(m)
	}
	rest := trimmed[first:]
	// Units, oldest first: [start, end) ranges of rest.
	type unit struct{ start, end int }
	var units []unit
	for i := 0; i < len(rest); {
		j := i + 1
		if m := rest[i]; m.Role == operations.RoleAssistant && len(m.ToolCalls) > 0 {
			ids := make(map[string]bool, len(m.ToolCalls))
			for _, c := range m.ToolCalls {
				ids[c.ID] = true
			}
			for j < len(rest) && rest[j].Role == operations.RoleTool && ids[rest[j].ToolCallID] {
				j++
			}
		}
		units = append(units, unit{i, j})
		i = j
	}
	keepFrom := len(rest)
	for k := len(units) - 1; k >= 0; k-- {
		size := 0
		for _, m := range rest[units[k].start:units[k].end] {
			size += measure(m)
		}
		if used+size > b.Limit {
			break
		}
		used += size
		keepFrom = units[k].start
	}
	// A tool message whose call was dropped cannot stand first.
	for keepFrom < len(rest) && rest[keepFrom].Role == operations.RoleTool {
		keepFrom++
	}
	if keepFrom == 0 && b.Earlier == 0 {
		return trimmed, 0
	}
	out := make([]operations.Message, 0, first+1+len(rest)-keepFrom)
	out = append(out, trimmed[:first]...)
	note, role := b.Note, b.NoteRole
	if note == "" {
		note = DefaultNote
	}
	if role == "" {
		role = operations.RoleUser
	}
	out = append(out, operations.Message{Role: role, Content: note})
	out = append(out, rest[keepFrom:]...)
	return out, keepFrom + b.Earlier
}
