package modular

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases/agent"
)

// systemPrompt is the generator's system message. It depends only on the
// settings and the run's limits, so it is the same for the whole run.
func systemPrompt(s *Settings, l operations.RunLimits) string {
	var b strings.Builder
	b.WriteString("You are an autonomous agent with access to a Linux machine. You make progress on the task " +
		"you are given one step at a time: every reply of yours must call exactly one tool, and you then see " +
		"what that call produced. Think briefly about what you know and what to do next, then act. " +
		"Check your work by running it rather than assuming it works, and never make up tool output.\n\n")
	fmt.Fprintf(&b, "Shell commands run in a persistent bash session in your working directory (the directory, "+
		"variables and functions carry over); Python code runs in a persistent interpreter. A command that runs "+
		"longer than the timeout (%d seconds at the start) is interrupted; change the timeout with set_timeout "+
		"before running something slow.\n\n", s.Timeout)
	if s.IntermediateScoring {
		b.WriteString("There is no submit tool. Use score to have your current work graded, as often as is useful, " +
			"and score_log to see earlier scores; the best score counts. The run ends when your budget is spent.\n\n")
	} else {
		b.WriteString("When the task is done, call submit with your final answer, exactly as it should be graded. " +
			"Submitting ends your work; you cannot act afterwards.\n\n")
	}
	b.WriteString(budget(s, l))
	switch s.Mode() {
	case agent.ModeFenced:
		b.WriteString("\n\nYou call a tool by writing a fenced code block whose info string is the tool's name; the block's " +
			"body is the tool's argument (the command for bash, the code for python, the answer for submit, a whole " +
			"number of seconds for set_timeout; score and score_log take an empty block). Write exactly one such block " +
			"per reply, after your reasoning. For example:\n\n```bash\nls -la\n```\n\nThe tools:\n")
		b.WriteString(agent.ToolsJSON(s.Toolset()...))
	case agent.ModeXML:
		b.WriteString("\n\nYou call a tool by writing an XML element named after the tool; the element's text is the " +
			"tool's argument (the command for bash, the code for python, the answer for submit, a whole number of " +
			"seconds for set_timeout; score and score_log take an empty element). Write exactly one such element " +
			"per reply, after your reasoning. For example:\n\n<bash>\nls -la\n</bash>\n\nThe tools:\n")
		b.WriteString(agent.ToolsJSON(s.Toolset()...))
	}
	return b.String()
}

// budget describes the run's limits, the chosen limit type first.
func budget(s *Settings, l operations.RunLimits) string {
	var parts []string
	for _, t := range dimensions(s) {
		if _, limit := t.Of(operations.RunUsage{}, l); limit > 0 {
			parts = append(parts, t.Describe(l))
		}
	}
	if len(parts) == 0 {
		return "There is no fixed budget for this task, but work efficiently. The last message of the conversation reports your usage."
	}
	return "Your budget for this task: at most " + strings.Join(parts, ", ") + ". The run is stopped when any of these runs out; " +
		"the last message of the conversation reports your usage."
}

// dimensions lists the usage dimensions the agent is told about: the
// chosen limit type, then tokens, time, actions and cost.
func dimensions(s *Settings) []agent.LimitType {
	dims := []agent.LimitType{s.limitType()}
	for _, t := range []agent.LimitType{agent.LimitTokens, agent.LimitSeconds, agent.LimitActions, agent.LimitCost} {
		if t != dims[0] {
			dims = append(dims, t)
		}
	}
	return dims
}

// taskMessage is the user message holding the task.
func taskMessage(task string) string {
	if strings.TrimSpace(task) == "" {
		task = "(no task was given; explore the working directory and report what you find)"
	}
	return "Your task:\n<task>\n" + task + "\n</task>"
}

// trimmedNote is the notice that replaces dropped history.
func trimmedNote(dropped, budget int) string {
	return fmt.Sprintf("[History trimmed: %d earlier messages are not shown, to keep this prompt under %d tokens. "+
		"The task and your first steps are above; your most recent steps follow.]", dropped, budget)
}

// usageMessage reports the run's usage: the chosen limit type first, then
// every other limited dimension. Once the largest fraction used (of
// tokens and time as in Flock, and of actions, cost and the chosen type,
// which the engine enforces as well) passes the soft or hard warning
// level, a hint to finish follows.
func usageMessage(s *Settings, u operations.RunUsage, l operations.RunLimits) string {
	var parts []string
	frac := 0.0
	for i, t := range dimensions(s) {
		used, limit := t.Of(u, l)
		if t == agent.LimitSeconds {
			used = float64(int64(used))
		}
		switch {
		case limit > 0:
			f := used / limit
			frac = max(frac, f)
			parts = append(parts, fmt.Sprintf("%s of %s %s used (%d%%)", num(used), num(limit), t.Unit(), int(f*100)))
		case i == 0:
			parts = append(parts, fmt.Sprintf("%s %s used (no limit set)", num(used), t.Unit()))
		}
	}
	msg := "Usage so far: " + strings.Join(parts, "; ") + "."
	finish := "submit your answer"
	if s.IntermediateScoring {
		finish = "make sure your best work has been scored"
	}
	w := agent.Warnings(s.UsageWarnings[0], s.UsageWarnings[1], finish)
	switch {
	case frac > w[1].At:
		msg += "\n" + w[1].Text
	case frac > w[0].At:
		msg += "\n" + w[0].Text
	}
	return msg
}

func num(f float64) string {
	if f == float64(int64(f)) {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'f', 2, 64)
}

// Warnings shown to the model.
const (
	msgEmptyOutput = "Your last reply was empty: it had neither text nor a tool call. Reply with your reasoning and exactly one tool call."
	msgNoCall      = "Your last reply did not call a tool. Every reply must call exactly one tool (%s); to finish, %s."
	msgInvalidCall = "Your last tool call was rejected: %s. Call one of the tools (%s) with valid arguments."
)

// noCallHint says how to call a tool in the mode and how to finish.
func noCallHint(s *Settings) string {
	finish := "call submit with your answer"
	if s.IntermediateScoring {
		finish = "keep improving your work and call score"
	}
	switch s.Mode() {
	case agent.ModeFenced:
		finish += "; write a tool call as a fenced block such as ```bash"
	case agent.ModeXML:
		finish += "; write a tool call as an element such as <bash>...</bash>"
	}
	return fmt.Sprintf(msgNoCall, strings.Join(s.Toolset(), ", "), finish)
}
