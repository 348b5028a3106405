package rag

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/flockrun/flock/sandbox"
)

// The envelope codes these tools answer with.
const (
	codeInvalidInput   = sandbox.CodeInvalidInput
	codeMissingField   = sandbox.CodeMissingRequiredField
	codeBadType        = sandbox.CodeInvalidParameterType
	codeExecution      = sandbox.CodeExecutionError
	codeTimeout        = sandbox.CodeTimeout
	codeAllFailed      = sandbox.CodeAllRequestsFailed
	codePartialFailure = sandbox.CodePartialFailure
	codeNotInitialized = sandbox.CodeBackendNotInitialized
)

// ToolError is a tool failure with its envelope code.
type ToolError = sandbox.Error

// ToolSpec is one tool as plain Go: its name, description, JSON Schema and function.
type ToolSpec struct {
	Name        string
	Description string
	Parameters  json.RawMessage
	Run         func(ctx context.Context, params map[string]any) (any, error)
}

// Tools returns rag:search, rag:batch_search and rag:stats over e.
func (e *Engine) Tools() []ToolSpec {
	return []ToolSpec{
		{
			Name:        "rag:search",
			Description: "Search the document collection (BM25) and return the best passages, each \"[title]\" then its text, separated by \"---\".",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"query":{"type":"string","description":"what to look for"},` +
				`"top_k":{"type":"integer","minimum":1,"description":"number of passages (default from config, 5)"}},` +
				`"required":["query"]}`),
			Run: e.runSearch,
		},
		{
			Name:        "rag:batch_search",
			Description: "Search several queries at once; contexts are in query order.",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"queries":{"type":"array","items":{"type":"string"},"description":"the queries"},` +
				`"top_k":{"type":"integer","minimum":1,"description":"passages per query (default from config, 5)"}},` +
				`"required":["queries"]}`),
			Run: e.runBatch,
		},
		{
			Name:        "rag:stats",
			Description: "Report whether the index is loaded and its size.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{}}`),
			Run: func(ctx context.Context, _ map[string]any) (any, error) {
				return e.Stats(), nil
			},
		},
	}
}

func (e *Engine) runSearch(ctx context.Context, p map[string]any) (any, error) {
	q, err := stringParam(p, "query")
	if err != nil {
		return nil, err
	}
	k, err := e.topK(p)
	if err != nil {
		return nil, err
	}
	res, err := e.Search(ctx, q, k)
	if err != nil {
		return nil, toolError(err)
	}
	return res, nil
}

func (e *Engine) runBatch(ctx context.Context, p map[string]any) (any, error) {
	v, ok := p["queries"]
	if !ok || v == nil {
		return nil, &ToolError{Code: codeMissingField, Message: "missing required parameter: queries"}
	}
	list, ok := v.([]any)
	if !ok {
		return nil, &ToolError{Code: codeBadType, Message: "parameter queries: want a list of strings"}
	}
	queries := make([]string, len(list))
	for i, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, &ToolError{Code: codeBadType, Message: fmt.Sprintf("parameter queries[%d]: want a string", i)}
		}
		queries[i] = s
	}
	k, err := e.topK(p)
	if err != nil {
		return nil, err
	}
	res, err := e.BatchSearch(ctx, queries, k)
	if err != nil {
		return nil, toolError(err)
	}
	switch {
	case len(res.Errors) == 0:
		return res, nil
	case len(res.Errors) == len(queries):
		return nil, &ToolError{Code: codeAllFailed, Message: fmt.Sprintf("all %d queries failed", len(queries)), Data: res}
	default:
		return nil, &ToolError{Code: codePartialFailure, Message: fmt.Sprintf("%d out of %d queries failed", len(res.Errors), len(queries)), Data: res}
	}
}

func (e *Engine) topK(p map[string]any) (int, error) {
	v, ok := p["top_k"]
	if !ok || v == nil {
		return e.cfg.DefaultTopK, nil
	}
	k, ok := asInt(v)
	if !ok {
		return 0, &ToolError{Code: codeBadType, Message: "parameter top_k: want an integer"}
	}
	if k < 1 || k > e.cfg.MaxTopK {
		return 0, &ToolError{Code: codeInvalidInput, Message: fmt.Sprintf("parameter top_k: %d is outside 1..%d", k, e.cfg.MaxTopK)}
	}
	return k, nil
}

func stringParam(p map[string]any, name string) (string, error) {
	v, ok := p[name]
	if !ok || v == nil {
		return "", &ToolError{Code: codeMissingField, Message: "missing required parameter: " + name}
	}
	s, ok := v.(string)
	if !ok {
		return "", &ToolError{Code: codeBadType, Message: "parameter " + name + ": want a string"}
	}
	return s, nil
}

// toolError maps the engine's errors to envelope codes.
func toolError(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &ToolError{Code: codeTimeout, Message: "rag: timed out"}
	case errors.Is(err, ErrNotReady):
		return &ToolError{Code: codeNotInitialized, Message: err.Error()}
	case errors.Is(err, ErrEmptyQuery):
		return &ToolError{Code: codeInvalidInput, Message: err.Error()}
	}
	return &ToolError{Code: codeExecution, Message: err.Error()}
}
