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
const MetaRole = "role"

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
