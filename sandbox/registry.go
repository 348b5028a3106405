package sandbox

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// toolEntry is a registered tool with what the core needs to check a call.
type toolEntry struct {
	Tool
	backend  *backendEntry
	simple   string   // the part after "resource:"
	required []string // the schema's required parameters
}

// ToolInfo is a tool as /api/v1/tools lists it: AgentFlow's fields plus the
// JSON-Schema parameters.
type ToolInfo struct {
	Name         string          `json:"name"`
	FullName     string          `json:"full_name"`
	ResourceType string          `json:"resource_type"`
	Stateless    bool            `json:"stateless"`
	Description  string          `json:"description"`
	Hidden       bool            `json:"hidden,omitempty"`
	Parameters   json.RawMessage `json:"parameters"`
}

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// newToolEntry checks a backend's tool and parses its schema.
func newToolEntry(b *backendEntry, t Tool) (*toolEntry, error) {
	prefix := b.name + ":"
	if !strings.HasPrefix(t.Name, prefix) || len(t.Name) == len(prefix) {
		return nil, fmt.Errorf("backend %s: tool %q is not named %s<tool>", b.name, t.Name, prefix)
	}
	if t.Run == nil {
		return nil, fmt.Errorf("backend %s: tool %s has no Run", b.name, t.Name)
	}
	e := &toolEntry{Tool: t, backend: b, simple: t.Name[len(prefix):]}
	if len(t.Parameters) == 0 {
		e.Parameters = emptySchema
		return e, nil
	}
	var schema struct {
		Type     string   `json:"type"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(t.Parameters, &schema); err != nil {
		return nil, fmt.Errorf("backend %s: tool %s: parameters schema: %w", b.name, t.Name, err)
	}
	if schema.Type != "object" {
		return nil, fmt.Errorf("backend %s: tool %s: parameters schema must have type object", b.name, t.Name)
	}
	e.required = schema.Required
	return e, nil
}

func (t *toolEntry) info() ToolInfo {
	return ToolInfo{
		Name: t.simple, FullName: t.Name, ResourceType: t.backend.name, Stateless: t.Stateless,
		Description: t.Description, Hidden: t.Hidden, Parameters: t.Parameters,
	}
}

// Tools lists the service's tools sorted by full name, the hidden ones only
// with includeHidden.
func (s *Service) Tools(includeHidden bool) []ToolInfo {
	out := make([]ToolInfo, 0, len(s.toolNames))
	for _, n := range s.toolNames {
		t := s.tools[n]
		if t.Hidden && !includeHidden {
			continue
		}
		out = append(out, t.info())
	}
	return out
}

// Tool returns the tool name resolves to (see resolve), with ok false when
// it resolves to none or several.
func (s *Service) Tool(name string) (ToolInfo, bool) {
	t, err := s.resolve(name)
	if err != nil {
		return ToolInfo{}, false
	}
	return t.info(), true
}

// resolve finds a tool the way AgentFlow does (wire §4): a name without ":"
// is first rewritten p.rest, p_rest or p-rest → p:rest when that tool exists;
// then the exact full name; a prefixed name still unknown is not found; a
// bare name uses the simple-name index, several hits being ambiguous. The
// error is a 4002 *Error.
func (s *Service) resolve(name string) (*toolEntry, *Error) {
	if !strings.Contains(name, ":") {
		for _, sep := range []string{".", "_", "-"} {
			p, rest, ok := strings.Cut(name, sep)
			if !ok || rest == "" {
				continue
			}
			if _, known := s.backends[p]; !known {
				continue
			}
			if t, ok := s.tools[p+":"+rest]; ok {
				return t, nil
			}
		}
	}
	if t, ok := s.tools[name]; ok {
		return t, nil
	}
	quoted := EchoString(name, 200, nil)
	notFound := &Error{Code: CodeInvalidRequestFormat, Message: "Tool not found: " + quoted, Data: map[string]any{"action": quoted}}
	if strings.Contains(name, ":") {
		return nil, notFound
	}
	switch hits := s.simple[name]; len(hits) {
	case 0:
		return nil, notFound
	case 1:
		return s.tools[hits[0]], nil
	default:
		c := slices.Clone(hits)
		return nil, &Error{Code: CodeInvalidRequestFormat, Message: fmt.Sprintf("Ambiguous tool name: %s matches %s", quoted, strings.Join(c, ", ")), Data: map[string]any{"candidates": c}}
	}
}
