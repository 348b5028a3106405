package agent

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/flockrun/flock/operations"
)

// SandboxTool is the schema of one sandbox tool ("resource:tool") as the
// sandbox's registry gives it. Agents read them from the run's settings
// key sandbox_tools, which the sandbox operation's handler fills in when
// the run starts (handlers/sandboxop's PrepareRun): phases stay pure and
// the registry stays the one source of the schemas.
type SandboxTool struct {
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// SandboxToolsKey is the settings key of the sandbox tools' schemas.
const SandboxToolsKey = "sandbox_tools"

// IsSandboxTool reports whether name is a sandbox tool's full name,
// "resource:tool" with neither part empty.
func IsSandboxTool(name string) bool {
	r, t, ok := strings.Cut(name, ":")
	return ok && r != "" && t != ""
}

// ModelName is the name a sandbox tool is offered to the model under: an
// OpenAI function name (letters, digits, _ and -), ":" mapped to "-" as
// AgentFlow's prompts name them ("text2sql-execute"), other characters to
// "_".
func ModelName(name string) string {
	var b strings.Builder
	for _, c := range name {
		switch {
		case c == ':':
			b.WriteByte('-')
		case c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// SandboxNames maps the model names of the sandbox tools among names to
// their full names. Two tools with one model name are an error.
func SandboxNames(names []string) (map[string]string, error) {
	out := map[string]string{}
	for _, n := range names {
		if !IsSandboxTool(n) {
			continue
		}
		m := ModelName(n)
		if other, dup := out[m]; dup && other != n {
			return nil, fmt.Errorf("sandbox tools %q and %q have the same model name %q", other, n, m)
		}
		out[m] = n
	}
	return out, nil
}

var anyObject = json.RawMessage(`{"type":"object"}`)

// SandboxTools returns the OpenAI definitions of the sandbox tools among
// names, in order, under their model names, with the schemas of schemas
// (an object of any shape when a tool has none there).
func SandboxTools(names []string, schemas map[string]SandboxTool) []operations.Tool {
	var out []operations.Tool
	for _, n := range names {
		if !IsSandboxTool(n) {
			continue
		}
		s := schemas[n]
		desc := s.Description
		if desc == "" {
			desc = "The sandbox tool " + n + "."
		}
		params := s.Parameters
		if len(params) == 0 {
			params = anyObject
		}
		out = append(out, operations.Tool{Name: ModelName(n), Description: desc, Parameters: params})
	}
	return out
}

// SandboxCall returns the sandbox operation of a model's call of the
// sandbox tool name (its full name) with the raw JSON arguments, which
// must be an object (empty means {}); the sandbox checks them against the
// tool's schema.
func SandboxCall(name, arguments string, timeoutS float64) (operations.Request, error) {
	t := strings.TrimSpace(arguments)
	if t == "" || t == "null" {
		t = "{}"
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal([]byte(t), &args); err != nil {
		return operations.Request{}, fmt.Errorf("%w: %s: arguments are not a JSON object: %v", ErrBadArguments, name, err)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(t)); err != nil {
		return operations.Request{}, fmt.Errorf("%w: %s: %v", ErrBadArguments, name, err)
	}
	return operations.Request{Kind: operations.KindSandbox,
		Params: &operations.SandboxRequest{Action: name, Params: b.Bytes(), TimeoutS: timeoutS}}, nil
}

// pngBase64 is how every base64 PNG starts (the PNG signature).
const pngBase64 = "iVBORw0KGgo"

// sandboxImage splits the image a sandbox result's data carries in its
// "image" field (vm:screenshot's base64 PNG) from the rest: it returns the
// image and the data with the field replaced by a short placeholder
// ("[PNG image 1280x800, 42 KB]"), or nil and the data unchanged.
func sandboxImage(s *operations.SandboxResult) (*operations.Image, []byte) {
	var fields map[string]json.RawMessage
	if s.Code != 0 || json.Unmarshal(s.Data, &fields) != nil {
		return nil, s.Data
	}
	var b64 string
	if json.Unmarshal(fields["image"], &b64) != nil || !strings.HasPrefix(b64, pngBase64) {
		return nil, s.Data
	}
	size := ""
	if head, err := base64.StdEncoding.DecodeString(b64[:32]); err == nil && len(head) >= 24 {
		size = fmt.Sprintf(" %dx%d", binary.BigEndian.Uint32(head[16:20]), binary.BigEndian.Uint32(head[20:24]))
	}
	placeholder := fmt.Sprintf("[PNG image%s, %d KB]", size, (len(b64)*3/4+1023)/1024)
	fields["image"], _ = json.Marshal(placeholder)
	data, err := json.Marshal(fields) // keys sorted: deterministic
	if err != nil {
		return nil, s.Data
	}
	var meta struct {
		Tool string `json:"tool"`
	}
	_ = json.Unmarshal(s.Meta, &meta)
	return &operations.Image{MediaType: "image/png", Data: b64, Source: meta.Tool}, data
}

// ResultImages returns the images a tool result carries for the model:
// the screenshot of a sandbox result (vm:screenshot), which FormatResult
// renders as a placeholder. Agents attach them to the tool's message
// (operations.Message.Images); the generate handler sends them to models
// that accept images and tells text-only models they are not shown.
func ResultImages(res operations.Result) []operations.Image {
	sb := operations.Sandbox.Result(res)
	if res.Error != "" || sb == nil {
		return nil
	}
	if img, _ := sandboxImage(sb); img != nil {
		return []operations.Image{*img}
	}
	return nil
}

// formatSandbox renders a sandbox envelope for the model: the data as
// JSON on success (after the message when it is not "success"), else
// "Error (code N): message" and the data. An image in the data is
// replaced by a placeholder (see ResultImages).
func formatSandbox(s *operations.SandboxResult, limit int) string {
	_, raw := sandboxImage(s)
	data := strings.TrimSpace(string(raw))
	if s.Code == 0 {
		out := data
		if m := s.Message; m != "" && m != "success" {
			out = m + "\n" + data
		}
		return Trim(out, limit)
	}
	out := fmt.Sprintf("Error (code %d): %s", s.Code, s.Message)
	if data != "" && data != "null" {
		out += "\n" + data
	}
	return Trim(out, limit)
}

// ParseOutputSandbox is ParseOutput for an agent that also offers the
// sandbox tools among sandbox (full names, checked by SandboxNames): in
// ModeTools a first call to one of them by its model name is kept with
// its arguments compacted (the sandbox checks them against the tool's
// schema); arguments that are not a JSON object make it invalid.
func ParseOutputSandbox(o operations.Output, mode Mode, tools, sandbox []string) Parsed {
	if len(sandbox) > 0 && (mode == ModeTools || mode == "") && len(o.ToolCalls) > 0 {
		names, _ := SandboxNames(sandbox)
		tc := o.ToolCalls[0]
		if full, ok := names[tc.Name]; ok {
			p := Parsed{Content: strings.TrimSpace(o.Content)}
			req, err := SandboxCall(full, tc.Arguments, 0)
			if err != nil {
				p.Invalid = err.Error()
				return p
			}
			p.Call = &Call{ID: tc.ID, Name: tc.Name, Arguments: operations.Sandbox.Params(req).Params}
			return p
		}
	}
	return ParseOutput(o, mode, tools)
}

// CheckSandboxTools checks the tools setting of an agent whose own tools
// are fixed: every name must be a sandbox tool, no two with one model
// name, and mode must be ModeTools (sandbox tools are offered as native
// tool calls only).
func CheckSandboxTools(names []string, mode Mode) error {
	for i, n := range names {
		if !IsSandboxTool(n) {
			return fmt.Errorf("tools[%d]: %q is not a sandbox tool (\"resource:tool\"); the agent's own tools are always offered", i, n)
		}
	}
	if _, err := SandboxNames(names); err != nil {
		return fmt.Errorf("tools: %w", err)
	}
	if len(names) > 0 && mode != ModeTools {
		return errors.New("tools: sandbox tools need native tool calls; enable_tool_use: false (text tool modes) cannot offer them")
	}
	return nil
}
