package agent

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ToolSummarize is the context-folding tool of the react workflow
// (AgentFly's summarize): the model hands over a summary of its work so far
// and the workflow folds the history into system prompt + task + summary.
const ToolSummarize = "summarize"

// SummarizeArgs are summarize's arguments.
type SummarizeArgs struct {
	Summary string `json:"summary"`
}

func init() {
	register(&Spec{
		Name: ToolSummarize,
		Description: "Fold your context: replace the conversation so far with this summary. Keep everything you still need: " +
			"the goal, exact identifiers, paths, numbers and commands, what worked, what failed and what is left to do.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"summary":{"type":"string","description":"A self-contained summary of the work so far."}},"required":["summary"],"additionalProperties":false}`),
		TextArg:    "summary",
		check:      checkSummarize,
	})
}

func checkSummarize(a map[string]json.RawMessage) (any, error) {
	raw, ok := a["summary"]
	if !ok {
		return nil, fmt.Errorf(`missing "summary"`)
	}
	s, ok := stringish(raw)
	if !ok {
		return nil, fmt.Errorf(`"summary" must be a string`)
	}
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf(`"summary" is empty`)
	}
	return SummarizeArgs{Summary: s}, nil
}
