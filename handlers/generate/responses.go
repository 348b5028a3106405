package generate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/flockrun/flock/operations"
)

// send performs one request to the endpoint: a chat completion, or for a
// model whose endpoint has the Responses API (configs.Model.API) the same
// request as a Responses API request. merr is set when the endpoint
// answered 2xx with something that is not a reply; err when the request
// failed.
func (c *call) send(ctx context.Context, creq openai.ChatCompletionRequest, ex *exchange) (r *reply, merr, err error) {
	if c.m.responses {
		resp, err := c.client.CreateResponse(ctx, responsesRequest(creq))
		if err != nil {
			return nil, nil, err
		}
		r, merr = mapResponses(&resp, ex.body)
		return r, merr, nil
	}
	resp, err := c.client.CreateChatCompletion(ctx, creq)
	if err != nil {
		return nil, nil, err
	}
	r, merr = mapResponse(&resp, ex.body)
	return r, merr, nil
}

// responsesRequest maps a chat completion request (as chatRequest built
// it) onto OpenAI's Responses API: messages become input items (an
// assistant's tool calls function_call items, a tool message a
// function_call_output, images input_image parts), tools are inline
// function tools, logprobs are asked with top_logprobs and the include
// of output text logprobs, a reasoning effort asks for a reasoning
// summary too, so that the reasoning is journaled. n is not a field of
// the API: callOpenAI makes the missing outputs as parallel requests.
// Nothing is stored by the endpoint (store: false).
func responsesRequest(creq openai.ChatCompletionRequest) openai.CreateResponseRequest {
	store := false
	r := openai.CreateResponseRequest{Model: creq.Model, Store: &store}
	if creq.Temperature != 0 {
		t := creq.Temperature
		r.Temperature = &t
	}
	r.MaxOutputTokens = max(creq.MaxTokens, creq.MaxCompletionTokens)
	if creq.ReasoningEffort != "" {
		r.Reasoning = &openai.ResponseReasoning{Effort: creq.ReasoningEffort, Summary: "auto"}
	}
	if creq.LogProbs {
		r.Include = []openai.ResponseInclude{"message.output_text.logprobs"}
		r.TopLogprobs = creq.TopLogProbs
	}
	var input []any
	for _, m := range creq.Messages {
		switch {
		case m.Role == operations.RoleTool:
			input = append(input, openai.ResponseFunctionCallOutput{Type: "function_call_output", CallID: m.ToolCallID, Output: m.Content})
		case m.Role == operations.RoleAssistant:
			if m.Content != "" {
				input = append(input, openai.ResponseInputMessage{Role: m.Role, Content: m.Content})
			}
			for _, tc := range m.ToolCalls {
				input = append(input, map[string]any{"type": "function_call", "call_id": tc.ID, "name": tc.Function.Name,
					"arguments": tc.Function.Arguments})
			}
		case len(m.MultiContent) > 0:
			var parts []any
			for _, p := range m.MultiContent {
				switch p.Type {
				case openai.ChatMessagePartTypeImageURL:
					if p.ImageURL != nil {
						parts = append(parts, openai.ResponseInputImage{Type: "input_image", ImageURL: p.ImageURL.URL, Detail: string(p.ImageURL.Detail)})
					}
				default:
					parts = append(parts, openai.ResponseInputText{Type: "input_text", Text: p.Text})
				}
			}
			input = append(input, openai.ResponseInputMessage{Role: m.Role, Content: parts})
		default:
			input = append(input, openai.ResponseInputMessage{Role: m.Role, Content: m.Content})
		}
	}
	r.Input = input
	for _, t := range creq.Tools {
		if t.Function != nil {
			r.Tools = append(r.Tools, openai.NewResponseFunctionTool(*t.Function))
		}
	}
	switch tc := creq.ToolChoice.(type) {
	case string:
		r.ToolChoice = tc
	case openai.ToolChoice:
		r.ToolChoice = map[string]any{"type": "function", "name": tc.Function.Name}
	}
	if len(creq.Stop) > 0 {
		// The Responses API has no stop sequences; an endpoint that takes
		// them (vLLM) reads the chat name.
		stop, _ := json.Marshal(creq.Stop)
		r.ExtraBody = map[string]any{"stop": json.RawMessage(stop)}
	}
	return r
}

