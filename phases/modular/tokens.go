package modular

import (
	"strings"
	"sync"

	"github.com/tiktoken-go/tokenizer"

	"github.com/flockrun/flock/operations"
)

// Token counting. This file is the one exception to the rule that phase
// packages import only phases, operations and the standard library: it
// uses github.com/tiktoken-go/tokenizer, whose BPE tables are compiled
// into the binary (no download, no I/O) and whose counts are a pure
// function of the text. The codecs are built once per process on first
// use (about 0.1 s each); that cache never changes a result.

// perMessageTokens approximates the role and framing tokens of one chat
// message; replyTokens the tokens that prime the reply.
const (
	perMessageTokens = 4
	replyTokens      = 3
)

// counter counts the tokens of a text.
type counter func(string) int

var (
	o200kOnce, cl100kOnce sync.Once
	o200k, cl100k         tokenizer.Codec
)

func bpe(name string) tokenizer.Codec {
	switch name {
	case TokenizerO200k:
		o200kOnce.Do(func() { o200k, _ = tokenizer.Get(tokenizer.O200kBase) })
		return o200k
	case TokenizerCl100k:
		cl100kOnce.Do(func() { cl100k, _ = tokenizer.Get(tokenizer.Cl100kBase) })
		return cl100k
	}
	return nil
}

// approx is the bytes/4 estimate used for models whose tokenizer is not
// embedded; it matches the estimate of the simulated and scripted providers.
func approx(s string) int {
	if s == "" {
		return 0
	}
	return (len(s) + 3) / 4
}

// tokenizerFor resolves the tokenizer setting for a model name: with
// "auto", o200k_base for current OpenAI models (gpt-4o, gpt-4.1, gpt-4.5,
// gpt-5, o1, o3, o4, chatgpt-4o, gpt-oss), cl100k_base for gpt-4 and
// gpt-3.5, approx for everything else (Claude, Llama, Qwen, simulated ...).
// A "provider/" prefix (OpenRouter) and "ft:" are ignored.
func tokenizerFor(setting, model string) string {
	if setting != "" && setting != TokenizerAuto {
		return setting
	}
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	m = strings.TrimPrefix(m, "ft:")
	for _, p := range []string{"gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "chatgpt-4o", "gpt-oss", "o1", "o3", "o4"} {
		if strings.HasPrefix(m, p) {
			return TokenizerO200k
		}
	}
	for _, p := range []string{"gpt-4", "gpt-3.5", "gpt-35", "text-embedding-3", "text-embedding-ada"} {
		if strings.HasPrefix(m, p) {
			return TokenizerCl100k
		}
	}
	return TokenizerApprox
}

// newCounter returns the counter of a resolved tokenizer name.
func newCounter(name string) counter {
	c := bpe(name)
	if c == nil {
		return approx
	}
	return func(s string) int {
		if s == "" {
			return 0
		}
		n, err := c.Count(s)
		if err != nil {
			return approx(s)
		}
		return n
	}
}

// contentTokens counts what a message carries: content, reasoning and
// tool calls (name and arguments), without the framing overhead.
func (c counter) contentTokens(m operations.Message) int {
	n := c(m.Content) + c(m.Reasoning)
	for _, tc := range m.ToolCalls {
		n += c(tc.Name) + c(tc.Arguments)
	}
	return n
}

// toolsTokens counts the tool definitions sent with a request.
func (c counter) toolsTokens(tools []operations.Tool) int {
	n := 0
	for _, t := range tools {
		n += c(t.Name) + c(t.Description) + c(string(t.Parameters)) + perMessageTokens
	}
	return n
}
