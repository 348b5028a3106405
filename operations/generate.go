package operations

import "encoding/json"

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one chat message in OpenAI chat-completions shape.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// Name is the author name (rarely used).
	Name string `json:"name,omitempty"`
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID answers one tool call (role "tool").
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Reasoning is the model's reasoning text, kept for replay and training data.
	Reasoning string `json:"reasoning,omitempty"`
	// Images are images the message carries besides its text (a
	// screenshot a tool returned). Content already describes each with a
	// short placeholder; a model that accepts images (configs.Model.Vision)
	// also gets the images themselves (see package handlers/generate).
	Images []Image `json:"images,omitempty"`
}

// Image is an image attached to a message.
type Image struct {
	// MediaType is the MIME type, e.g. "image/png".
	MediaType string `json:"media_type"`
	// Data is the image, base64 (standard encoding).
	Data string `json:"data"`
	// Source names what produced it, e.g. "vm:screenshot".
	Source string `json:"source,omitempty"`
}

// DataURL returns the image as a data: URL (what the OpenAI wire's
// image_url content part takes).
func (i Image) DataURL() string { return "data:" + i.MediaType + ";base64," + i.Data }

// ToolCall is a function call made by the model.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON text the model produced, unparsed: it may be invalid.
	Arguments string `json:"arguments"`
}

// Tool is a function offered to the model (OpenAI tools format).
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is a JSON Schema object.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// GenerateRequest asks a model for completions.
type GenerateRequest struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Tools    []Tool    `json:"tools,omitempty"`
	// ToolChoice is "", "auto", "none", "required" or the name of one tool
	// that must be called.
	ToolChoice      string   `json:"tool_choice,omitempty"`
	N               int      `json:"n,omitempty"`
	Temperature     *float64 `json:"temperature,omitempty"`
	MaxTokens       int      `json:"max_tokens,omitempty"`
	Stop            []string `json:"stop,omitempty"`
	ReasoningEffort string   `json:"reasoning_effort,omitempty"`
	// Logprobs asks for per-token log probabilities; TopLogprobs > 0 also asks
	// for that many alternatives per token.
	Logprobs    bool `json:"logprobs,omitempty"`
	TopLogprobs int  `json:"top_logprobs,omitempty"`
	// TokenIDs asks the endpoint for the prompt's and the completion's
	// token ids (sent as vLLM's and SGLang's return_token_ids: true; an
	// endpoint without the field may refuse it). A model whose settings
	// say token_ids asks on every call without it.
	TokenIDs bool `json:"token_ids,omitempty"`
	// Extra holds request fields flock does not interpret (seed, top_p,
	// top_k, response_format, chat_template_kwargs, other vendor
	// extensions), each sent as it is as a top-level field of the chat
	// completion request. A key flock writes itself is refused (the op
	// fails naming it; see ReservedGenerateFields): use the field above.
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

// ReservedGenerateFields are the chat completion request fields flock
// writes itself from a GenerateRequest (or never sends: streaming); a
// GenerateRequest.Extra key among them is refused.
var ReservedGenerateFields = []string{
	"model", "messages", "tools", "tool_choice", "functions", "function_call", "n", "temperature",
	"max_tokens", "max_completion_tokens", "stop", "reasoning_effort", "logprobs", "top_logprobs",
	"return_token_ids", "stream", "stream_options",
}

// GenerateResult is what the model answered.
type GenerateResult struct {
	Outputs    []Output `json:"outputs"`
	Usage      Usage    `json:"usage"`
	DurationMS int64    `json:"duration_ms"`
	// Model is the model that answered, as the endpoint reported it.
	Model string `json:"model,omitempty"`
	// Replay is set for a run with replay_from: ReplayHit when the reply
	// was taken from the recorded run's journal (Usage is the recorded
	// call's; no tokens are charged), ReplayMiss when no recorded call
	// had the same request and the live model answered.
	Replay string `json:"replay,omitempty"`
	// PromptTokenIDs are the prompt's token ids when the endpoint returned
	// them (vLLM's prompt_token_ids, with return_token_ids; see
	// GenerateRequest.TokenIDs), exactly as returned.
	PromptTokenIDs []int `json:"prompt_token_ids,omitempty"`
}

// GenerateResult.Replay values.
const (
	ReplayHit  = "hit"
	ReplayMiss = "miss"
)

// Output is one choice of a generate.
type Output struct {
	Content      string     `json:"content"`
	ToolCalls    []ToolCall `json:"tool_calls,omitempty"`
	Reasoning    string     `json:"reasoning,omitempty"`
	FinishReason string     `json:"finish_reason,omitempty"`
	// Logprobs are the completion's tokens with their log probabilities,
	// one per token in the endpoint's order, when it returned them.
	Logprobs []Logprob `json:"logprobs,omitempty"`
	// TokenIDs are the completion's token ids when the endpoint returned
	// them (vLLM's choices[i].token_ids), exactly as returned: one per
	// generated token, so Logprobs[k] is the log probability of TokenIDs[k].
	TokenIDs []int `json:"token_ids,omitempty"`
}

// Logprob is the log probability of one generated token.
type Logprob struct {
	Token   string    `json:"token"`
	Logprob float64   `json:"logprob"`
	Top     []TopProb `json:"top,omitempty"`
}

// TopProb is one alternative token with its log probability.
type TopProb struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
}

// Usage is the token usage and cost of one generate.
type Usage struct {
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	Cost             float64 `json:"cost"`
}
