package agent

import (
	"encoding/json"

	"github.com/flockrun/flock/operations"
)

// Built-in tool names.
const (
	ToolBash            = "bash"
	ToolPython          = "python"
	ToolSetTimeout      = "set_timeout"
	ToolSubmit          = "submit"
	ToolScore           = "score"
	ToolScoreLog        = "score_log"
	ToolAdvise          = "advise"
	ToolRateOptions     = "rate_options"
	ToolLaunchSubagents = "launch_subagents"
	ToolConclude        = "conclude"
	ToolSelectWinner    = "select_winner"
)

// Bounds of set_timeout, in seconds.
const (
	MinTimeout = 1
	MaxTimeout = 86400
)

// Bounds of a rating.
const (
	MinRating = -2.0
	MaxRating = 2.0
)

// Spec describes one tool.
type Spec struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments object.
	Parameters json.RawMessage
	// TextArg names the argument a text-mode block's body fills. Empty for
	// argument-less tools and for tools whose body is a JSON object.
	TextArg string
	// NoArgs marks tools without arguments; an empty block calls them.
	NoArgs bool
	// IntBody makes a text-mode body an integer (set_timeout).
	IntBody bool
	// Greedy makes a text-mode body run to the last closing fence or tag.
	Greedy bool
	// check decodes raw arguments and returns them canonical.
	check func(args map[string]json.RawMessage) (any, error)
}

// Tool returns the spec as an OpenAI tool.
func (s *Spec) Tool() operations.Tool {
	return operations.Tool{Name: s.Name, Description: s.Description, Parameters: s.Parameters}
}

var specs = map[string]*Spec{}

func register(s *Spec) { specs[s.Name] = s }

// Lookup returns the built-in spec of a tool.
func Lookup(name string) (*Spec, bool) {
	s, ok := specs[name]
	return s, ok
}

// Tools returns the OpenAI definitions of the named built-in tools, in the
// order given; unknown names are skipped.
func Tools(names ...string) []operations.Tool {
	out := make([]operations.Tool, 0, len(names))
	for _, n := range names {
		if s, ok := specs[n]; ok {
			out = append(out, s.Tool())
		}
	}
	return out
}

