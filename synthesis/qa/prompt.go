package qa

import (
	"fmt"
	"strings"

	"github.com/flockrun/flock/synthesis/trajectory"
)

// MaxObservationChars is how much of each observation the prompt shows, in
// runes (AgentFlow's 800); the rest is replaced by a note of its length.
const MaxObservationChars = 800

// Message is one chat message of a prompt.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Example is one of qa_examples, shown to the model as a model answer.
type Example struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// Input is what a QA prompt is built from.
type Input struct {
	Seed trajectory.Seed
	// SeedDescription says what kind of thing the seed is (seed_description).
	SeedDescription string
	// SynthesisTips are synthesis_tips, joined with newlines by the caller.
	SynthesisTips string
	// Examples are qa_examples.
	Examples []Example
	// Path is the selected trajectory the question is written from.
	Path trajectory.Path
	// Limits are the limits the prompt states; they should be the ones
	// Check is run with. Zero fields mean the defaults.
	Limits CheckOptions
}

// Temperature is AgentFlow's sampling temperature for an attempt (from 1):
// 0.7, then 0.1 higher on each retry, at most 1.
func Temperature(attempt int) float64 {
	attempt = max(attempt, 1)
	return min(0.7+0.1*float64(attempt-1), 1)
}

// Prompt builds the messages for one synthesis attempt (from 1). The system
// message sets the task and the JSON reply; the user message holds the
// seed, its description, the trajectory (each step's intent, tool,
// parameters and observation cut to MaxObservationChars), the requirements
// (AgentFlow's, plus the groundedness rule), synthesis_tips, qa_examples and
// the reply's schema. When attempt is above 1 and feedback is not empty
// (typically a *Failure's Error()), a "regeneration required" note quotes it
// so the model can fix what the last attempt got wrong. Prompt is a pure
// function of its arguments.
func Prompt(in Input, attempt int, feedback string) []Message {
	lim := in.Limits.withDefaults()
	var b strings.Builder
	section := func(title string) {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("## " + title + "\n")
	}

	section("Seed")
	b.WriteString(strings.TrimSpace(in.Seed.Content) + "\n")
	if d := strings.TrimSpace(in.SeedDescription); d != "" {
		b.WriteString("\nWhat the seed is: " + d + "\n")
	}

	section("Trajectory")
	if len(in.Path.Nodes) == 0 {
		b.WriteString("(no steps)\n")
	}
	for i, n := range in.Path.Nodes {
		fmt.Fprintf(&b, "Step %d\n", i+1)
		if intent := strings.TrimSpace(n.Intent); intent != "" {
			b.WriteString("Intent: " + intent + "\n")
		}
		if n.Tool != "" {
			b.WriteString("Tool: " + n.Tool + "\n")
		}
		if len(n.Params) > 0 {
			b.WriteString("Parameters: " + string(n.Params) + "\n")
		}
		if n.Failed {
			b.WriteString("Observation (the call failed; this is an error, not evidence): ")
		} else {
			b.WriteString("Observation: ")
		}
		b.WriteString(clip(strings.TrimSpace(n.Observation), MaxObservationChars) + "\n")
	}

	section("Requirements")
	reqs := []string{
		"The answer is a short fact (a name, number, date or short phrase), at most one sentence.",
		`Ask for a fact: no "how" or "why" questions.`,
		"The answer must not appear in the question.",
		fmt.Sprintf("The question is at most 2 sentences, at most %d words and %d characters.", lim.MaxQuestionWords, lim.MaxQuestionChars),
		fmt.Sprintf("Answering takes at least %d dependent hops: each hop uses the output of the one before it.", lim.MinHops),
		`The question is self-contained: it names what it asks about and never mentions the trajectory, the steps, the tools, "the document" or "the search results".`,
		"The answer is grounded: copy it exactly as written in an observation above (numbers too), and quote each hop's evidence word for word from an observation.",
	}
	for i, r := range reqs {
		fmt.Fprintf(&b, "%d. %s\n", i+1, r)
	}

	if tips := strings.TrimSpace(in.SynthesisTips); tips != "" {
		section("Tips")
		b.WriteString(tips + "\n")
	}
	if len(in.Examples) > 0 {
		section("Examples")
		for i, e := range in.Examples {
			if i > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "Question: %s\nAnswer: %s\n", strings.TrimSpace(e.Question), strings.TrimSpace(e.Answer))
		}
	}

	section("Reply")
	b.WriteString(`Reply with one JSON object and nothing else:
{"question": "...", "answer": "...", "reasoning_steps": [{"hop": 1, "fact": "what this hop establishes", "evidence": "the exact words of the observation it uses", "output": "the value passed to the next hop"}]}
`)

	if f := strings.TrimSpace(feedback); attempt > 1 && f != "" {
		section("Regeneration required")
		fmt.Fprintf(&b, "This is attempt %d. The previous question was rejected: %s\nWrite a new question and answer that fix this and meet every requirement.\n", attempt, f)
	}

	return []Message{
		{Role: "system", Content: "You write one multi-hop question and its answer for a question-answering benchmark, from the record of an agent's tool calls. The question must need the facts those calls found. You reply with a single JSON object."},
		{Role: "user", Content: b.String()},
	}
}
