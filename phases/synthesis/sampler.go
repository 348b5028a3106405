package synthesis

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases/agent"
	cfgpkg "github.com/flockrun/flock/synthesis/config"
	"github.com/flockrun/flock/synthesis/trajectory"
)

// Model roles of the synthesis workflows (operations.MetaRole), which the
// simulated model answers in kind.
const (
	// RoleExplorer proposes the next action of a branch.
	RoleExplorer = operations.ModelRoleExplorer
	// RoleSynthesizer writes a QA pair from a path.
	RoleSynthesizer = operations.ModelRoleSynthesizer
	// RoleClosedBook answers a question without the trajectory.
	RoleClosedBook = operations.ModelRoleClosedBook
)

// Signature bounds (AgentFlow's): strings longer than longString are
// replaced by their length and md5; the prompt lists the last
// shownSignatures taken, each cut to signatureChars.
const (
	longString      = 160
	shownSignatures = 40
	signatureChars  = 300
)

// Signature is the action signature of a proposal: the tool and its
// params as canonical JSON (keys sorted, compact), strings longer than 160
// characters replaced by "<len:N md5:HEX>". Two proposals with one
// signature are the same action.
func Signature(tool string, params json.RawMessage) string {
	var v any
	if len(bytes.TrimSpace(params)) > 0 {
		if err := json.Unmarshal(params, &v); err != nil {
			v = string(params)
		}
	}
	b, _ := json.Marshal(canonical(v))
	return tool + " " + string(b)
}

func canonical(v any) any {
	switch x := v.(type) {
	case string:
		if len(x) > longString {
			sum := md5.Sum([]byte(x))
			return fmt.Sprintf("<len:%d md5:%s>", len(x), hex.EncodeToString(sum[:]))
		}
		return x
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = canonical(x[i])
		}
		return out
	case map[string]any:
		// encoding/json sorts map keys.
		out := make(map[string]any, len(x))
		for k, y := range x {
			out[k] = canonical(y)
		}
		return out
	}
	return v
}

// CanonicalParams returns params as compact JSON with sorted keys (the
// form stored in nodes).
func CanonicalParams(params json.RawMessage) json.RawMessage {
	var v any
	if json.Unmarshal(params, &v) != nil {
		return params
	}
	b, err := json.Marshal(v)
	if err != nil {
		return params
	}
	return b
}

// Proposal is what the model proposed for a branch.
type Proposal struct {
	Intent string          `json:"intent"`
	Tool   string          `json:"tool"`
	Params json.RawMessage `json:"params"`
}

// ParseProposal reads a proposal from a model's output: its first native
// tool call (the intent is the text beside it), or else AgentFlow's tags
// <intent>, <tool_name> and <parameters> (JSON), optionally wrapped in
// <response> or <action>. tools maps the names the model may use (full
// names and model names, "rag:search" and "rag-search") to full names.
// Params that are not a JSON object, a tool not offered, or no action at
// all are errors worded to be fed back to the model.
func ParseProposal(out operations.Output, tools map[string]string) (Proposal, error) {
	if len(out.ToolCalls) > 0 {
		c := out.ToolCalls[0]
		full, ok := tools[c.Name]
		if !ok {
			return Proposal{}, fmt.Errorf("tool %q is not offered; use one of %s", c.Name, offered(tools))
		}
		params, err := paramsObject(c.Arguments)
		if err != nil {
			return Proposal{}, fmt.Errorf("the arguments of %s are not a JSON object: %v", c.Name, err)
		}
		intent := strings.TrimSpace(out.Content)
		if i := tag(out.Content, "intent"); i != "" {
			intent = i
		}
		return Proposal{Intent: intent, Tool: full, Params: params}, nil
	}
	text := out.Content
	for _, w := range []string{"response", "action"} {
		if inner := tag(text, w); inner != "" {
			text = inner
			break
		}
	}
	name := tag(text, "tool_name")
	if name == "" {
		return Proposal{}, fmt.Errorf("no action found: call one tool, or answer with <intent>, <tool_name> and <parameters> tags")
	}
	full, ok := tools[name]
	if !ok {
		return Proposal{}, fmt.Errorf("tool %q is not offered; use one of %s", name, offered(tools))
	}
	raw := tag(text, "parameters")
	if raw == "" {
		raw = "{}"
	}
	params, err := paramsObject(stripFence(raw))
	if err != nil {
		return Proposal{}, fmt.Errorf("<parameters> of %s is not a JSON object: %v", name, err)
	}
	return Proposal{Intent: tag(text, "intent"), Tool: full, Params: params}, nil
}

