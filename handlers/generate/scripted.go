package generate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/operations"
)

// scriptLine is one reply of a script file (one JSON object per line).
type scriptLine struct {
	Content      string       `json:"content"`
	ToolCalls    []scriptCall `json:"tool_calls"`
	Reasoning    string       `json:"reasoning"`
	FinishReason string       `json:"finish_reason"`
	Usage        *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	// Error makes the generate fail with this message, and Code with that
	// failure code (operations.Code: model_error, rate_limited, timeout,
	// unavailable; none when empty).
	Error string          `json:"error"`
	Code  operations.Code `json:"code"`
	// Match restricts the line to requests whose last user or tool message
	// contains this substring.
	Match string `json:"match"`
	// N makes the line stand for N identical outputs of an n > 1 request.
	N int `json:"n"`

	lineNo int
}

type scriptCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is a JSON object (sent compacted) or a string (sent as is).
	Arguments json.RawMessage `json:"arguments"`
}

// args returns the call's arguments as the text a model would produce.
func (c scriptCall) args() string {
	a := bytes.TrimSpace(c.Arguments)
	if len(a) == 0 || string(a) == "null" {
		return "{}"
	}
	var s string
	if json.Unmarshal(a, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if json.Compact(&buf, a) == nil {
		return buf.String()
	}
	return string(a)
}

type scriptFile struct {
	path  string
	mod   time.Time
	size  int64
	lines []scriptLine
}

type cursorKey struct{ run, model string }

// cursor is how far one run has read a model's script.
type cursor struct {
	file *scriptFile
	used []bool
	// count is the number of lines consumed.
	count int
}

// scripts holds parsed script files and per-(run, model) cursors.
type scripts struct {
	mu sync.Mutex
	// files caches parsed scripts by path, reloaded when size or mtime
	// change; guarded by mu.
	files map[string]*scriptFile
	// cursors is guarded by mu.
	cursors map[cursorKey]*cursor
}

func newScripts() *scripts {
	return &scripts{files: map[string]*scriptFile{}, cursors: map[cursorKey]*cursor{}}
}

// load returns the parsed script at path for the run working in workDir.
// open resolves and opens the path (files.Access.Open: relative paths are
// relative to workDir, and the path must lie beneath the run's tree or a
// read root); nil opens it as is. Errors name the file and the line, never
// its content.
func (s *scripts) load(open func(workDir, path string) (*os.File, error), workDir, path string) (*scriptFile, error) {
	if open == nil {
		open = func(_, p string) (*os.File, error) { return os.Open(p) }
	}
	fh, err := open(workDir, path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrScript, err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrScript, err)
	}
	key := fh.Name()
	s.mu.Lock()
	f, ok := s.files[key]
	s.mu.Unlock()
	if ok && f.mod.Equal(st.ModTime()) && f.size == st.Size() {
		return f, nil
	}
	b, err := io.ReadAll(fh)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrScript, path, err)
	}
	f = &scriptFile{path: key, mod: st.ModTime(), size: st.Size()}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), len(b)+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		l, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %s", ErrScript, path, n, err)
		}
		l.lineNo = n
		f.lines = append(f.lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrScript, path, err)
	}
	s.mu.Lock()
	s.files[key] = f
	s.mu.Unlock()
	return f, nil
}

// scriptKeys are the keys a script line may have.
var scriptKeys = []string{"content", "tool_calls", "reasoning", "finish_reason", "usage", "error", "code", "match", "n"}

// parseLine parses one script line. Its errors say what is wrong without
// quoting any of the line: it may hold anything (a key pasted by mistake),
// and errors reach events, logs and HTTP answers.
func parseLine(line string) (scriptLine, error) {
	var l scriptLine
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &obj); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return l, fmt.Errorf("not valid JSON (syntax error at column %d)", se.Offset)
		default:
			return l, errors.New("not a JSON object")
		}
	}
	if obj == nil {
		return l, errors.New("not a JSON object")
	}
	for k := range obj {
		if !slices.Contains(scriptKeys, k) {
			return l, fmt.Errorf("unknown key (known: %s)", strings.Join(scriptKeys, ", "))
		}
	}
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return l, fmt.Errorf("%s has the wrong type (want %s)", te.Field, te.Type)
		}
		// The top-level keys are known: the unknown one is nested.
		return l, errors.New("unknown key in usage (known: prompt_tokens, completion_tokens) or in a tool call (known: id, name, arguments)")
	}
	switch l.Code {
	case "", operations.CodeModelError, operations.CodeRateLimited, operations.CodeTimeout, operations.CodeUnavailable:
	default:
		return l, errors.New("code is not one of model_error, rate_limited, timeout, unavailable")
	}
	if l.Code != "" && l.Error == "" {
		return l, errors.New("code needs an error")
	}
	return l, nil
}

