package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/flockrun/flock/operations"
)

// chatRequest is the body of POST .../v1/chat/completions: the fields of
// OpenAI's chat-completions request that the gateway maps onto a generate.
// The others (seed, top_p, vendor extensions...) are kept in extra and
// forwarded as they are (see chatExtra).
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Tools               []chatTool      `json:"tools,omitempty"`
	ToolChoice          json.RawMessage `json:"tool_choice,omitempty"`
	N                   *int            `json:"n,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	MaxTokens           *int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int            `json:"max_completion_tokens,omitempty"`
	Stop                json.RawMessage `json:"stop,omitempty"`
	ReasoningEffort     string          `json:"reasoning_effort,omitempty"`
	Logprobs            *bool           `json:"logprobs,omitempty"`
	TopLogprobs         *int            `json:"top_logprobs,omitempty"`
	// ReturnTokenIDs is vLLM's and SGLang's ask for token ids.
	ReturnTokenIDs *bool           `json:"return_token_ids,omitempty"`
	Stream         bool            `json:"stream,omitempty"`
	StreamOptions  json.RawMessage `json:"stream_options,omitempty"`

	// includeUsage is stream_options.include_usage; extra the fields the
	// gateway does not interpret (set by parseChat).
	includeUsage bool
	extra        map[string]json.RawMessage
}

// chatFields are the chat-completion fields the gateway interprets; every
// other field of a request is forwarded to the endpoint as it is
// (GenerateRequest.Extra), except those of refusedFields.
var chatFields = []string{"model", "messages", "tools", "tool_choice", "n", "temperature", "max_tokens",
	"max_completion_tokens", "stop", "reasoning_effort", "logprobs", "top_logprobs", "return_token_ids",
	"stream", "stream_options"}

// refusedFields are request fields the gateway refuses, because what they
// ask for could not be journaled or replayed as the agent would see it,
// with why.
var refusedFields = map[string]string{
	"functions":     "the legacy functions API is not supported; use tools",
	"function_call": "the legacy functions API is not supported; use tool_choice",
	"modalities":    "only text replies are journaled (no audio output)",
	"audio":         "only text replies are journaled (no audio output)",
}

// parseChat decodes a chat-completion body: the fields the gateway
// interprets, and the others as extra.
func parseChat(body []byte) (*chatRequest, error) {
	var cr chatRequest
	if err := json.Unmarshal(body, &cr); err != nil {
		return nil, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(body, &all); err != nil {
		return nil, err
	}
	for k, v := range all {
		if slices.Contains(chatFields, k) {
			continue
		}
		if why, refused := refusedFields[k]; refused {
			if string(bytes.TrimSpace(v)) == "null" {
				continue
			}
			return nil, &badRequest{k, why}
		}
		if cr.extra == nil {
			cr.extra = map[string]json.RawMessage{}
		}
		cr.extra[k] = v
	}
	if so := bytes.TrimSpace(cr.StreamOptions); len(so) > 0 && string(so) != "null" {
		var opts map[string]json.RawMessage
		if err := json.Unmarshal(so, &opts); err != nil {
			return nil, &badRequest{"stream_options", "must be an object"}
		}
		for k, v := range opts {
			if k != "include_usage" {
				return nil, &badRequest{"stream_options." + k, "is not supported: the gateway answers a stream from the journaled reply, so only include_usage applies"}
			}
			if err := json.Unmarshal(v, &cr.includeUsage); err != nil {
				return nil, &badRequest{"stream_options.include_usage", "must be a boolean"}
			}
		}
	}
	return &cr, nil
}

type chatMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	Name             string          `json:"name,omitempty"`
	ToolCalls        []chatToolCall  `json:"tool_calls,omitempty"`
	ToolCallID       string          `json:"tool_call_id,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	Reasoning        string          `json:"reasoning,omitempty"`
}

