package agent

import (
	"github.com/flockrun/flock/operations"
)

// Budget fits a conversation into a context budget.
//
// Fit keeps the first KeepFirst messages and the last KeepLast, then walks
// the messages between newest-first and keeps every unit that still fits,
// stopping at the first that does not (so the kept history is always a
// contiguous recent part). A unit is one message, or an assistant message
// with tool calls together with the tool messages answering it, so a call
// is never separated from its result. Each message's content (except the
// first KeepFirst) is first trimmed to PerMessage (see Trim). When anything
// was dropped, a note is inserted after the kept first messages; its size
// counts against the budget.
//
// The last KeepLast messages (the agent's newest action and its result)
// are never dropped: when they do not fit beside the first messages, all
// older history goes and their contents are clipped head and tail (Trim,
// whose marker says how many characters were cut), the largest first,
// until they fit. Contents are never clipped below MinClip bytes and
// tool-call names and arguments not at all, so a budget smaller than the
// first messages plus that much is exceeded.
type Budget struct {
	// Limit is the budget in Measure units; <= 0 keeps everything.
	Limit int
	// PerMessage trims each message's content (bytes, head+tail); <= 0 keeps it whole.
	PerMessage int
	// KeepFirst messages are always kept (system prompt, task).
	KeepFirst int
	// KeepLast messages at the end are always kept, clipped to fit (see
	// Budget). When the first of them is a tool message, the assistant
	// message it answers is kept too. They may overlap KeepFirst.
	KeepLast int
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

// Plan is what Fit decided for a conversation: which messages go and
// which kept ones are clipped. It is plain data, so a caller can store it
// and apply it later to the same messages (Budget.Apply).
type Plan struct {
	// KeepFirst is the number of first messages kept before the note.
	KeepFirst int `json:"keep_first"`
	// Dropped counts the messages left out after them (Earlier excluded).
	Dropped int `json:"dropped"`
	// Note reports whether the note is inserted.
	Note bool `json:"note,omitempty"`
	// Clips are the kept messages whose content is clipped further.
	Clips []Clip `json:"clips,omitempty"`
}

// Clip trims the content of message Index (as the caller passed it, after
// PerMessage) with Trim(content, Limit).
type Clip struct {
	Index int `json:"index"`
	Limit int `json:"limit"`
}

// Fit returns the messages that fit and how many were dropped (Earlier
// included). msgs is not modified.
func (b Budget) Fit(msgs []operations.Message) ([]operations.Message, int) {
	p := b.Plan(msgs)
	dropped := 0
	if p.Note {
		dropped = p.Dropped + b.Earlier
	}
	return b.Apply(msgs, p), dropped
}

func (b Budget) measure() func(operations.Message) int {
	if b.Measure == nil {
		return Size
	}
	return b.Measure
}

func (b Budget) note() operations.Message {
	note, role := b.Note, b.NoteRole
	if note == "" {
		note = DefaultNote
	}
	if role == "" {
		role = operations.RoleUser
	}
	return operations.Message{Role: role, Content: note}
}

// perMessage returns msgs with every content after the first trimmed to
// PerMessage.
func (b Budget) perMessage(msgs []operations.Message) []operations.Message {
	first := min(max(0, b.KeepFirst), len(msgs))
	out := make([]operations.Message, len(msgs))
	for i, m := range msgs {
		if b.PerMessage > 0 && i >= first {
			m.Content = Trim(m.Content, b.PerMessage)
		}
		out[i] = m
	}
	return out
}

// Plan decides what of msgs fits (see Budget).
func (b Budget) Plan(msgs []operations.Message) Plan {
	first := min(max(0, b.KeepFirst), len(msgs))
	if b.Limit <= 0 && b.Earlier == 0 {
		return Plan{KeepFirst: first}
	}
	limit := b.Limit
	if limit <= 0 {
		limit = int(^uint(0) >> 1)
	}
	trimmed := b.perMessage(msgs)
	p := b.plan(trimmed, limit)
	if p.Dropped > 0 || b.Earlier > 0 {
		p = b.plan(trimmed, limit-b.measure()(b.note()))
		p.Note = true
	}
	return p
}

// plan fits trimmed (already trimmed to PerMessage) into limit, without
// the note.
func (b Budget) plan(trimmed []operations.Message, limit int) Plan {
	measure := b.measure()
	n := len(trimmed)
	first := min(max(0, b.KeepFirst), n)
	// The protected tail [last, n), extended back over the tool messages
	// answering a kept call.
	last := n - min(max(0, b.KeepLast), n)
	for last < n && last > 0 && trimmed[last].Role == operations.RoleTool {
		last--
	}
	fixed := min(first, last)
	used := 0
	for _, m := range trimmed[:fixed] {
		used += measure(m)
	}
	p := Plan{KeepFirst: first}
	if last < n {
		tail := 0
		for _, m := range trimmed[last:] {
			tail += measure(m)
		}
		if used+tail > limit {
			p.Clips = clipTail(trimmed, last, limit-used, measure)
			if last > first {
				p.Dropped = last - first
			}
			return p
		}
		used += tail
	}
	if last <= first {
		return p
	}
	rest := trimmed[first:last]
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
		if used+size > limit {
			break
		}
		used += size
		keepFrom = units[k].start
	}
	// A tool message whose call was dropped cannot stand first.
	for keepFrom < len(rest) && rest[keepFrom].Role == operations.RoleTool {
		keepFrom++
	}
	p.Dropped = keepFrom
	return p
}

