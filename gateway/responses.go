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

// responsesRequest is the body of POST .../v1/responses (OpenAI's
// Responses API): the fields the gateway maps onto a generate.
type responsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
	Tools              []responsesTool `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Temperature        *float64        `json:"temperature"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	TopLogprobs        *int            `json:"top_logprobs"`
	Include            []string        `json:"include"`
	PreviousResponseID string          `json:"previous_response_id"`
	Reasoning          *struct {
		Effort string `json:"effort"`
	} `json:"reasoning"`
	Text *struct {
		Format *struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Strict      *bool           `json:"strict"`
		} `json:"format"`
	} `json:"text"`
	Stream bool `json:"stream"`

	// extra are the fields forwarded as they are (set by parseResponses).
	extra map[string]json.RawMessage
}

type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// responsesFields are the fields of a Responses request the gateway
// interprets. responsesIgnored are bookkeeping fields of OpenAI's
// service with no meaning for a generate (the gateway keeps every
// response of the session itself): accepted and dropped. responsesRefused
// are refused, with why. Every other field is forwarded to the endpoint
// as it is (GenerateRequest.Extra), as the chat route does.
var (
	responsesFields = []string{"model", "input", "instructions", "tools", "tool_choice", "temperature",
		"max_output_tokens", "top_logprobs", "include", "previous_response_id", "reasoning", "text", "stream"}
	responsesIgnored = []string{"store", "metadata", "truncation", "prompt_cache_key", "prompt_cache_retention",
		"prompt_cache_options", "context_management", "stream_options", "safety_identifier", "max_tool_calls"}
	responsesRefused = map[string]string{
		"background":   "background responses are not supported",
		"conversation": "conversations are not supported; chain responses with previous_response_id",
		"prompt":       "stored prompt templates are not supported; send instructions and input",
	}
)

