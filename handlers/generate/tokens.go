package generate

import (
	openai "github.com/sashabaranov/go-openai"

	"github.com/flockrun/flock/operations"
)

// estimateTokens is the rough chars/4 token estimate used when no real
// count is available (simulated and scripted providers, endpoints that
// omit usage). It is at least 1 for non-empty text.
func estimateTokens(s string) int {
	if s == "" {
		return 0
	}
	return (len(s) + 3) / 4
}

// perMessageTokens approximates the role and framing tokens of one message.
const perMessageTokens = 4

// perImageTokens approximates what one image costs a vision model (a
// 1280x800 screenshot is about 1100 tokens at OpenAI's high detail).
const perImageTokens = 1100

func estimatePrompt(msgs []operations.Message, tools []operations.Tool) int {
	n := 0
	for _, m := range msgs {
		n += perMessageTokens + estimateTokens(m.Content) + perImageTokens*len(m.Images)
		for _, tc := range m.ToolCalls {
			n += estimateTokens(tc.Name) + estimateTokens(tc.Arguments)
		}
	}
	for _, t := range tools {
		n += estimateTokens(t.Name) + estimateTokens(t.Description) + estimateTokens(string(t.Parameters))
	}
	return n
}

func estimateOutputs(outs []operations.Output) int {
	n := 0
	for _, o := range outs {
		n += estimateTokens(o.Content) + estimateTokens(o.Reasoning)
		for _, tc := range o.ToolCalls {
			n += estimateTokens(tc.Name) + estimateTokens(tc.Arguments)
		}
	}
	return n
}

// estimateUsage estimates the usage of an endpoint reply that reported none.
func estimateUsage(msgs []openai.ChatCompletionMessage, outs []operations.Output) operations.Usage {
	p := 0
	for _, m := range msgs {
		p += perMessageTokens + estimateTokens(m.Content)
		for _, part := range m.MultiContent {
			if part.ImageURL != nil {
				p += perImageTokens
			} else {
				p += estimateTokens(part.Text)
			}
		}
		for _, tc := range m.ToolCalls {
			p += estimateTokens(tc.Function.Name) + estimateTokens(tc.Function.Arguments)
		}
	}
	return operations.Usage{PromptTokens: p, CompletionTokens: estimateOutputs(outs)}
}