func (s *scripts) closeRun(runID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.cursors {
		if k.run == runID {
			delete(s.cursors, k)
		}
	}
}

// lastUserOrTool is the content of the last user or tool message.
func lastUserOrTool(msgs []operations.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if r := msgs[i].Role; r == operations.RoleUser || r == operations.RoleTool {
			return msgs[i].Content
		}
	}
	return ""
}

// next returns the index of the first unused line of c that either has no
// match or whose match occurs in last, or -1.
func (c *cursor) next(last string) int {
	for i, l := range c.file.lines {
		if !c.used[i] && (l.Match == "" || strings.Contains(last, l.Match)) {
			return i
		}
	}
	return -1
}

// consume marks the lines that answering g takes, without building output.
func (c *cursor) consume(g *operations.GenerateRequest) {
	last := lastUserOrTool(g.Messages)
	for n := 0; n < max(1, g.N); {
		idx := c.next(last)
		if idx < 0 {
			return
		}
		c.used[idx] = true
		c.count++
		n += max(1, c.file.lines[idx].N)
	}
}

// replay rebuilds a fresh cursor from the generates of model key that the
// run's journal holds as done (in step order: generate ops, and the calls
// a gateway session's gateway_wait ops answered), except those of the op
// being answered now: after a crash, the script goes on where the run
// was.
func replay(ctx context.Context, j handlers.Journal, c *cursor, runID, opID, key string) error {
	return scanOps(ctx, j, runID, func(op handlers.JournalOp) error {
		if !op.Done || op.ID == opID {
			return nil
		}
		for _, g := range operations.Generates(op.Request, op.Result) {
			r := operations.Generate.Result(g.Result)
			if g.Request.Model == key && (r == nil || r.Replay != operations.ReplayHit) {
				c.consume(g.Request)
			}
		}
		return nil
	})
}

// reply answers g from the script of m, consuming lines of the run's
// cursor: for each of the n outputs, the first unused line that either has
// no match or whose match occurs in the last user/tool message.
func (s *scripts) reply(ctx context.Context, j handlers.Journal, open func(workDir, path string) (*os.File, error), workDir, runID, opID string, m *model, g *operations.GenerateRequest) (*operations.GenerateResult, error) {
	f, err := s.load(open, workDir, m.script)
	if err != nil {
		return nil, fmt.Errorf("scripted model %q: %w", m.key, err)
	}
	last := lastUserOrTool(g.Messages)
	want := max(1, g.N)

	s.mu.Lock()
	defer s.mu.Unlock()
	k := cursorKey{runID, m.key}
	c := s.cursors[k]
	if c == nil || c.file != f {
		c = &cursor{file: f, used: make([]bool, len(f.lines))}
		if j != nil {
			if err := replay(ctx, j, c, runID, opID, m.key); err != nil {
				return nil, fmt.Errorf("scripted model %q: replay the run's journal: %w", m.key, err)
			}
		}
		s.cursors[k] = c
	}
	out := &operations.GenerateResult{Model: m.name}
	prompt, completion, usageGiven := 0, 0, false
	for len(out.Outputs) < want {
		idx := c.next(last)
		if idx < 0 {
			return nil, fmt.Errorf("scripted model %q: %w after %d replies", m.key, ErrScriptExhausted, c.count)
		}
		c.used[idx] = true
		c.count++
		l := f.lines[idx]
		if l.Error != "" {
			return nil, &callError{msg: fmt.Sprintf("scripted model %q: %s", m.key, l.Error), code: l.Code}
		}
		o := operations.Output{Content: l.Content, Reasoning: l.Reasoning, FinishReason: l.FinishReason}
		for j, tc := range l.ToolCalls {
			id := tc.ID
			if id == "" {
				id = fmt.Sprintf("call_script_%d_%d", l.lineNo, j)
			}
			o.ToolCalls = append(o.ToolCalls, operations.ToolCall{ID: id, Name: tc.Name, Arguments: tc.args()})
		}
		if o.FinishReason == "" {
			o.FinishReason = "stop"
			if len(o.ToolCalls) > 0 {
				o.FinishReason = "tool_calls"
			}
		}
		copies := min(max(1, l.N), want-len(out.Outputs))
		for range copies {
			out.Outputs = append(out.Outputs, o)
		}
		if l.Usage != nil {
			usageGiven = true
			prompt = max(prompt, l.Usage.PromptTokens)
			completion += l.Usage.CompletionTokens
		} else {
			completion += copies * estimateOutputs([]operations.Output{o})
		}
	}
	if !usageGiven {
		prompt = estimatePrompt(g.Messages, g.Tools)
	}
	out.Usage = operations.Usage{PromptTokens: prompt, CompletionTokens: completion}
	return out, nil
}
