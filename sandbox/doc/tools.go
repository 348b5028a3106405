package doc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/flockrun/flock/sandbox"
)

// Result is the data of both tools, as AgentFlow's API tools: the text and the
// parameters the call was made with.
type Result struct {
	Result string         `json:"result"`
	Inputs map[string]any `json:"inputs"`
}

// Tools returns doc:search and doc:read over e, both stateless.
func (e *Engine) Tools() []sandbox.Tool {
	return []sandbox.Tool{
		{
			Name:        "doc:search",
			Description: "Search the headings and paragraphs of the configured documents for keywords; results name the section ids to read.",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"key_words":{"anyOf":[{"type":"string"},{"type":"array","items":{"type":"string"}}],"description":"keyword or keywords; every word of a keyword must appear"},` +
				`"max_search_results":{"type":"integer","minimum":1,"description":"results per keyword (default from config, 10)"},` +
				`"doc_id":{"type":"string","description":"search only this document (an id from the results, e.g. \"singers\")"}},` +
				`"required":["key_words"]}`),
			Stateless: true,
			Run:       e.runSearch,
		},
		{
			Name:        "doc:read",
			Description: "Read sections by the ids doc:search returned.",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"section_ids":{"anyOf":[{"type":"string"},{"type":"array","items":{"type":"string"}}],"description":"section ids such as \"singers#2\""},` +
				`"goal":{"type":"string","description":"what the reader looks for (accepted for AgentFlow compatibility; unused)"},` +
				`"max_text_token":{"type":"integer","minimum":1,"description":"clip the text to this many characters (default from config, 20000)"}},` +
				`"required":["section_ids"]}`),
			Stateless: true,
			Run:       e.runRead,
		},
	}
}

func (e *Engine) runSearch(ctx context.Context, c *sandbox.Call) (any, error) {
	p := c.Params
	kws, err := stringsParam(p, "key_words")
	if err != nil {
		return nil, err
	}
	max, err := intParam(p, "max_search_results")
	if err != nil {
		return nil, err
	}
	docID, err := e.documentParam(p)
	if err != nil {
		return nil, err
	}
	text, err := e.Search(ctx, kws, max, docID)
	if err != nil {
		return nil, toolError(err)
	}
	return Result{Result: text, Inputs: inputs(p)}, nil
}

func (e *Engine) runRead(ctx context.Context, c *sandbox.Call) (any, error) {
	p := c.Params
	ids, err := stringsParam(p, "section_ids")
	if err != nil {
		return nil, err
	}
	max, err := intParam(p, "max_text_token")
	if err != nil {
		return nil, err
	}
	text, err := e.Read(ctx, ids, max)
	if err != nil {
		return nil, toolError(err)
	}
	return Result{Result: text, Inputs: inputs(p)}, nil
}

// documentParam reads doc_id, or AgentFlow's seed_path in its place. seed_path is never
// opened as a path: it names a configured document by its id or by its base name
// without extension ("/data/singers.md" → "singers"), so a pipeline that injects it
// keeps working and no client can point the server at a file of its choosing.
func (e *Engine) documentParam(p map[string]any) (string, error) {
	if v, ok := p["doc_id"]; ok && v != nil {
		s, ok := v.(string)
		if !ok {
			return "", &sandbox.Error{Code: sandbox.CodeInvalidParameterType, Message: "parameter doc_id: want a string"}
		}
		return s, nil
	}
	v, ok := p["seed_path"]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok || s == "" {
		return "", &sandbox.Error{Code: sandbox.CodeInvalidParameterType, Message: "parameter seed_path: want a document id"}
	}
	known, err := e.Documents()
	if err != nil {
		return "", toolError(err)
	}
	base := strings.TrimSuffix(path.Base(strings.ReplaceAll(s, "\\", "/")), path.Ext(s))
	for _, id := range known {
		if id == s {
			return id, nil
		}
	}
	for _, id := range known {
		if path.Base(id) == base {
			return id, nil
		}
	}
	return "", &sandbox.Error{Code: sandbox.CodeInvalidInput, Message: fmt.Sprintf("parameter seed_path: %q is not a configured document (known: %s)", base, strings.Join(known, ", "))}
}

// inputs echoes the call's parameters without worker or session fields.
func inputs(p map[string]any) map[string]any {
	out := make(map[string]any, len(p))
	for k, v := range p {
		switch k {
		case "worker_id", "session_id", "session_info", "trace_id":
			continue
		}
		out[k] = v
	}
	return sandbox.Echo(out).(map[string]any)
}

func stringsParam(p map[string]any, name string) ([]string, error) {
	v, ok := p[name]
	if !ok || v == nil {
		return nil, &sandbox.Error{Code: sandbox.CodeMissingRequiredField, Message: "missing required parameter: " + name}
	}
	switch x := v.(type) {
	case string:
		return []string{x}, nil
	case []any:
		out := make([]string, len(x))
		for i, y := range x {
			s, ok := y.(string)
			if !ok {
				return nil, &sandbox.Error{Code: sandbox.CodeInvalidParameterType, Message: fmt.Sprintf("parameter %s[%d]: want a string", name, i)}
			}
			out[i] = s
		}
		if len(out) == 0 {
			return nil, &sandbox.Error{Code: sandbox.CodeInvalidInput, Message: "parameter " + name + ": empty list"}
		}
		return out, nil
	}
	return nil, &sandbox.Error{Code: sandbox.CodeInvalidParameterType, Message: "parameter " + name + ": want a string or a list of strings"}
}

func intParam(p map[string]any, name string) (int, error) {
	v, ok := p[name]
	if !ok || v == nil {
		return 0, nil
	}
	f, ok := v.(float64)
	if !ok || f != float64(int(f)) {
		return 0, &sandbox.Error{Code: sandbox.CodeInvalidParameterType, Message: "parameter " + name + ": want an integer"}
	}
	if f < 1 {
		return 0, &sandbox.Error{Code: sandbox.CodeInvalidInput, Message: "parameter " + name + ": must be at least 1"}
	}
	return int(f), nil
}

func toolError(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &sandbox.Error{Code: sandbox.CodeTimeout, Message: "doc: timed out"}
	case errors.Is(err, ErrUnknownDocument), errors.Is(err, ErrUnknownSection), errors.Is(err, ErrEmptyKeyword):
		return &sandbox.Error{Code: sandbox.CodeInvalidInput, Message: err.Error()}
	}
	return &sandbox.Error{Code: sandbox.CodeExecutionError, Message: err.Error()}
}
