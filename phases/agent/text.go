package agent

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/flockrun/flock/operations"
)

// Mode is how a model calls tools.
type Mode string

// Tool-calling modes.
const (
	// ModeTools uses the API's native tool calls.
	ModeTools Mode = "tools"
	// ModeFenced reads fenced blocks whose info string is the tool name.
	ModeFenced Mode = "fenced"
	// ModeXML reads <tool>...</tool> elements.
	ModeXML Mode = "xml"
)

// ModeOf picks the mode from Flock's enable_tool_use and enable_xml keys.
func ModeOf(toolUse, xml bool) Mode {
	switch {
	case toolUse:
		return ModeTools
	case xml:
		return ModeXML
	}
	return ModeFenced
}

// aliases maps info strings and tags to tool names.
var aliases = map[string]string{"sh": ToolBash, "shell": ToolBash, "py": ToolPython, "python3": ToolPython}

func resolve(word string, tools []string) (string, bool) {
	w := strings.ToLower(word)
	if a, ok := aliases[w]; ok {
		w = a
	}
	if contains(tools, w) {
		return w, true
	}
	return "", false
}

// Block is a tool call found in text: the tool, its raw body and where the
// block sits in the text (Start inclusive, End exclusive).
type Block struct {
	Name       string
	Body       string
	Start, End int
}

// FindBlock finds the first block calling one of tools in text, in the given
// text mode (ModeFenced or ModeXML).
func FindBlock(text string, mode Mode, tools []string) (Block, bool) {
	if mode == ModeXML {
		return findXML(text, tools)
	}
	return findFenced(text, tools)
}

// line is one line of text with its offsets (End excludes the newline).
type line struct {
	start, end int
	text       string
}

func splitLines(s string) []line {
	var out []line
	start := 0
	for start <= len(s) {
		i := strings.IndexByte(s[start:], '\n')
		if i < 0 {
			out = append(out, line{start, len(s), s[start:]})
			break
		}
		out = append(out, line{start, start + i, s[start : start+i]})
		start += i + 1
	}
	return out
}

// fence reports the backtick run opening l (at least 3) and the rest.
func fence(l string) (int, string) {
	t := strings.TrimLeft(l, " \t")
	n := 0
	for n < len(t) && t[n] == '`' {
		n++
	}
	if n < 3 {
		return 0, ""
	}
	return n, t[n:]
}

// closes reports whether l is a closing fence for an opening run of n.
func closes(l string, n int) bool {
	t := strings.TrimSpace(l)
	return len(t) >= n && strings.Trim(t, "`") == ""
}

func findFenced(text string, tools []string) (Block, bool) {
	lines := splitLines(text)
	for i := 0; i < len(lines); i++ {
		n, rest := fence(lines[i].text)
		if n == 0 {
			continue
		}
		info := strings.Fields(rest)
		word := ""
		if len(info) > 0 {
			word = strings.TrimRight(info[0], "`")
		}
		name, isTool := resolve(word, tools)
		// One-line block: ```bash ls -la```
		if trimmed := strings.TrimRight(rest, " \t"); isTool && strings.HasSuffix(trimmed, strings.Repeat("`", n)) && len(info) > 1 {
			body := strings.TrimSpace(strings.TrimSuffix(trimmed, strings.Repeat("`", n)))
			body = strings.TrimSpace(strings.TrimPrefix(body, word))
			return Block{Name: name, Body: body, Start: lines[i].start, End: lines[i].end}, true
		}
		// Find the closing fence (the last one for greedy tools).
		closing := -1
		greedy := isTool && isGreedy(name)
		for j := i + 1; j < len(lines); j++ {
			if closes(lines[j].text, n) {
				closing = j
				if !greedy {
					break
				}
			}
		}
		if !isTool {
			if closing < 0 {
				return Block{}, false
			}
			i = closing
			continue
		}
		bodyStart := lines[i].end + 1
		if bodyStart > len(text) {
			bodyStart = len(text)
		}
		if closing < 0 {
			return Block{Name: name, Body: text[bodyStart:], Start: lines[i].start, End: len(text)}, true
		}
		bodyEnd := lines[closing].start
		if bodyEnd < bodyStart {
			bodyEnd = bodyStart
		}
		return Block{Name: name, Body: text[bodyStart:bodyEnd], Start: lines[i].start, End: lines[closing].end}, true
	}
	return Block{}, false
}

func isNameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func findXML(text string, tools []string) (Block, bool) {
	for i := 0; i < len(text); i++ {
		if text[i] != '<' {
			continue
		}
		j := i + 1
		for j < len(text) && isNameChar(text[j]) {
			j++
		}
		name, ok := resolve(text[i+1:j], tools)
		if !ok || j == i+1 {
			continue
		}
		k := j
		for k < len(text) && (text[k] == ' ' || text[k] == '\t') {
			k++
		}
		if strings.HasPrefix(text[k:], "/>") {
			return Block{Name: name, Start: i, End: k + 2}, true
		}
		if k >= len(text) || text[k] != '>' {
			continue
		}
		open := k + 1
		closeTag := "</" + text[i+1:j] + ">"
		var end int
		if isGreedy(name) {
			end = strings.LastIndex(text[open:], closeTag)
		} else {
			end = strings.Index(text[open:], closeTag)
		}
		if end < 0 {
			return Block{Name: name, Body: text[open:], Start: i, End: len(text)}, true
		}
		return Block{Name: name, Body: text[open : open+end], Start: i, End: open + end + len(closeTag)}, true
	}
	return Block{}, false
}

func isGreedy(name string) bool {
	s, ok := specs[name]
	return ok && s.Greedy
}

// trimBody removes the blank lines around a body and, for single-line
// text arguments, the surrounding spaces. Code keeps its indentation.
func trimBody(body string) string {
	body = strings.TrimRight(body, " \t\r\n")
	for {
		i := strings.IndexByte(body, '\n')
		if i < 0 || strings.TrimSpace(body[:i]) != "" {
			break
		}
		body = body[i+1:]
	}
	if !strings.Contains(body, "\n") {
		body = strings.TrimSpace(body)
	}
	return body
}

// CallFromBlock turns a block into a validated call.
func CallFromBlock(b Block) (Call, error) {
	spec, ok := specs[b.Name]
	if !ok {
		return Call{}, fmt.Errorf("%w: %q", ErrUnknownTool, b.Name)
	}
	body := trimBody(b.Body)
	var args string
	switch {
	case spec.NoArgs:
		args = "{}"
	case spec.IntBody:
		n, err := strconv.Atoi(strings.TrimSpace(body))
		if err != nil {
			return Call{}, fmt.Errorf("%w: %s: the block must hold a whole number, got %q", ErrBadArguments, b.Name, clip(body, 40))
		}
		args = fmt.Sprintf(`{"timeout":%d}`, n)
	case spec.TextArg != "":
		if strings.TrimSpace(body) == "" {
			return Call{}, fmt.Errorf("%w: %s: empty block", ErrBadArguments, b.Name)
		}
		args = string(marshal(map[string]string{spec.TextArg: body}))
	default:
		args = jsonObject(body)
	}
	return Validate("", b.Name, args, nil)
}

// jsonObject extracts a JSON object from a block body: the body itself,
// else the text from its first { to its last }.
func jsonObject(body string) string {
	body = strings.TrimSpace(body)
	if json.Valid([]byte(body)) {
		return body
	}
	i, j := strings.IndexByte(body, '{'), strings.LastIndexByte(body, '}')
	if i >= 0 && j > i {
		return body[i : j+1]
	}
	return body
}

// ParseText finds and validates the first call to one of tools in text.
// It returns the text before the block, the call, and an error when the
// block is invalid or absent (ErrNoCall).
func ParseText(text string, mode Mode, tools []string) (before string, c Call, err error) {
	b, ok := FindBlock(text, mode, tools)
	if !ok {
		return text, Call{}, ErrNoCall
	}
	c, err = CallFromBlock(b)
	return strings.TrimSpace(text[:b.Start]), c, err
}