// responsesOutput is the part of a Responses API answer flock reads, from
// its raw body (go-openai decodes output items as untyped values).
type responsesOutput struct {
	Status            string `json:"status"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Output []struct {
		Type      string `json:"type"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		Summary   []struct {
			Text string `json:"text"`
		} `json:"summary"`
		Content []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			Refusal  string `json:"refusal"`
			Logprobs []struct {
				Token       string  `json:"token"`
				Logprob     float64 `json:"logprob"`
				TopLogprobs []struct {
					Token   string  `json:"token"`
					Logprob float64 `json:"logprob"`
				} `json:"top_logprobs"`
			} `json:"logprobs"`
		} `json:"content"`
	} `json:"output"`
}

// mapResponses converts a Responses API answer into one output: the text
// of its messages, the reasoning summaries (or reasoning text) of its
// reasoning items, its function calls as tool calls, the output text's
// logprobs; finish reason length when it ended incomplete for its token
// cap, tool_calls when it called a function, else stop. A failed answer,
// or one that cannot be read, is malformed.
func mapResponses(resp *openai.CreateResponseResponse, body []byte) (*reply, error) {
	var out responsesOutput
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformedReply, err)
	}
	if resp.Error != nil && resp.Error.Message != "" {
		return nil, fmt.Errorf("%w: the response failed: %s", ErrMalformedReply, resp.Error.Message)
	}
	var o operations.Output
	var text, reasoning []string
	for _, item := range out.Output {
		switch item.Type {
		case "message":
			for _, c := range item.Content {
				switch c.Type {
				case "output_text":
					text = append(text, c.Text)
				case "refusal":
					text = append(text, c.Refusal)
				}
				for _, lp := range c.Logprobs {
					l := operations.Logprob{Token: lp.Token, Logprob: lp.Logprob}
					for _, t := range lp.TopLogprobs {
						l.Top = append(l.Top, operations.TopProb{Token: t.Token, Logprob: t.Logprob})
					}
					o.Logprobs = append(o.Logprobs, l)
				}
			}
		case "reasoning":
			for _, s := range item.Summary {
				reasoning = append(reasoning, s.Text)
			}
			if len(item.Summary) == 0 {
				for _, c := range item.Content {
					reasoning = append(reasoning, c.Text)
				}
			}
		case "function_call":
			o.ToolCalls = append(o.ToolCalls, operations.ToolCall{ID: item.CallID, Name: item.Name, Arguments: item.Arguments})
		}
	}
	if len(out.Output) == 0 && out.Status != "incomplete" {
		return nil, fmt.Errorf("%w: no output", ErrMalformedReply)
	}
	o.Content, o.Reasoning = strings.Join(text, ""), strings.Join(reasoning, "\n")
	switch {
	case out.Status == "incomplete" && out.IncompleteDetails != nil && out.IncompleteDetails.Reason == "max_output_tokens":
		o.FinishReason = "length"
	case out.Status == "incomplete" && out.IncompleteDetails != nil && out.IncompleteDetails.Reason == "content_filter":
		o.FinishReason = "content_filter"
	case len(o.ToolCalls) > 0:
		o.FinishReason = "tool_calls"
	default:
		o.FinishReason = "stop"
	}
	r := &reply{model: resp.Model, outputs: []operations.Output{o}}
	if resp.Usage != nil {
		r.usage = operations.Usage{PromptTokens: resp.Usage.InputTokens, CompletionTokens: resp.Usage.OutputTokens}
	}
	return r, nil
}
