package generate

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"

	openai "github.com/sashabaranov/go-openai"
	"golang.org/x/sync/errgroup"

	"github.com/flockrun/flock/handlers"
	"github.com/flockrun/flock/operations"
)

// clientKey identifies a cached go-openai client.
type clientKey struct{ baseURL, keyEnv string }

type clientEntry struct {
	// apiKey is the key the client was built with; a changed environment
	// value builds a new client.
	apiKey string
	client *openai.Client
}

// client returns the cached client for m, building it when the key changed.
func (h *Handler) client(m *model, apiKey string) *openai.Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := clientKey{m.baseURL, m.keyEnv}
	if e, ok := h.clients[k]; ok && e.apiKey == apiKey {
		return e.client
	}
	if h.transport == nil {
		var base http.RoundTripper
		if h.opts.HTTPClient != nil && h.opts.HTTPClient.Transport != nil {
			base = h.opts.HTTPClient.Transport
		} else {
			base = http.DefaultTransport.(*http.Transport).Clone()
		}
		h.transport = &captureTransport{base: base}
	}
	cfg := openai.DefaultConfig(apiKey)
	cfg.BaseURL = m.baseURL
	hc := &http.Client{Transport: h.transport}
	if h.opts.HTTPClient != nil {
		hc.CheckRedirect = h.opts.HTTPClient.CheckRedirect
		hc.Jar = h.opts.HTTPClient.Jar
	}
	cfg.HTTPClient = hc
	c := openai.NewClientWithConfig(cfg)
	h.clients[k] = &clientEntry{apiKey: apiKey, client: c}
	return c
}

// callOpenAI runs g against an OpenAI-compatible endpoint: one request with
// n, then, if the endpoint returned fewer choices than n, the missing ones
// as parallel single requests. Usage is summed over all requests.
func (h *Handler) callOpenAI(ctx context.Context, env handlers.Env, m *model, g *operations.GenerateRequest) (*operations.GenerateResult, error) {
	apiKey := h.getenv(m.keyEnv)
	if apiKey == "" {
		return nil, m.missingKey()
	}
	c := &call{h: h, m: m, client: h.client(m, apiKey), apiKey: apiKey, lims: h.limiters(env.RunID, m),
		host: endpointHost(m.baseURL), waiting: env.Waiting}
	c.setDeadline(env)
	creq := chatRequest(m, g)
	first, err := c.do(ctx, creq)
	if err != nil {
		return nil, err
	}
	want := max(1, g.N)
	out := &operations.GenerateResult{Model: first.model}
	out.Outputs = append(out.Outputs, first.outputs...)
	out.Usage = first.usage
	if missing := want - len(out.Outputs); missing > 0 {
		single := creq
		single.N = 0
		parts := make([]*reply, missing)
		eg, ectx := errgroup.WithContext(ctx)
		for i := range parts {
			eg.Go(func() error {
				r, err := c.do(ectx, single)
				parts[i] = r
				return err
			})
		}
		if err := eg.Wait(); err != nil {
			return nil, err
		}
		for _, r := range parts {
			out.Outputs = append(out.Outputs, r.outputs...)
			out.Usage.PromptTokens += r.usage.PromptTokens
			out.Usage.CompletionTokens += r.usage.CompletionTokens
		}
	}
	if len(out.Outputs) > want {
		out.Outputs = out.Outputs[:want]
	}
	return out, nil
}

// endpointHost is the host of a base URL, for error messages (never the
// path, query or user info, which could hold credentials).
func endpointHost(base string) string {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return "the endpoint"
	}
	return u.Host
}

// reasoningPrefixes are model-name prefixes of OpenAI reasoning models,
// which reject max_tokens (go-openai refuses it client-side too).
var reasoningPrefixes = []string{"o1", "o3", "o4", "gpt-5", "gpt-6"}

