package qa

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/flockrun/flock/synthesis/trajectory"
)

// Check names, in the order Check runs them, and the closed-book filter's.
const (
	CheckNonEmpty   = "non_empty"
	CheckNoLeakage  = "no_leakage"
	CheckVerbosity  = "verbosity"
	CheckHops       = "hops"
	CheckGrounded   = "grounded"
	CheckClosedBook = "closed_book"
)

// Defaults of CheckOptions, AgentFlow's.
const (
	DefaultMinHops          = 3
	DefaultMaxQuestionChars = 500
	DefaultMaxQuestionWords = 85
)

// CheckOptions set the checks' limits. A zero limit means its default;
// Grounded turns the groundedness check on (DefaultCheckOptions does).
type CheckOptions struct {
	MinHops          int  `json:"min_hops"`
	MaxQuestionChars int  `json:"max_question_chars"`
	MaxQuestionWords int  `json:"max_question_words"`
	Grounded         bool `json:"grounded"`
}

// DefaultCheckOptions are AgentFlow's limits with groundedness on.
func DefaultCheckOptions() CheckOptions {
	return CheckOptions{
		MinHops:          DefaultMinHops,
		MaxQuestionChars: DefaultMaxQuestionChars,
		MaxQuestionWords: DefaultMaxQuestionWords,
		Grounded:         true,
	}
}

func (o CheckOptions) withDefaults() CheckOptions {
	if o.MinHops <= 0 {
		o.MinHops = DefaultMinHops
	}
	if o.MaxQuestionChars <= 0 {
		o.MaxQuestionChars = DefaultMaxQuestionChars
	}
	if o.MaxQuestionWords <= 0 {
		o.MaxQuestionWords = DefaultMaxQuestionWords
	}
	return o
}

// Failure is a check a QA pair failed and why, worded to be fed back to the
// model as it stands. It matches ErrCheckFailed under errors.Is.
type Failure struct {
	Check  string `json:"check"`
	Reason string `json:"reason"`
}

func (f *Failure) Error() string { return f.Check + ": " + f.Reason }

// Is makes errors.Is(f, ErrCheckFailed) true.
func (f *Failure) Is(target error) bool { return target == ErrCheckFailed }

func fail(check, format string, args ...any) *Failure {
	return &Failure{Check: check, Reason: fmt.Sprintf(format, args...)}
}

// Check runs the checks on q in order and stops at the first that fails:
//
//   - non_empty: the question and the answer each have a letter or digit.
//   - no_leakage: the answer's words do not occur as a run of whole words
//     in the question (AgentFlow looked for a substring, so the answer "1"
//     leaked through "2019").
//   - verbosity: the question has at most MaxQuestionChars runes and
//     MaxQuestionWords words (runs of letters, digits and '_').
//   - hops: at least MinHops reasoning steps.
//   - grounded (only when opts.Grounded): the answer, and each step's
//     evidence, occur as whole words in one observation of a call on p that
//     did not fail. An evidence quoted with an ellipsis ("..." or "…") is
//     split there and each part must occur.
//
// Text is compared by words: lowercased, split at anything but letters and
// digits, a leading article of the answer or evidence ignored. Numbers are
// compared as written ("1,234" does not match "1234"; "3.5" stays one word,
// so "3" does not match it).
//
// passed names the checks passed, in order; fail is nil when all passed.
func Check(q trajectory.QA, p trajectory.Path, opts CheckOptions) (passed []string, fail *Failure) {
	opts = opts.withDefaults()
	checks := []struct {
		name string
		run  func() *Failure
	}{
		{CheckNonEmpty, func() *Failure { return checkNonEmpty(q) }},
		{CheckNoLeakage, func() *Failure { return checkLeakage(q) }},
		{CheckVerbosity, func() *Failure { return checkVerbosity(q, opts) }},
		{CheckHops, func() *Failure { return checkHops(q, opts) }},
	}
	if opts.Grounded {
		checks = append(checks, struct {
			name string
			run  func() *Failure
		}{CheckGrounded, func() *Failure { return checkGrounded(q, p) }})
	}
	for _, c := range checks {
		if f := c.run(); f != nil {
			return passed, f
		}
		passed = append(passed, c.name)
	}
	return passed, nil
}

func checkNonEmpty(q trajectory.QA) *Failure {
	switch {
	case strings.TrimSpace(q.Question) == "":
		return fail(CheckNonEmpty, "the question is empty")
	case len(Words(q.Question)) == 0:
		return fail(CheckNonEmpty, "the question %s has no words", quote(q.Question))
	case strings.TrimSpace(q.Answer) == "":
		return fail(CheckNonEmpty, "the answer is empty")
	case len(Words(q.Answer)) == 0:
		return fail(CheckNonEmpty, "the answer %s has no words", quote(q.Answer))
	}
	return nil
}

func checkLeakage(q trajectory.QA) *Failure {
	if newText(q.Question).has(phrase(q.Answer)) {
		return fail(CheckNoLeakage, "the answer %s appears in the question; ask for it without naming it", quote(q.Answer))
	}
	return nil
}

func checkVerbosity(q trajectory.QA, opts CheckOptions) *Failure {
	question := strings.TrimSpace(q.Question)
	if n := utf8.RuneCountInString(question); n > opts.MaxQuestionChars {
		return fail(CheckVerbosity, "the question is %d characters long, over the limit of %d", n, opts.MaxQuestionChars)
	}
	if n := countWords(question); n > opts.MaxQuestionWords {
		return fail(CheckVerbosity, "the question has %d words, over the limit of %d", n, opts.MaxQuestionWords)
	}
	return nil
}

func checkHops(q trajectory.QA, opts CheckOptions) *Failure {
	if n := len(q.ReasoningSteps); n < opts.MinHops {
		return fail(CheckHops, "the answer takes %d reasoning steps, at least %d dependent hops are required", n, opts.MinHops)
	}
	return nil
}

func checkGrounded(q trajectory.QA, p trajectory.Path) *Failure {
	var obs []text
	for _, n := range p.Nodes {
		if !n.Failed && strings.TrimSpace(n.Observation) != "" {
			obs = append(obs, newText(n.Observation))
		}
	}
	if len(obs) == 0 {
		return fail(CheckGrounded, "the trajectory has no observation to ground the answer in")
	}
	if !inAny(obs, phrase(q.Answer)) {
		return fail(CheckGrounded, "the answer %s does not occur in any observation; use a value copied from the observations", quote(q.Answer))
	}
	for i, h := range q.ReasoningSteps {
		parts := evidenceParts(h.Evidence)
		if len(parts) == 0 {
			return fail(CheckGrounded, "reasoning step %d has no evidence; quote the observation it uses", i+1)
		}
		for _, part := range parts {
			if !inAny(obs, part) {
				return fail(CheckGrounded, "the evidence of reasoning step %d, %s, does not occur in any observation; quote it word for word", i+1, quote(h.Evidence))
			}
		}
	}
	return nil
}

// evidenceParts splits an evidence quote at ellipses into needles, dropping
// parts without words.
func evidenceParts(e string) []string {
	var out []string
	for _, part := range strings.Split(strings.ReplaceAll(e, "…", "..."), "...") {
		if ph := phrase(part); ph != "" {
			out = append(out, ph)
		}
	}
	return out
}

func inAny(obs []text, needle string) bool {
	for _, o := range obs {
		if o.has(needle) {
			return true
		}
	}
	return false
}