func offered(tools map[string]string) string {
	seen := map[string]bool{}
	var names []string
	for _, full := range tools {
		if !seen[full] {
			seen[full] = true
			names = append(names, full)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func paramsObject(s string) (json.RawMessage, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}"), nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("null")
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return b, nil
}

var fence = regexp.MustCompile("(?s)^```[a-zA-Z]*\\s*(.*?)\\s*```$")

func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if m := fence.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return s
}

// tag returns the trimmed text of the first <name>...</name>, or "".
func tag(s, name string) string {
	open, close := "<"+name+">", "</"+name+">"
	i := strings.Index(s, open)
	if i < 0 {
		return ""
	}
	rest := s[i+len(open):]
	j := strings.Index(rest, close)
	if j < 0 {
		return ""
	}
	return strings.TrimSpace(rest[:j])
}

// toolNames maps every name the model may use for the tools to the full
// name.
func toolNames(tools []string) map[string]string {
	m := map[string]string{}
	for _, t := range tools {
		m[t] = t
		m[agent.ModelName(t)] = t
	}
	return m
}

// Observation renders a sandbox call's outcome as the node's observation
// text: the data (a JSON string as it is, anything else as JSON) on code
// 0, else "Error executing TOOL: [CODE] MESSAGE" and failed.
func Observation(tool string, r operations.Result) (string, bool) {
	sb := operations.Sandbox.Result(r)
	switch {
	case r.Error != "":
		return fmt.Sprintf("Error executing %s: %s", tool, r.Error), true
	case sb == nil:
		return fmt.Sprintf("Error executing %s: no result", tool), true
	case sb.Code != 0:
		return fmt.Sprintf("Error executing %s: [%d] %s", tool, sb.Code, sb.Message), true
	}
	data := bytes.TrimSpace(sb.Data)
	var s string
	if json.Unmarshal(data, &s) == nil {
		return s, false
	}
	// The payload without the sandbox's echo of the call: AgentFlow's
	// API tools wrap it in {"result": ..., "inputs": ...}; a search's
	// passages are its "context" text.
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) == nil {
		if res, ok := obj["result"]; ok {
			data = bytes.TrimSpace(res)
			if json.Unmarshal(data, &s) == nil {
				return s, false
			}
			obj = nil
			_ = json.Unmarshal(data, &obj)
		}
		for _, k := range []string{"context", "content", "text"} {
			if json.Unmarshal(obj[k], &s) == nil && s != "" {
				return s, false
			}
		}
	}
	if len(data) == 0 || string(data) == "null" {
		return sb.Message, false
	}
	var buf bytes.Buffer
	if json.Indent(&buf, data, "", " ") == nil {
		return buf.String(), false
	}
	return string(data), false
}

// clip cuts s to n bytes (at a rune boundary) with a marker.
func clip(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + fmt.Sprintf(" ...[%d more bytes]", len(s)-n)
}