// useMaxCompletionTokens reports whether max_tokens is sent as
// max_completion_tokens: for api.openai.com (where max_tokens is
// deprecated) and for reasoning-model names anywhere. Other endpoints
// (vLLM, Ollama, llama.cpp) get the widely supported max_tokens.
func useMaxCompletionTokens(m *model) bool {
	if strings.EqualFold(endpointHost(m.baseURL), "api.openai.com") {
		return true
	}
	name := strings.ToLower(m.name)
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	for _, p := range reasoningPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// emptySchema stands in for a tool without parameters: OpenAI rejects null.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// chatRequest maps a generate request to a chat completion request.
// Message.Reasoning is not sent back (several endpoints reject
// reasoning_content in input messages); tool_choice is dropped when no
// tools are offered; a temperature of exactly 0 is sent as the smallest
// float32 (go-openai omits a zero temperature).
func chatRequest(m *model, g *operations.GenerateRequest) openai.ChatCompletionRequest {
	r := openai.ChatCompletionRequest{
		Model:           m.name,
		Stop:            g.Stop,
		ReasoningEffort: g.ReasoningEffort,
		LogProbs:        g.Logprobs || g.TopLogprobs > 0,
		TopLogProbs:     g.TopLogprobs,
	}
	if g.N > 1 {
		r.N = g.N
	}
	if g.Temperature != nil {
		t := float32(*g.Temperature)
		if t == 0 {
			t = math.SmallestNonzeroFloat32
		}
		r.Temperature = t
	}
	if g.MaxTokens > 0 {
		if useMaxCompletionTokens(m) {
			r.MaxCompletionTokens = g.MaxTokens
		} else {
			r.MaxTokens = g.MaxTokens
		}
	}
	r.Messages = make([]openai.ChatCompletionMessage, 0, len(g.Messages))
	for _, msg := range g.Messages {
		cm := openai.ChatCompletionMessage{
			Role:       msg.Role,
			Content:    msg.Content,
			Name:       msg.Name,
			ToolCallID: msg.ToolCallID,
		}
		for _, tc := range msg.ToolCalls {
			cm.ToolCalls = append(cm.ToolCalls, openai.ToolCall{
				ID:       tc.ID,
				Type:     openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
			})
		}
		r.Messages = append(r.Messages, cm)
	}
	for _, t := range g.Tools {
		params := t.Parameters
		if len(params) == 0 || string(params) == "null" {
			params = emptySchema
		}
		r.Tools = append(r.Tools, openai.Tool{
			Type: openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{
				Name:        t.Name,
				Description: t.Description,
				Parameters:  params,
			},
		})
	}
	if len(r.Tools) > 0 {
		switch g.ToolChoice {
		case "":
		case "auto", "none", "required":
			r.ToolChoice = g.ToolChoice
		default:
			r.ToolChoice = openai.ToolChoice{Type: openai.ToolTypeFunction, Function: openai.ToolFunction{Name: g.ToolChoice}}
		}
	}
	return r
}

// reply is one successful chat completion, mapped.
type reply struct {
	model   string
	outputs []operations.Output
	usage   operations.Usage
}

// rawExtras are fields some OpenAI-compatible servers add that go-openai
// does not decode: message.reasoning (vLLM, OpenRouter) and token_ids (vLLM
// with return_token_ids).
type rawExtras struct {
	Choices []struct {
		Message struct {
			Reasoning json.RawMessage `json:"reasoning"`
		} `json:"message"`
		TokenIDs []int `json:"token_ids"`
	} `json:"choices"`
}

// mapResponse converts a decoded response (and its raw body, when captured)
// into outputs. A reply without choices is malformed.
func mapResponse(resp *openai.ChatCompletionResponse, body []byte) (*reply, error) {
	if len(resp.Choices) == 0 {
		return nil, fmt.Errorf("%w: no choices", ErrMalformedReply)
	}
	var extras rawExtras
	if len(body) > 0 {
		_ = json.Unmarshal(body, &extras) // best effort: go-openai already decoded the body
	}
	r := &reply{model: resp.Model}
	for i, ch := range resp.Choices {
		msg := ch.Message
		o := operations.Output{
			Content:      msg.Content,
			Reasoning:    msg.ReasoningContent,
			FinishReason: string(ch.FinishReason),
		}
		if o.Content == "" && msg.Refusal != "" {
			o.Content = msg.Refusal
		}
		if i < len(extras.Choices) {
			x := extras.Choices[i]
			if o.Reasoning == "" && len(x.Message.Reasoning) > 0 {
				var s string
				if json.Unmarshal(x.Message.Reasoning, &s) == nil {
					o.Reasoning = s
				}
			}
			o.TokenIDs = x.TokenIDs
		}
		for _, tc := range msg.ToolCalls {
			o.ToolCalls = append(o.ToolCalls, operations.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		if msg.FunctionCall != nil && msg.FunctionCall.Name != "" {
			o.ToolCalls = append(o.ToolCalls, operations.ToolCall{Name: msg.FunctionCall.Name, Arguments: msg.FunctionCall.Arguments})
		}
		if ch.LogProbs != nil {
			for _, lp := range ch.LogProbs.Content {
				l := operations.Logprob{Token: lp.Token, Logprob: lp.LogProb}
				for _, t := range lp.TopLogProbs {
					l.Top = append(l.Top, operations.TopProb{Token: t.Token, Logprob: t.LogProb})
				}
				o.Logprobs = append(o.Logprobs, l)
			}
		}
		r.outputs = append(r.outputs, o)
	}
	r.usage = operations.Usage{PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens}
	return r, nil
}
