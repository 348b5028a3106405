package generate

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
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
	extra, err := requestExtra(m, g)
	if err != nil {
		return nil, err
	}
	c := &call{h: h, m: m, client: h.client(m, apiKey), apiKey: apiKey, lims: h.limiters(env.RunID, m),
		host: endpointHost(m.baseURL), waiting: env.Waiting, mayStart: env.MayStart, extra: extra}
	c.setDeadline(env)
	creq := chatRequest(m, g)
	first, err := c.do(ctx, creq)
	if err != nil {
		return nil, err
	}
	want := max(1, g.N)
	out := &operations.GenerateResult{Model: first.model, PromptTokenIDs: first.promptTokenIDs}
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

// requestExtra returns the fields sent beside those go-openai writes:
// g.Extra, and return_token_ids when g or the model asks for token ids.
// A key of g.Extra that flock writes itself, or a value that is not
// JSON, is refused, naming it.
func requestExtra(m *model, g *operations.GenerateRequest) (map[string]json.RawMessage, error) {
	var out map[string]json.RawMessage
	if len(g.Extra) > 0 {
		out = make(map[string]json.RawMessage, len(g.Extra)+1)
		for _, k := range slices.Sorted(maps.Keys(g.Extra)) {
			v := g.Extra[k]
			if slices.Contains(operations.ReservedGenerateFields, k) {
				return nil, fmt.Errorf("%w: extra.%s: flock sets %s itself; use the request's own field", ErrBadRequest, k, k)
			}
			if !json.Valid(v) {
				return nil, fmt.Errorf("%w: extra.%s: not a JSON value", ErrBadRequest, k)
			}
			out[k] = v
		}
	}
	if g.TokenIDs || m.tokenIDs {
		if out == nil {
			out = map[string]json.RawMessage{}
		}
		out["return_token_ids"] = json.RawMessage("true")
	}
	return out, nil
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

// maxImages is how many of a request's latest images reach a vision model.
const maxImages = 3

// imageParts returns the image_url content parts of images (data URLs).
func imageParts(images []operations.Image) []openai.ChatMessagePart {
	out := make([]openai.ChatMessagePart, 0, len(images))
	for _, img := range images {
		out = append(out, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL,
			ImageURL: &openai.ChatMessageImageURL{URL: img.DataURL()}})
	}
	return out
}

// imagesOmitted is the note a text-only model gets in place of images.
func imagesOmitted(n int) string {
	if n == 1 {
		return "[1 image not shown: this model takes text only]"
	}
	return fmt.Sprintf("[%d images not shown: this model takes text only]", n)
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
		LogProbs:        g.Logprobs || g.TopLogprobs > 0 || m.logprobs || m.topLogprobs > 0,
		TopLogProbs:     max(g.TopLogprobs, m.topLogprobs),
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
	// Images of tool (and other non-user) messages wait here for the end
	// of the run of tool messages answering one assistant turn: the wire
	// takes image parts in user messages only, and nothing may come
	// between an assistant's tool calls and their answers.
	var images []openai.ChatMessagePart
	// Only the latest maxImages images are sent; older ones are dropped
	// (their placeholders stay), as a screenshot-driven agent needs the
	// current screen and each image costs ~1k tokens.
	skip := -maxImages
	for _, msg := range g.Messages {
		skip += len(msg.Images)
	}
	flush := func() {
		if len(images) > 0 {
			r.Messages = append(r.Messages, openai.ChatCompletionMessage{Role: operations.RoleUser, MultiContent: images})
			images = nil
		}
	}
	for _, msg := range g.Messages {
		if msg.Role != operations.RoleTool {
			flush()
		}
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
		sent := msg.Images
		if skip > 0 {
			n := min(skip, len(sent))
			sent, skip = sent[n:], skip-n
			if n > 0 && m.vision {
				cm.Content += "\n" + fmt.Sprintf("[%d older image(s) not shown: only the latest %d are sent]", n, maxImages)
			}
		}
		switch {
		case len(msg.Images) == 0:
		case !m.vision:
			cm.Content += "\n" + imagesOmitted(len(msg.Images))
		case len(sent) == 0:
		case msg.Role == operations.RoleUser:
			cm.MultiContent = append([]openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: cm.Content}}, imageParts(sent)...)
			cm.Content = ""
		default:
			intro := "The image"
			if len(sent) > 1 {
				intro = "The images"
			}
			if src := sent[0].Source; src != "" {
				intro += " returned by " + src
			}
			if msg.ToolCallID != "" {
				intro += " (call " + msg.ToolCallID + ")"
			}
			images = append(images, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: intro + ":"})
			images = append(images, imageParts(sent)...)
		}
		r.Messages = append(r.Messages, cm)
	}
	flush()
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
	model string
	// promptTokenIDs are the prompt's token ids, when returned.
	promptTokenIDs []int
	outputs        []operations.Output
	usage          operations.Usage
}

// rawExtras are fields some OpenAI-compatible servers add that go-openai
// does not decode: message.reasoning (vLLM, OpenRouter) and token_ids (vLLM
// with return_token_ids).
type rawExtras struct {
	PromptTokenIDs []int `json:"prompt_token_ids"`
	Choices        []struct {
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
	r := &reply{model: resp.Model, promptTokenIDs: extras.PromptTokenIDs}
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
