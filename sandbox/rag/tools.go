package rag

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/flockrun/flock/sandbox"
)

// Tools returns rag:search, rag:batch_search and rag:stats over e, all stateless.
func (e *Engine) Tools() []sandbox.Tool {
	return []sandbox.Tool{
		{
			Name:        "rag:search",
			Description: "Search the document collection (BM25) and return the best passages, each \"[title]\" then its text, separated by \"---\".",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"query":{"type":"string","description":"what to look for"},` +
				`"top_k":{"type":"integer","minimum":1,"description":"number of passages (default from config, 5)"}},` +
				`"required":["query"]}`),
			Stateless: true,
			Run:       e.runSearch,
		},
		{
			Name:        "rag:batch_search",
			Description: "Search several queries at once; contexts are in query order.",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"queries":{"type":"array","items":{"type":"string"},"description":"the queries"},` +
				`"top_k":{"type":"integer","minimum":1,"description":"passages per query (default from config, 5)"}},` +
				`"required":["queries"]}`),
			Stateless: true,
			Run:       e.runBatch,
		},
		{
			Name:        "rag:stats",
			Description: "Report whether the index is loaded and its size.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{}}`),
			Stateless:   true,
			Run: func(context.Context, *sandbox.Call) (any, error) {
				return e.Stats(), nil
			},
		},
	}
}

func (e *Engine) runSearch(ctx context.Context, c *sandbox.Call) (any, error) {
	p := c.Params
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

func (e *Engine) runBatch(ctx context.Context, c *sandbox.Call) (any, error) {
	p := c.Params
	v, ok := p["queries"]
	if !ok || v == nil {
		return nil, &sandbox.Error{Code: sandbox.CodeMissingRequiredField, Message: "missing required parameter: queries"}
	}
	list, ok := v.([]any)
	if !ok {
		return nil, &sandbox.Error{Code: sandbox.CodeInvalidParameterType, Message: "parameter queries: want a list of strings"}
	}
	queries := make([]string, len(list))
	for i, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, &sandbox.Error{Code: sandbox.CodeInvalidParameterType, Message: fmt.Sprintf("parameter queries[%d]: want a string", i)}
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
		return nil, &sandbox.Error{Code: sandbox.CodeAllRequestsFailed, Message: fmt.Sprintf("all %d queries failed", len(queries)), Data: res}
	default:
		return nil, &sandbox.Error{Code: sandbox.CodePartialFailure, Message: fmt.Sprintf("%d out of %d queries failed", len(res.Errors), len(queries)), Data: res}
	}
}

func (e *Engine) topK(p map[string]any) (int, error) {
	v, ok := p["top_k"]
	if !ok || v == nil {
		return e.cfg.DefaultTopK, nil
	}
	k, ok := asInt(v)
	if !ok {
		return 0, &sandbox.Error{Code: sandbox.CodeInvalidParameterType, Message: "parameter top_k: want an integer"}
	}
	if k < 1 || k > e.cfg.MaxTopK {
		return 0, &sandbox.Error{Code: sandbox.CodeInvalidInput, Message: fmt.Sprintf("parameter top_k: %d is outside 1..%d", k, e.cfg.MaxTopK)}
	}
	return k, nil
}

func stringParam(p map[string]any, name string) (string, error) {
	v, ok := p[name]
	if !ok || v == nil {
		return "", &sandbox.Error{Code: sandbox.CodeMissingRequiredField, Message: "missing required parameter: " + name}
	}
	s, ok := v.(string)
	if !ok {
		return "", &sandbox.Error{Code: sandbox.CodeInvalidParameterType, Message: "parameter " + name + ": want a string"}
	}
	return s, nil
}

// toolError maps the engine's errors to envelope codes.
func toolError(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &sandbox.Error{Code: sandbox.CodeTimeout, Message: "rag: timed out"}
	case errors.Is(err, ErrNotReady):
		return &sandbox.Error{Code: sandbox.CodeBackendNotInitialized, Message: err.Error()}
	case errors.Is(err, ErrEmptyQuery):
		return &sandbox.Error{Code: sandbox.CodeInvalidInput, Message: err.Error()}
	}
	return &sandbox.Error{Code: sandbox.CodeExecutionError, Message: err.Error()}
}
