package operations

import (
	"fmt"
	"strconv"
)

// MetaRole is the Meta key by which a phase says what a generate request
// asks the model to play (one of the ModelRole values). Handlers that stand
// in for a model (the simulated provider) answer in kind from it instead
// of guessing from the prompt's wording; live models ignore it. The key
// and its values are journaled with the request like any Meta.
//
// The other Meta keys below are the rest of a request's role metadata:
// what a stand-in must know to play the role that the prompt says in
// words (the answer format, the attempt, the branch). Phases set them
// next to MetaRole; a stand-in reads them, never the prompt's prose.
const MetaRole = "role"

// MetaFormat is the Meta key that says how a request without tools (or
// with tool_choice "none") is to be answered: FormatFenced or FormatXML,
// the text conventions of the phases' agents. Absent: native tool calls
// when tools are offered, else plain text.
const MetaFormat = "format"

// Values of MetaFormat.
const (
	// FormatFenced: a tool call is a fenced block whose info string is
	// the tool's name (```bash ... ```).
	FormatFenced = "fenced"
	// FormatXML: a tool call is an element named after the tool
	// (<bash>...</bash>), and a synthesis proposal AgentFlow's <intent>,
	// <tool_name> and <parameters> tags.
	FormatXML = "xml"
)

// MetaAttempt is the Meta key of a request that asks again what an
// earlier one of the same work asked (a re-ask after a refused proposal,
// a retried QA pair): its attempt number, from 1. Absent means 1.
const MetaAttempt = "attempt"

// MetaBranch is the Meta key of an explorer request: the id of the tree
// node the proposal grows ("0.1.0", the parent's id and the child's
// index), so that siblings explore differently.
const MetaBranch = "branch"

// MetaFailedSteps is the Meta key of a synthesizer request whose
// trajectory holds failed tool calls: their step numbers (from 1),
// comma-separated. Their observations are errors, not evidence.
const MetaFailedSteps = "failed_steps"

// Model roles: the values of MetaRole.
const (
	// ModelRoleActor picks the agent's next action (a tool call, or a
	// fenced block in text mode).
	ModelRoleActor = "actor"
	// ModelRoleAdvisor advises the actor on its next step.
	ModelRoleAdvisor = "advisor"
	// ModelRoleRater rates candidate actions.
	ModelRoleRater = "rater"
	// ModelRoleJudge picks a winner among candidate runs.
	ModelRoleJudge = "judge"
	// ModelRoleExplorer proposes the next action of a synthesis branch
	// (intent, tool and params; a tool call, or AgentFlow's XML tags).
	ModelRoleExplorer = "explorer"
	// ModelRoleSynthesizer writes a multi-hop QA pair as JSON from a
	// trajectory.
	ModelRoleSynthesizer = "synthesizer"
	// ModelRoleClosedBook answers a question with no trajectory or tools.
	ModelRoleClosedBook = "closed_book"
	// ModelRoleGrader grades a candidate answer against reference answers
	// with a JSON verdict {"correct", "reasoning"} (a rollout's
	// llm_judgement).
	ModelRoleGrader = "grader"
)

// Meta carries an operation's small free-form labels (purpose, role, option
// index). They are journaled with the request and copied onto its result;
// phases use them to recognise results (handlers ignore them, except that a
// model stand-in reads MetaRole). A nil Meta is empty.
type Meta map[string]string

// Int returns label key as a decimal int. ok is false when the label is
// absent; err (wrapping ErrBadMeta, naming the key and value) reports a
// label that is present but not a decimal int, which is never -1 or 0 in
// disguise.
func (m Meta) Int(key string) (n int, ok bool, err error) {
	v, ok := m[key]
	if !ok {
		return 0, false, nil
	}
	n, err = strconv.Atoi(v)
	if err != nil {
		return 0, true, fmt.Errorf("%w: %s=%q is not an integer", ErrBadMeta, key, v)
	}
	return n, true, nil
}

// Index returns label key as an index into a list of length size: it
// reports an error (wrapping ErrBadMeta) when the label is absent, not a
// decimal int, or outside [0, size).
func (m Meta) Index(key string, size int) (int, error) {
	n, ok, err := m.Int(key)
	switch {
	case err != nil:
		return 0, err
	case !ok:
		return 0, fmt.Errorf("%w: no %s label", ErrBadMeta, key)
	case n < 0 || n >= size:
		return 0, fmt.Errorf("%w: %s=%d is outside [0, %d)", ErrBadMeta, key, n, size)
	}
	return n, nil
}

// Clone returns a copy of m that can be changed without changing m.
func (m Meta) Clone() Meta {
	if m == nil {
		return nil
	}
	c := make(Meta, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
