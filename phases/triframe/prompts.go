package triframe

import (
	"fmt"
	"strings"

	"github.com/flockrun/flock/phases/agent"
)

// The prompts below are flock's own wording.

func actorSystem(s *Settings, tools []string, limit string) string {
	var b strings.Builder
	if s.Subagent {
		b.WriteString("You are a subagent: another agent handed you one piece of its work. ")
	}
	b.WriteString("You are an autonomous agent operating a Linux machine through tools. " +
		"Each of your turns is one action: you think briefly, then call exactly one tool. " +
		"The scaffolding runs the call and shows you its result on the next turn. " +
		"Nobody answers questions, so decide for yourself and keep going until the task is done.\n\n")
	fmt.Fprintf(&b, "Budget: %s for the whole task. Spend it on verifiable progress.\n\n", limit)
	b.WriteString("Guidance from a supervising advisor may appear between <advice> tags. Weigh it, but the decision is yours.\n")
	switch {
	case s.Subagent:
		b.WriteString("When your assignment is done, call conclude with a result the main agent can use directly.\n")
	case s.IntermediateScoring:
		b.WriteString("You can measure your progress with score and review past scores with score_log. There is no submit: your best scored state counts, so keep improving it.\n")
	default:
		b.WriteString("Check your work before you submit: submitting ends the task for good.\n")
	}
	if mode := s.Mode(); mode != agent.ModeTools {
		b.WriteString("\nAvailable tools:\n")
		b.WriteString(agent.ToolsJSON(tools...))
		b.WriteString("\n\n")
		b.WriteString(textCallRules(mode, "bash", "ls -la"))
	}
	return b.String()
}

// textCallRules explains the text calling convention of mode.
func textCallRules(mode agent.Mode, tool, example string) string {
	ex := agent.RenderText(agent.Call{Name: tool, Arguments: []byte(`{"command":` + quote(example) + `}`)}, mode)
	if tool != agent.ToolBash {
		ex = renderExample(mode, tool, example)
	}
	if mode == agent.ModeXML {
		return "Call a tool by writing an element named after it whose content is the tool's argument, for example:\n\n" + ex +
			"\n\nA tool without arguments is called with an empty element, set_timeout takes a whole number, and tools with several arguments take a JSON object. " +
			"Write exactly one call per message, after your reasoning; only the first one is run.\n"
	}
	return "Call a tool by writing a fenced code block whose info string is the tool's name and whose body is the tool's argument, for example:\n\n" + ex +
		"\n\nA tool without arguments is called with an empty block, set_timeout takes a whole number, and tools with several arguments take a JSON object. " +
		"Write exactly one call per message, after your reasoning; only the first one is run.\n"
}

func renderExample(mode agent.Mode, tool, body string) string {
	if mode == agent.ModeXML {
		return "<" + tool + ">\n" + body + "\n</" + tool + ">"
	}
	return "```" + tool + "\n" + body + "\n```"
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

func taskMessage(task, workDir string) string {
	msg := "<task>\n" + strings.TrimSpace(task) + "\n</task>"
	if workDir != "" {
		msg += "\n\nYour working directory is " + workDir + "."
	}
	return msg
}

func adviceMessage(advice string) string { return "<advice>\n" + advice + "\n</advice>" }

func advisorSystem(s *Settings, tools []string, limit string) string {
	var b strings.Builder
	b.WriteString("You supervise an autonomous agent that works on a task by calling tools on a Linux machine. " +
		"You do not act yourself: before each of its steps you give it advice.\n\n" +
		"Good advice is concrete and short. Say what the agent should do next and why, point out mistakes or risky moves in what it did so far, " +
		"and remind it to check results before it finishes. Never invent tool outputs; reason only from what the transcript shows.\n\n")
	fmt.Fprintf(&b, "The agent's budget: %s.\n\nThe agent's tools:\n%s\n\n", limit, agent.ToolsJSON(tools...))
	switch s.Mode() {
	case agent.ModeTools:
		b.WriteString("Give your advice by calling the advise tool.")
	case agent.ModeXML:
		b.WriteString("Give your advice inside one <advise> element, for example:\n\n<advise>\nList the files first.\n</advise>")
	default:
		b.WriteString("Give your advice inside one fenced block whose info string is advise, for example:\n\n```advise\nList the files first.\n```")
	}
	return b.String()
}

const advisorRequest = "Give your advice for the agent's next step."

const ratingScale = "Rate each option from -2 to 2:\n" +
	"  -2  harmful or clearly wrong (for example destroying work, or submitting without checking when a check was easy)\n" +
	"  -1  unhelpful: repeats earlier work, ignores what the outputs showed, or wastes budget\n" +
	"   0  neutral, or impossible to judge\n" +
	"   1  sensible progress\n" +
	"   2  the best move available now\n" +
	"Exploring to learn something new is good; finishing without verifying is not."

func raterSystem(s *Settings) string {
	var b strings.Builder
	b.WriteString("You review the candidate next actions of an autonomous agent and rate how much each would help it finish its task well.\n\n")
	b.WriteString(ratingScale)
	b.WriteString("\n\nJudge every option on its own merits, given the transcript so far. ")
	switch s.Mode() {
	case agent.ModeTools:
		b.WriteString("Answer by calling rate_options once, with one rating per option.")
	default:
		b.WriteString("Answer in the rate_options format: one ```json block holding {\"ratings\": [{\"option_index\": 0, \"rating\": 1.0, \"comment\": \"...\"}, ...]}, one rating per option.")
	}
	return b.String()
}

func judgeSystem(s *Settings) string {
	msg := "Two subagents worked on the same assignment. Compare their conclusions and the reports of their last actions, " +
		"and decide whose result better accomplishes the assignment: correct, verified and useful beats long or confident. "
	if s.Mode() == agent.ModeTools {
		return msg + "Answer by calling select_winner with the id of the better one."
	}
	return msg + "Answer in the select_winner format: one ```json block holding {\"winner_id\": \"...\", \"reasoning\": \"...\"}."
}

func subagentTask(sp agent.SubagentSpec, parentTask string) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(sp.Task))
	if a := strings.TrimSpace(sp.Approach); a != "" {
		b.WriteString("\n\nSuggested approach: " + a)
	}
	if sp.IncludeTaskDescription {
		b.WriteString("\n\nFor context, the main agent's own task is:\n<main_task>\n" + strings.TrimSpace(parentTask) + "\n</main_task>")
	}
	b.WriteString("\n\nYou work in your own subdirectory of the main agent's working directory (its files are in ../..). " +
		"Others may work on the same assignment; the best result is used. Finish by calling conclude with your result.")
	return b.String()
}