// RenderText writes c as a text-mode block (ModeFenced or ModeXML).
func RenderText(c Call, mode Mode) string {
	body := ""
	if spec, ok := specs[c.Name]; ok {
		var args map[string]json.RawMessage
		_ = json.Unmarshal(c.Arguments, &args)
		switch {
		case spec.NoArgs:
		case spec.IntBody:
			body = string(args["timeout"])
		case spec.TextArg != "":
			_ = json.Unmarshal(args[spec.TextArg], &body)
		default:
			body = string(c.Arguments)
		}
	} else {
		body = string(c.Arguments)
	}
	if mode == ModeXML {
		return "<" + c.Name + ">\n" + body + "\n</" + c.Name + ">"
	}
	f := strings.Repeat("`", max(3, longestBackticks(body)+1))
	return f + c.Name + "\n" + body + "\n" + f
}

func longestBackticks(s string) int {
	best, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

// Parsed is what a model output means for an agent.
type Parsed struct {
	// Content is the model's text (in text modes, without the call block).
	Content string
	// Call is the valid call, or nil.
	Call *Call
	// Invalid explains why a call the model attempted was rejected.
	Invalid string
}

// ParseOutput reads the call of a model output: in ModeTools the first
// native tool call (others are ignored), in text modes the first block
// naming one of tools (when the text has none in the mode's convention,
// the other text convention is tried). An invalid call leaves Call nil and says why in
// Invalid; no call at all leaves both empty.
func ParseOutput(o operations.Output, mode Mode, tools []string) Parsed {
	if mode == ModeTools || mode == "" {
		p := Parsed{Content: strings.TrimSpace(o.Content)}
		if len(o.ToolCalls) == 0 {
			return p
		}
		tc := o.ToolCalls[0]
		c, err := Validate(tc.ID, tc.Name, tc.Arguments, tools)
		if err != nil {
			p.Invalid = err.Error()
			return p
		}
		p.Call = &c
		return p
	}
	before, c, err := ParseText(o.Content, mode, tools)
	if err == ErrNoCall {
		// Lenient: a model told to use one text convention sometimes uses
		// the other; accept it rather than lose the step.
		other := ModeXML
		if mode == ModeXML {
			other = ModeFenced
		}
		before, c, err = ParseText(o.Content, other, tools)
	}
	switch {
	case err == ErrNoCall:
		return Parsed{Content: strings.TrimSpace(o.Content)}
	case err != nil:
		return Parsed{Content: strings.TrimSpace(o.Content), Invalid: err.Error()}
	}
	return Parsed{Content: before, Call: &c}
}

// ParseStructured reads a call to tool (one with a JSON object of
// arguments, such as rate_options or select_winner) from a model output:
// in ModeTools the first native call to tool; in text modes a block named
// after the tool, else the first ```json block (or <json> element), else
// the outermost {...} of the text.
func ParseStructured(o operations.Output, mode Mode, tool string) (Call, error) {
	if mode == ModeTools || mode == "" {
		for _, tc := range o.ToolCalls {
			if tc.Name == tool {
				return Validate(tc.ID, tc.Name, tc.Arguments, nil)
			}
		}
		if len(o.ToolCalls) > 0 {
			return Call{}, fmt.Errorf("%w: %q instead of %s", ErrUnknownTool, o.ToolCalls[0].Name, tool)
		}
		return Call{}, ErrNoCall
	}
	if b, ok := FindBlock(o.Content, mode, []string{tool}); ok {
		return CallFromBlock(b)
	}
	for _, m := range []Mode{ModeFenced, ModeXML} {
		if b, ok := FindBlock(o.Content, m, []string{"json"}); ok {
			return Validate("", tool, jsonObject(b.Body), nil)
		}
	}
	if strings.Contains(o.Content, "{") {
		return Validate("", tool, jsonObject(o.Content), nil)
	}
	return Call{}, ErrNoCall
}