// ToolsJSON renders the named tools' definitions as indented JSON, for
// prompts that list the tools in text.
func ToolsJSON(names ...string) string {
	type fn struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	var out []fn
	for _, t := range Tools(names...) {
		out = append(out, fn{t.Name, t.Description, t.Parameters})
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return string(b)
}

// Toolset selects an actor's tools.
type Toolset struct {
	// IntermediateScoring offers score and score_log instead of submit.
	IntermediateScoring bool
	// Conclude offers conclude instead of submit (subagents).
	Conclude bool
	// Subagents offers launch_subagents.
	Subagents bool
	// NoPython and NoTimeout drop those tools.
	NoPython, NoTimeout bool
}

// Names lists the toolset's tool names in a stable order.
func (t Toolset) Names() []string {
	names := []string{ToolBash}
	if !t.NoPython {
		names = append(names, ToolPython)
	}
	if !t.NoTimeout {
		names = append(names, ToolSetTimeout)
	}
	switch {
	case t.Conclude:
		names = append(names, ToolConclude)
	case t.IntermediateScoring:
		names = append(names, ToolScore, ToolScoreLog)
	default:
		names = append(names, ToolSubmit)
	}
	if t.Subagents && !t.Conclude {
		names = append(names, ToolLaunchSubagents)
	}
	return names
}

func init() {
	register(&Spec{
		Name:        ToolBash,
		Description: "Run a shell command in a persistent bash session (the working directory, variables and functions carry over between calls). Returns stdout, stderr and the exit code.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"command":{"type":"string","description":"The command line to run."}},"required":["command"],"additionalProperties":false}`),
		TextArg:     "command",
		check:       func(a map[string]json.RawMessage) (any, error) { return checkText[BashArgs](a, "command", true) },
	})
	register(&Spec{
		Name:        ToolPython,
		Description: "Run Python code in a persistent interpreter (globals carry over between calls). Returns what the code printed and any error.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","description":"The Python source to execute."}},"required":["code"],"additionalProperties":false}`),
		TextArg:     "code",
		check:       func(a map[string]json.RawMessage) (any, error) { return checkText[PythonArgs](a, "code", true) },
	})
	register(&Spec{
		Name:        ToolSetTimeout,
		Description: "Change the time limit, in whole seconds, of every later bash and python call.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"timeout":{"type":"integer","minimum":1,"maximum":86400,"description":"Seconds before a command is interrupted."}},"required":["timeout"],"additionalProperties":false}`),
		IntBody:     true,
		check:       checkTimeout,
	})
	register(&Spec{
		Name:        ToolSubmit,
		Description: "Submit your final answer. This ends your work on the task; you cannot act afterwards.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string","description":"The final answer, exactly as it should be graded."}},"required":["answer"],"additionalProperties":false}`),
		TextArg:     "answer",
		check:       func(a map[string]json.RawMessage) (any, error) { return checkText[SubmitArgs](a, "answer", false) },
	})
	register(&Spec{
		Name:        ToolScore,
		Description: "Score the current state of your work with the task's scorer. You may call it as often as you like; the best state counts.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		NoArgs:      true,
		check:       checkNone,
	})
	register(&Spec{
		Name:        ToolScoreLog,
		Description: "List the scores recorded so far, with the time each was taken.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		NoArgs:      true,
		check:       checkNone,
	})
	register(&Spec{
		Name:        ToolAdvise,
		Description: "Give the agent your advice for its next steps.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"advice":{"type":"string","description":"Concrete guidance for the agent."}},"required":["advice"],"additionalProperties":false}`),
		TextArg:     "advice",
		Greedy:      true,
		check:       func(a map[string]json.RawMessage) (any, error) { return checkText[AdviseArgs](a, "advice", true) },
	})
	register(&Spec{
		Name:        ToolRateOptions,
		Description: "Rate every candidate action from -2 (harmful) to 2 (excellent).",
		Parameters: json.RawMessage(`{"type":"object","properties":{"ratings":{"type":"array","items":{"type":"object","properties":{` +
			`"option_index":{"type":"integer","minimum":0,"description":"Index of the option, from 0."},` +
			`"rating":{"type":"number","minimum":-2,"maximum":2,"description":"From -2 (harmful) to 2 (excellent)."},` +
			`"comment":{"type":"string","description":"Why, in one or two sentences."}},"required":["option_index","rating","comment"]}}},"required":["ratings"],"additionalProperties":false}`),
		check: checkRatings,
	})
	register(&Spec{
		Name:        ToolLaunchSubagents,
		Description: "Start subagents that work in parallel, each in its own subdirectory, and wait for them. Agents given the same task compete; the best result per task is returned to you.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"agents":{"type":"array","minItems":1,"items":{"type":"object","properties":{` +
			`"task":{"type":"string","description":"What this subagent must achieve."},` +
			`"approach":{"type":"string","description":"How it should go about it."},` +
			`"include_task_description":{"type":"boolean","description":"Also show it the full original task."}},"required":["task","approach"]}}},"required":["agents"],"additionalProperties":false}`),
		check: checkAgents,
	})
	register(&Spec{
		Name:        ToolConclude,
		Description: "Finish your assignment and report your result to the agent that started you.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"result":{"type":"string","description":"What you achieved, found or produced, with the details the main agent needs."}},"required":["result"],"additionalProperties":false}`),
		TextArg:     "result",
		check:       func(a map[string]json.RawMessage) (any, error) { return checkText[ConcludeArgs](a, "result", false) },
	})
	register(&Spec{
		Name:        ToolSelectWinner,
		Description: "Pick the candidate whose work better accomplishes the task.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"winner_id":{"type":"string","description":"The id of the better candidate."},` +
			`"reasoning":{"type":"string","description":"Why it is better."}},"required":["winner_id","reasoning"],"additionalProperties":false}`),
		check: checkWinner,
	})
}