// ProposalPrompt is the prompt asking for the next action below parent:
// the seed and its description, the goal, the actions already taken for
// this seed (forbidden), the tips, the path from the root to parent
// (intent, tool, params, observation cut to observation_chars), the tools
// and the answer format; feedback, when set, says why the last proposal
// was refused. branch names the node being grown ("0.1.0"), so that
// scripted replies can be matched to it.
func ProposalPrompt(c *cfgpkg.Config, seed trajectory.Seed, branch string, tools []string, schemas map[string]agent.SandboxTool,
	path []trajectory.Node, taken []string, feedback string) []operations.Message {
	var b strings.Builder
	b.WriteString("You are exploring an environment through tools to collect facts from which multi-hop questions can be written.\n\n")
	fmt.Fprintf(&b, "<seed>\n%s\n</seed>\n", seed.Content)
	fmt.Fprintf(&b, "Branch: %s\n", branch)
	if c.SeedDescription != "" {
		fmt.Fprintf(&b, "Seed description: %s\n", c.SeedDescription)
	}
	b.WriteString("\nGoal: take ONE next action that builds on what the path below found and discovers a new, specific fact " +
		"(a name, a number, a date, a relation) connected to it. Prefer actions that go deeper over ones that repeat.\n")
	if tips, _ := cfgpkg.Tips(c.SamplingTips); tips != "" {
		fmt.Fprintf(&b, "\nTips:\n%s\n", tips)
	}
	if len(path) > 0 {
		b.WriteString("\nPath so far:\n")
		for i, n := range path {
			fmt.Fprintf(&b, "Step %d\n  intent: %s\n  tool: %s\n  parameters: %s\n  observation: %s\n",
				i+1, n.Intent, n.Tool, string(n.Params), clip(n.Observation, c.ObservationChars))
		}
	} else {
		b.WriteString("\nPath so far: none (this is the first action).\n")
	}
	if len(taken) > 0 {
		b.WriteString("\nActions already taken for this seed (forbidden: do not repeat any of them):\n")
		from := max(0, len(taken)-shownSignatures)
		for _, s := range taken[from:] {
			fmt.Fprintf(&b, "- %s\n", clip(s, signatureChars))
		}
	}
	b.WriteString("\nTools:\n")
	for _, t := range tools {
		s := schemas[t]
		params := string(s.Parameters)
		if params == "" {
			params = "{}"
		}
		fmt.Fprintf(&b, "- %s: %s\n  parameters: %s\n", t, s.Description, params)
	}
	if c.ProposalFormat == cfgpkg.FormatXML {
		b.WriteString("\nAnswer with exactly these tags:\n<intent>what you want to find out, one sentence</intent>\n" +
			"<tool_name>one tool name from the list</tool_name>\n<parameters>the parameters as a JSON object</parameters>\n")
	} else {
		b.WriteString("\nCall exactly one tool. In the message text, state your intent in one sentence.\n")
	}
	if feedback != "" {
		fmt.Fprintf(&b, "\nYour previous proposal was refused: %s\nPropose a different action.\n", feedback)
	}
	return []operations.Message{{Role: operations.RoleUser, Content: b.String()}}
}

// proposalRequest is the generate request of a proposal of the node key
// ("0.1.0"), attempt from 1 (a re-ask is attempt 2). Its labels say what
// the prompt says in words: the role, the branch, the attempt and, for
// XML proposals, the format (operations.MetaRole ...).
func proposalRequest(c *cfgpkg.Config, tools []string, schemas map[string]agent.SandboxTool, msgs []operations.Message, key string, attempt int) operations.Request {
	g := operations.GenerateRequest{Model: c.ModelName, Messages: msgs, Temperature: c.Temperature}
	if c.ProposalFormat == cfgpkg.FormatTools {
		g.Tools = agent.SandboxTools(tools, schemas)
		g.ToolChoice = "required"
	}
	r := operations.NewGenerate(g)
	r.Meta = operations.Meta{operations.MetaRole: RoleExplorer, "work": key,
		operations.MetaBranch: key, operations.MetaAttempt: strconv.Itoa(attempt)}
	if c.ProposalFormat == cfgpkg.FormatXML {
		r.Meta[operations.MetaFormat] = operations.FormatXML
	}
	return r
}