type chatToolCall struct {
	// Index is set in stream chunks only.
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

// badRequest is a request the gateway refuses, naming the field.
type badRequest struct{ field, reason string }

func (e *badRequest) Error() string { return e.field + ": " + e.reason }

// toGenerate maps a chat request onto a generate request for model.
func (c *chatRequest) toGenerate(model string) (operations.GenerateRequest, error) {
	g := operations.GenerateRequest{Model: model, Temperature: c.Temperature, ReasoningEffort: c.ReasoningEffort}
	if len(c.Messages) == 0 {
		return g, &badRequest{"messages", "must hold at least one message"}
	}
	for i, m := range c.Messages {
		at := "messages[" + strconv.Itoa(i) + "]"
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		default:
			return g, &badRequest{at + ".role", fmt.Sprintf("%q is not system, developer, user, assistant or tool", m.Role)}
		}
		text, err := contentText(m.Content, "text")
		if err != nil {
			return g, &badRequest{at + ".content", err.Error()}
		}
		role := m.Role
		if role == "developer" {
			role = operations.RoleSystem
		}
		msg := operations.Message{Role: role, Content: text, Name: m.Name, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, operations.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		if role == operations.RoleTool && m.ToolCallID == "" {
			return g, &badRequest{at + ".tool_call_id", "a tool message must answer a tool call"}
		}
		g.Messages = append(g.Messages, msg)
	}
	for i, t := range c.Tools {
		if t.Type != "" && t.Type != "function" {
			return g, &badRequest{"tools[" + strconv.Itoa(i) + "].type", fmt.Sprintf("%q is not function", t.Type)}
		}
		if t.Function.Name == "" {
			return g, &badRequest{"tools[" + strconv.Itoa(i) + "].function.name", "is required"}
		}
		g.Tools = append(g.Tools, operations.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	if tc := bytes.TrimSpace(c.ToolChoice); len(tc) > 0 && string(tc) != "null" {
		var s string
		var obj struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		switch {
		case json.Unmarshal(tc, &s) == nil && (s == "auto" || s == "none" || s == "required"):
			g.ToolChoice = s
		case json.Unmarshal(tc, &obj) == nil && obj.Function.Name != "":
			g.ToolChoice = obj.Function.Name
		default:
			return g, &badRequest{"tool_choice", `must be "auto", "none", "required" or {"type":"function","function":{"name":...}}`}
		}
	}
	if c.N != nil {
		if *c.N < 1 || *c.N > 128 {
			return g, &badRequest{"n", "must be between 1 and 128"}
		}
		if *c.N > 1 {
			g.N = *c.N
		}
	}
	switch {
	case c.MaxCompletionTokens != nil:
		g.MaxTokens = *c.MaxCompletionTokens
	case c.MaxTokens != nil:
		g.MaxTokens = *c.MaxTokens
	}
	if g.MaxTokens < 0 {
		return g, &badRequest{"max_tokens", "must not be negative"}
	}
	if st := bytes.TrimSpace(c.Stop); len(st) > 0 && string(st) != "null" {
		var one string
		if json.Unmarshal(st, &one) == nil {
			g.Stop = []string{one}
		} else if err := json.Unmarshal(st, &g.Stop); err != nil {
			return g, &badRequest{"stop", "must be a string or a list of strings"}
		}
	}
	if c.Logprobs != nil {
		g.Logprobs = *c.Logprobs
	}
	if c.TopLogprobs != nil {
		if *c.TopLogprobs < 0 || *c.TopLogprobs > 20 {
			return g, &badRequest{"top_logprobs", "must be between 0 and 20"}
		}
		g.TopLogprobs = *c.TopLogprobs
	}
	if c.ReturnTokenIDs != nil {
		g.TokenIDs = *c.ReturnTokenIDs
	}
	for k, v := range c.extra {
		if slices.Contains(operations.ReservedGenerateFields, k) {
			return g, &badRequest{k, "is not supported by the gateway"}
		}
		if g.Extra == nil {
			g.Extra = map[string]json.RawMessage{}
		}
		g.Extra[k] = compactJSON(v)
	}
	return g, nil
}

// compactJSON returns v without insignificant space, so that two requests
// that differ only in spacing are the same request (for replay).
func compactJSON(v json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return v
	}
	return b.Bytes()
}

// contentText returns a message content as text: a string, null, or a
// list of parts whose type is one of textTypes (their text joined;
// "refusal" parts give their refusal). Other parts (images, audio,
// files) are refused.
func contentText(raw json.RawMessage, textTypes ...string) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("must be a string or a list of content parts")
	}
	var b strings.Builder
	for i, p := range parts {
		switch {
		case !slices.Contains(textTypes, p.Type):
			return "", fmt.Errorf("part %d is %q: only text parts are supported", i, p.Type)
		case p.Type == "refusal":
			b.WriteString(p.Refusal)
		default:
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// completion is the non-streaming answer.
type completion struct {
	ID                string         `json:"id"`
	Object            string         `json:"object"`
	Created           int64          `json:"created"`
	Model             string         `json:"model"`
	Choices           []choice       `json:"choices"`
	Usage             *usage         `json:"usage,omitempty"`
	PromptTokenIDs    []int          `json:"prompt_token_ids,omitempty"`
	SystemFingerprint string         `json:"system_fingerprint,omitempty"`
	Flock             *flockTraceRef `json:"flock,omitempty"`
}

// flockTraceRef tells the agent which trace answered it (the same as the
// X-Flock-Trace-Id header).
type flockTraceRef struct {
	TraceID  string `json:"trace_id"`
	Replayed bool   `json:"replayed,omitempty"`
}

type choice struct {
	Index        int          `json:"index"`
	Message      *respMessage `json:"message,omitempty"`
	Delta        *respMessage `json:"delta,omitempty"`
	FinishReason *string      `json:"finish_reason"`
	Logprobs     *logprobs    `json:"logprobs"`
	TokenIDs     []int        `json:"token_ids,omitempty"`
}

type respMessage struct {
	Role             string         `json:"role,omitempty"`
	Content          *string        `json:"content"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
}

type logprobs struct {
	Content []tokenLogprob `json:"content"`
}

type tokenLogprob struct {
	Token       string         `json:"token"`
	Logprob     float64        `json:"logprob"`
	Bytes       []int          `json:"bytes"`
	TopLogprobs []tokenLogprob `json:"top_logprobs"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// toolCallID gives a tool call without an id (simulated, scripted) a
// stable one: the trace and the choice and call indexes.
func toolCallID(traceSeq, choiceIdx, callIdx int, id string) string {
	if id != "" {
		return id
	}
	return fmt.Sprintf("call_%d_%d_%d", traceSeq, choiceIdx, callIdx)
}

func finishReason(o operations.Output) string {
	if o.FinishReason != "" {
		return o.FinishReason
	}
	if len(o.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func toLogprobs(lps []operations.Logprob) *logprobs {
	out := &logprobs{Content: make([]tokenLogprob, 0, len(lps))}
	for _, lp := range lps {
		t := tokenLogprob{Token: lp.Token, Logprob: lp.Logprob, TopLogprobs: []tokenLogprob{}}
		for _, top := range lp.Top {
			t.TopLogprobs = append(t.TopLogprobs, tokenLogprob{Token: top.Token, Logprob: top.Logprob})
		}
		out.Content = append(out.Content, t)
	}
	return out
}

// toCompletion renders a trace as OpenAI's chat.completion. Logprobs are
// included when the request asked for them.
func toCompletion(t *Trace) completion {
	c := completion{ID: t.completionID(), Object: "chat.completion", Created: t.Time.Unix(), Model: t.Request.Model,
		PromptTokenIDs: t.Result.PromptTokenIDs,
		Usage: &usage{PromptTokens: t.Result.Usage.PromptTokens, CompletionTokens: t.Result.Usage.CompletionTokens,
			TotalTokens: t.Result.Usage.PromptTokens + t.Result.Usage.CompletionTokens},
		Flock: &flockTraceRef{TraceID: t.ID, Replayed: t.Replayed}}
	wantLogprobs := t.Request.Logprobs || t.Request.TopLogprobs > 0
	for i, o := range t.Result.Outputs {
		content := o.Content
		m := &respMessage{Role: "assistant", Content: &content, ReasoningContent: o.Reasoning}
		if content == "" && len(o.ToolCalls) > 0 {
			m.Content = nil
		}
		for j, tc := range o.ToolCalls {
			call := chatToolCall{ID: toolCallID(t.Seq, i, j, tc.ID), Type: "function"}
			call.Function.Name, call.Function.Arguments = tc.Name, tc.Arguments
			m.ToolCalls = append(m.ToolCalls, call)
		}
		fr := finishReason(o)
		ch := choice{Index: i, Message: m, FinishReason: &fr, TokenIDs: o.TokenIDs}
		if wantLogprobs && len(o.Logprobs) > 0 {
			ch.Logprobs = toLogprobs(o.Logprobs)
		}
		c.Choices = append(c.Choices, ch)
	}
	return c
}

// toChunks renders a trace as the chunks of a streamed answer: per
// choice a role chunk, the reasoning, the content, each tool call, then a
// finish chunk; with includeUsage a last chunk without choices carries the
// usage.
func toChunks(t *Trace, includeUsage bool) []completion {
	full := toCompletion(t)
	base := func() completion {
		return completion{ID: full.ID, Object: "chat.completion.chunk", Created: full.Created, Model: full.Model,
			Flock: full.Flock}
	}
	var out []completion
	empty := ""
	for _, ch := range full.Choices {
		first := base()
		first.Choices = []choice{{Index: ch.Index, Delta: &respMessage{Role: "assistant", Content: &empty}}}
		if ch.Index == 0 {
			first.PromptTokenIDs = full.PromptTokenIDs // as vLLM streams them: in the first chunk
		}
		out = append(out, first)
		if r := ch.Message.ReasoningContent; r != "" {
			c := base()
			c.Choices = []choice{{Index: ch.Index, Delta: &respMessage{ReasoningContent: r}}}
			out = append(out, c)
		}
		if ch.Message.Content != nil && *ch.Message.Content != "" {
			c := base()
			c.Choices = []choice{{Index: ch.Index, Delta: &respMessage{Content: ch.Message.Content}, Logprobs: ch.Logprobs,
				TokenIDs: ch.TokenIDs}}
			out = append(out, c)
		}
		for j, tc := range ch.Message.ToolCalls {
			idx := j
			tc.Index = &idx
			c := base()
			c.Choices = []choice{{Index: ch.Index, Delta: &respMessage{ToolCalls: []chatToolCall{tc}}}}
			out = append(out, c)
		}
		last := base()
		last.Choices = []choice{{Index: ch.Index, Delta: &respMessage{}, FinishReason: ch.FinishReason}}
		out = append(out, last)
	}
	if includeUsage {
		u := base()
		u.Choices = []choice{}
		u.Usage = full.Usage
		out = append(out, u)
	}
	return out
}

// apiError is an OpenAI-shaped error answer.
type apiError struct {
	status int
	// Message names what is wrong; Type and Code follow OpenAI's
	// (invalid_request_error, authentication_error, rate_limit_exceeded...).
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) Error() string { return e.Message }

func newAPIError(status int, typ, code, msg string) *apiError {
	e := &apiError{status: status, Message: msg, Type: typ}
	if code != "" {
		e.Code = &code
	}
	return e
}