// parseResponses decodes a Responses request body.
func parseResponses(body []byte) (*responsesRequest, error) {
	var rr responsesRequest
	if err := json.Unmarshal(body, &rr); err != nil {
		return nil, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(body, &all); err != nil {
		return nil, err
	}
	for k, v := range all {
		null := string(bytes.TrimSpace(v)) == "null"
		switch {
		case slices.Contains(responsesFields, k), slices.Contains(responsesIgnored, k):
		case responsesRefused[k] != "":
			if !null && string(bytes.TrimSpace(v)) != "false" {
				return nil, &badRequest{k, responsesRefused[k]}
			}
		case slices.Contains(operations.ReservedGenerateFields, k):
			return nil, &badRequest{k, "is not a field of the Responses API"}
		default:
			if null {
				continue
			}
			if rr.extra == nil {
				rr.extra = map[string]json.RawMessage{}
			}
			rr.extra[k] = compactJSON(v)
		}
	}
	return &rr, nil
}

// responseChain is what a session keeps of one response for
// previous_response_id: the response it continued and the messages it
// added to the conversation (its input, then its output), instructions
// excluded (OpenAI does not carry them over).
type responseChain struct {
	prev  string
	added []operations.Message
}

// conversation returns the messages of the chain ending at response id,
// oldest first. Call with s.mu held.
func (s *Session) conversationLocked(id string) ([]operations.Message, bool) {
	var parts [][]operations.Message
	for id != "" {
		c, ok := s.responses[id]
		if !ok {
			return nil, false
		}
		parts = append(parts, c.added)
		id = c.prev
	}
	var out []operations.Message
	for i := len(parts) - 1; i >= 0; i-- {
		out = append(out, parts[i]...)
	}
	return out, true
}

// history returns the conversation a request continues
// (previous_response_id), or a badRequest naming the field.
func (s *Session) history(prev string) ([]operations.Message, error) {
	if prev == "" {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	msgs, ok := s.conversationLocked(prev)
	if !ok {
		return nil, &badRequest{"previous_response_id", fmt.Sprintf("no response %q in this session", prev)}
	}
	return msgs, nil
}

// remember keeps response id for later previous_response_id: it
// continued prev and added the messages added.
func (s *Session) remember(id, prev string, added []operations.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.responses[id] = responseChain{prev: prev, added: added}
}

// toGenerate maps a Responses request onto a generate request for model,
// given the conversation it continues. It also returns the messages this
// request adds to the conversation (its input).
func (rr *responsesRequest) toGenerate(model string, history []operations.Message) (operations.GenerateRequest, []operations.Message, error) {
	g := operations.GenerateRequest{Model: model, Temperature: rr.Temperature}
	input, err := responsesInput(rr.Input)
	if err != nil {
		return g, nil, err
	}
	if len(input) == 0 && len(history) == 0 {
		return g, nil, &badRequest{"input", "must hold at least one item"}
	}
	if rr.Instructions != nil && *rr.Instructions != "" {
		g.Messages = append(g.Messages, operations.Message{Role: operations.RoleSystem, Content: *rr.Instructions})
	}
	g.Messages = append(g.Messages, history...)
	g.Messages = append(g.Messages, input...)
	for i, t := range rr.Tools {
		at := "tools[" + strconv.Itoa(i) + "]"
		if t.Type != "function" {
			return g, nil, &badRequest{at + ".type", fmt.Sprintf("%q is not supported: the gateway offers function tools only", t.Type)}
		}
		if t.Name == "" {
			return g, nil, &badRequest{at + ".name", "is required"}
		}
		g.Tools = append(g.Tools, operations.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	if tc := bytes.TrimSpace(rr.ToolChoice); len(tc) > 0 && string(tc) != "null" {
		var s string
		var obj struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		switch {
		case json.Unmarshal(tc, &s) == nil && (s == "auto" || s == "none" || s == "required"):
			g.ToolChoice = s
		case json.Unmarshal(tc, &obj) == nil && obj.Type == "function" && obj.Name != "":
			g.ToolChoice = obj.Name
		default:
			return g, nil, &badRequest{"tool_choice", `must be "auto", "none", "required" or {"type":"function","name":...}`}
		}
	}
	if rr.MaxOutputTokens != nil {
		if *rr.MaxOutputTokens < 0 {
			return g, nil, &badRequest{"max_output_tokens", "must not be negative"}
		}
		g.MaxTokens = *rr.MaxOutputTokens
	}
	if rr.TopLogprobs != nil {
		if *rr.TopLogprobs < 0 || *rr.TopLogprobs > 20 {
			return g, nil, &badRequest{"top_logprobs", "must be between 0 and 20"}
		}
		g.TopLogprobs = *rr.TopLogprobs
	}
	g.Logprobs = slices.Contains(rr.Include, "message.output_text.logprobs") || g.TopLogprobs > 0
	if rr.Reasoning != nil {
		g.ReasoningEffort = rr.Reasoning.Effort
	}
	if rr.Text != nil && rr.Text.Format != nil {
		f := rr.Text.Format
		var format any
		switch f.Type {
		case "", "text":
		case "json_object":
			format = map[string]any{"type": "json_object"}
		case "json_schema":
			js := map[string]any{"name": f.Name, "schema": f.Schema}
			if f.Description != "" {
				js["description"] = f.Description
			}
			if f.Strict != nil {
				js["strict"] = *f.Strict
			}
			format = map[string]any{"type": "json_schema", "json_schema": js}
		default:
			return g, nil, &badRequest{"text.format.type", fmt.Sprintf("%q is not text, json_object or json_schema", f.Type)}
		}
		if format != nil {
			b, err := json.Marshal(format)
			if err != nil {
				return g, nil, &badRequest{"text.format", err.Error()}
			}
			rr.setExtra("response_format", b)
		}
	}
	for k, v := range rr.extra {
		if g.Extra == nil {
			g.Extra = map[string]json.RawMessage{}
		}
		g.Extra[k] = v
	}
	return g, input, nil
}

func (rr *responsesRequest) setExtra(k string, v json.RawMessage) {
	if rr.extra == nil {
		rr.extra = map[string]json.RawMessage{}
	}
	rr.extra[k] = v
}

// responsesItem is one input item, as far as the gateway reads it.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	Summary   []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

// responsesInput maps the input (a string, or a list of items) onto chat
// messages: a run of reasoning, assistant message and function_call
// items is one assistant message (its reasoning, text and tool calls); a
// function_call_output is a tool message; user, system and developer
// messages are themselves (developer as system).
func responsesInput(raw json.RawMessage) ([]operations.Message, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []operations.Message{{Role: operations.RoleUser, Content: text}}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, &badRequest{"input", "must be a string or a list of items"}
	}
	var out []operations.Message
	// turn is the index in out of the assistant message being built from
	// consecutive output items, or -1.
	turn := -1
	assistant := func(fresh func(m *operations.Message) bool) *operations.Message {
		if turn < 0 || !fresh(&out[turn]) {
			out = append(out, operations.Message{Role: operations.RoleAssistant})
			turn = len(out) - 1
		}
		return &out[turn]
	}
	for i, b := range items {
		at := "input[" + strconv.Itoa(i) + "]"
		var it responsesItem
		if err := json.Unmarshal(b, &it); err != nil {
			return nil, &badRequest{at, "is not an input item: " + err.Error()}
		}
		typ := it.Type
		if typ == "" && it.Role != "" {
			typ = "message"
		}
		switch typ {
		case "message":
			content, err := contentText(it.Content, responsesTextParts...)
			if err != nil {
				return nil, &badRequest{at + ".content", err.Error()}
			}
			switch it.Role {
			case "assistant":
				m := assistant(func(m *operations.Message) bool { return m.Content == "" && len(m.ToolCalls) == 0 })
				m.Content = content
			case "user", "system", "developer":
				role := it.Role
				if role == "developer" {
					role = operations.RoleSystem
				}
				out = append(out, operations.Message{Role: role, Content: content})
				turn = -1
			default:
				return nil, &badRequest{at + ".role", fmt.Sprintf("%q is not user, system, developer or assistant", it.Role)}
			}
		case "reasoning":
			var parts []string
			for _, s := range it.Summary {
				parts = append(parts, s.Text)
			}
			m := assistant(func(m *operations.Message) bool { return m.Content == "" && len(m.ToolCalls) == 0 && m.Reasoning == "" })
			m.Reasoning = strings.Join(parts, "\n")
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return nil, &badRequest{at, "a function_call needs call_id and name"}
			}
			m := assistant(func(*operations.Message) bool { return true })
			m.ToolCalls = append(m.ToolCalls, operations.ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments})
		case "function_call_output":
			if it.CallID == "" {
				return nil, &badRequest{at + ".call_id", "a function_call_output must name the call it answers"}
			}
			content, err := contentText(it.Output, responsesTextParts...)
			if err != nil {
				return nil, &badRequest{at + ".output", err.Error()}
			}
			out = append(out, operations.Message{Role: operations.RoleTool, ToolCallID: it.CallID, Content: content})
			turn = -1
		default:
			return nil, &badRequest{at + ".type", fmt.Sprintf("%q is not supported: the gateway takes message, reasoning, function_call and function_call_output items", it.Type)}
		}
	}
	return out, nil
}

// responsesTextParts are the content parts of the Responses API that
// the gateway takes, as text.
var responsesTextParts = []string{"input_text", "output_text", "text", "refusal"}

// responseID is the id of the response a trace answered with.
func responseID(t *Trace) string { return "resp_" + itemSuffix(t) }

// itemSuffix makes a trace id usable inside item ids.
func itemSuffix(t *Trace) string { return strings.ReplaceAll(t.ID, ":", "_") }

// response is the Responses API's response object.
type response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Error              *apiError          `json:"error"`
	IncompleteDetails  *incompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []map[string]any   `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Reasoning          map[string]any     `json:"reasoning"`
	Store              bool               `json:"store"`
	Temperature        *float64           `json:"temperature"`
	Text               map[string]any     `json:"text"`
	ToolChoice         any                `json:"tool_choice"`
	Tools              []map[string]any   `json:"tools"`
	TopP               *float64           `json:"top_p"`
	Truncation         string             `json:"truncation"`
	Usage              *responsesUsage    `json:"usage"`
	Metadata           map[string]any     `json:"metadata"`
	Flock              *flockTraceRef     `json:"flock,omitempty"`
}

type incompleteDetails struct {
	Reason string `json:"reason"`
}

type responsesUsage struct {
	InputTokens         int            `json:"input_tokens"`
	InputTokensDetails  map[string]int `json:"input_tokens_details"`
	OutputTokens        int            `json:"output_tokens"`
	OutputTokensDetails map[string]int `json:"output_tokens_details"`
	TotalTokens         int            `json:"total_tokens"`
}

// responseShell is the response object of a request before its output:
// what a stream's response.created carries.
func responseShell(t *Trace, rr *responsesRequest) response {
	r := response{ID: responseID(t), Object: "response", CreatedAt: t.Time.Unix(), Status: "in_progress",
		Instructions: rr.Instructions, MaxOutputTokens: rr.MaxOutputTokens, Model: t.Request.Model,
		Output: []map[string]any{}, ParallelToolCalls: true, Temperature: rr.Temperature,
		Text: map[string]any{"format": map[string]any{"type": "text"}}, ToolChoice: "auto", Tools: []map[string]any{},
		Truncation: "disabled", Metadata: map[string]any{}, Reasoning: map[string]any{"effort": nil, "summary": nil},
		Flock: &flockTraceRef{TraceID: t.ID, Replayed: t.Replayed}}
	if rr.PreviousResponseID != "" {
		r.PreviousResponseID = &rr.PreviousResponseID
	}
	if t.Request.ReasoningEffort != "" {
		r.Reasoning["effort"] = t.Request.ReasoningEffort
	}
	if t.Request.ToolChoice != "" {
		switch t.Request.ToolChoice {
		case "auto", "none", "required":
			r.ToolChoice = t.Request.ToolChoice
		default:
			r.ToolChoice = map[string]any{"type": "function", "name": t.Request.ToolChoice}
		}
	}
	for _, tool := range t.Request.Tools {
		params := tool.Parameters
		if len(params) == 0 {
			params = json.RawMessage("null")
		}
		r.Tools = append(r.Tools, map[string]any{"type": "function", "name": tool.Name, "description": tool.Description,
			"parameters": params, "strict": false})
	}
	return r
}

// toResponse renders a trace as a completed (or incomplete) response:
// its first output as a reasoning item (when it has reasoning), a message
// (when it has text, or nothing else) and one function_call per tool
// call. Logprobs are included when the request asked for them.
func toResponse(t *Trace, rr *responsesRequest) response {
	r := responseShell(t, rr)
	r.Status = "completed"
	u := t.Result.Usage
	r.Usage = &responsesUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens,
		InputTokensDetails: map[string]int{"cached_tokens": 0}, OutputTokensDetails: map[string]int{"reasoning_tokens": 0}}
	if len(t.Result.Outputs) == 0 {
		return r
	}
	o := t.Result.Outputs[0]
	switch o.FinishReason {
	case "length":
		r.Status, r.IncompleteDetails = "incomplete", &incompleteDetails{Reason: "max_output_tokens"}
	case "content_filter":
		r.Status, r.IncompleteDetails = "incomplete", &incompleteDetails{Reason: "content_filter"}
	}
	r.Output = outputItems(t, o)
	return r
}

// outputItems are the output items of output o of trace t, completed.
func outputItems(t *Trace, o operations.Output) []map[string]any {
	sfx := itemSuffix(t)
	var items []map[string]any
	if o.Reasoning != "" {
		items = append(items, map[string]any{"type": "reasoning", "id": "rs_" + sfx,
			"summary": []map[string]any{{"type": "summary_text", "text": o.Reasoning}}})
	}
	if o.Content != "" || len(o.ToolCalls) == 0 {
		part := map[string]any{"type": "output_text", "text": o.Content, "annotations": []any{}}
		if t.Request.Logprobs || t.Request.TopLogprobs > 0 {
			lps := []map[string]any{}
			for _, lp := range o.Logprobs {
				top := []map[string]any{}
				for _, tp := range lp.Top {
					top = append(top, map[string]any{"token": tp.Token, "logprob": tp.Logprob, "bytes": []int{}})
				}
				lps = append(lps, map[string]any{"token": lp.Token, "logprob": lp.Logprob, "bytes": []int{}, "top_logprobs": top})
			}
			part["logprobs"] = lps
		}
		items = append(items, map[string]any{"type": "message", "id": "msg_" + sfx, "status": "completed", "role": "assistant",
			"content": []map[string]any{part}})
	}
	for j, tc := range o.ToolCalls {
		items = append(items, map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%s_%d", sfx, j),
			"call_id": toolCallID(t.Seq, 0, j, tc.ID), "name": tc.Name, "arguments": tc.Arguments, "status": "completed"})
	}
	return items
}

// answerMessage is the assistant message a response adds to its
// conversation (what a later previous_response_id continues), with the
// tool call ids the agent saw.
func answerMessage(t *Trace) []operations.Message {
	if len(t.Result.Outputs) == 0 {
		return nil
	}
	o := t.Result.Outputs[0]
	m := operations.Message{Role: operations.RoleAssistant, Content: o.Content, Reasoning: o.Reasoning}
	for j, tc := range o.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, operations.ToolCall{ID: toolCallID(t.Seq, 0, j, tc.ID), Name: tc.Name, Arguments: tc.Arguments})
	}
	return []operations.Message{m}
}

// responseEvents renders a trace as the events of a streamed response:
// response.created and response.in_progress, then per output item its
// added event, its content (reasoning summary, text with its logprobs,
// function call arguments) as one delta each and their done events, its
// done event, and response.completed (or response.incomplete) with the
// whole response. Each event carries its sequence_number.
func responseEvents(t *Trace, rr *responsesRequest) []map[string]any {
	full := toResponse(t, rr)
	shell := responseShell(t, rr)
	var out []map[string]any
	add := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = len(out)
		out = append(out, fields)
	}
	add("response.created", map[string]any{"response": shell})
	add("response.in_progress", map[string]any{"response": shell})
	for i, item := range full.Output {
		id, _ := item["id"].(string)
		switch item["type"] {
		case "reasoning":
			add("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"type": "reasoning", "id": id, "summary": []any{}}})
			for k, s := range item["summary"].([]map[string]any) {
				text := s["text"]
				add("response.reasoning_summary_part.added", map[string]any{"item_id": id, "output_index": i, "summary_index": k,
					"part": map[string]any{"type": "summary_text", "text": ""}})
				add("response.reasoning_summary_text.delta", map[string]any{"item_id": id, "output_index": i, "summary_index": k, "delta": text})
				add("response.reasoning_summary_text.done", map[string]any{"item_id": id, "output_index": i, "summary_index": k, "text": text})
				add("response.reasoning_summary_part.done", map[string]any{"item_id": id, "output_index": i, "summary_index": k, "part": s})
			}
		case "message":
			add("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"type": "message", "id": id,
				"status": "in_progress", "role": "assistant", "content": []any{}}})
			for k, part := range item["content"].([]map[string]any) {
				add("response.content_part.added", map[string]any{"item_id": id, "output_index": i, "content_index": k,
					"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
				delta := map[string]any{"item_id": id, "output_index": i, "content_index": k, "delta": part["text"], "logprobs": []any{}}
				done := map[string]any{"item_id": id, "output_index": i, "content_index": k, "text": part["text"], "logprobs": []any{}}
				if lps, ok := part["logprobs"]; ok {
					delta["logprobs"], done["logprobs"] = lps, lps
				}
				add("response.output_text.delta", delta)
				add("response.output_text.done", done)
				add("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": k, "part": part})
			}
		case "function_call":
			add("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"type": "function_call", "id": id,
				"call_id": item["call_id"], "name": item["name"], "arguments": "", "status": "in_progress"}})
			add("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": item["arguments"]})
			add("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "name": item["name"],
				"arguments": item["arguments"]})
		}
		add("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	end := "response.completed"
	if full.Status == "incomplete" {
		end = "response.incomplete"
	}
	add(end, map[string]any{"response": full})
	return out
}