// clipTail chooses Trim limits for the contents of msgs[from:] so that they
// measure at most room together: the largest content is clipped first,
// each message at most once, keeping as much of it as fits.
func clipTail(msgs []operations.Message, from, room int, measure func(operations.Message) int) []Clip {
	sizes := make([]int, len(msgs))
	total := 0
	for i := from; i < len(msgs); i++ {
		sizes[i] = measure(msgs[i])
		total += sizes[i]
	}
	done := map[int]bool{}
	var clips []Clip
	for total > room {
		pick := -1
		for i := from; i < len(msgs); i++ {
			if !done[i] && len(msgs[i].Content) > MinClip && (pick < 0 || len(msgs[i].Content) >= len(msgs[pick].Content)) {
				pick = i
			}
		}
		if pick < 0 {
			break
		}
		done[pick] = true
		target := sizes[pick] - (total - room)
		limit, size := clipTo(msgs[pick], target, measure)
		if size >= sizes[pick] {
			continue
		}
		clips = append(clips, Clip{Index: pick, Limit: limit})
		total += size - sizes[pick]
		sizes[pick] = size
	}
	// Apply order does not matter (one clip per message); keep them sorted
	// by index for stable plans.
	for i := 1; i < len(clips); i++ {
		for j := i; j > 0 && clips[j].Index < clips[j-1].Index; j-- {
			clips[j], clips[j-1] = clips[j-1], clips[j]
		}
	}
	return clips
}

// MinClip is the least content, in bytes, a clipped message keeps (head
// and tail together): below it a result says nothing, so a budget too small
// for that much is exceeded rather than the result emptied.
const MinClip = 200

// clipTo returns the largest Trim limit, at least MinClip, that makes m
// measure at most target (MinClip when none does) and the size it gives.
func clipTo(m operations.Message, target int, measure func(operations.Message) int) (limit, size int) {
	content := m.Content
	at := func(n int) int {
		m.Content = Trim(content, n)
		return measure(m)
	}
	lo, hi := min(MinClip, len(content)-1), len(content)-1
	limit, size = lo, at(lo)
	for lo <= hi {
		mid := lo + (hi-lo)/2
		if s := at(mid); s <= target {
			limit, size = mid, s
			lo = mid + 1
		} else {
			hi = mid - 1
		}
	}
	return limit, size
}

// Apply returns msgs as p keeps them: each content trimmed to PerMessage,
// the first p.KeepFirst, the note when p.Note, the messages after the
// dropped ones, with p.Clips applied. msgs is not modified.
func (b Budget) Apply(msgs []operations.Message, p Plan) []operations.Message {
	trimmed := b.perMessage(msgs)
	for _, c := range p.Clips {
		if c.Index >= 0 && c.Index < len(trimmed) {
			trimmed[c.Index].Content = Trim(trimmed[c.Index].Content, c.Limit)
		}
	}
	first := min(p.KeepFirst, len(trimmed))
	from := min(first+p.Dropped, len(trimmed))
	if !p.Note && from == first {
		return trimmed
	}
	out := make([]operations.Message, 0, len(trimmed)-from+first+1)
	out = append(out, trimmed[:first]...)
	if p.Note {
		out = append(out, b.note())
	}
	return append(out, trimmed[from:]...)
}
