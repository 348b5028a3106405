package grading

import (
	"fmt"
	"slices"
)

// Metric names accepted by Lookup and Score.
const (
	NameExactMatch     = "exact_match"
	NameF1             = "f1"
	NameContainsAnswer = "contains_answer"
	NameNumericMatch   = "numeric_match"
	NameSimilarity     = "similarity"
	// NameLLMJudgement needs a model call; see Judge and ErrNeedsJudge.
	NameLLMJudgement = "llm_judgement"
)

// Func scores one prediction against one reference, in [0, 1]. An error
// means the metric does not apply to that reference (for example
// numeric_match with a non-numeric reference), not a low score.
type Func func(prediction, reference string) (float64, error)

// infallible adapts a metric that cannot fail.
func infallible(f func(prediction, reference string) float64) Func {
	return func(p, r string) (float64, error) { return f(p, r), nil }
}

var registry = map[string]Func{
	NameExactMatch:     infallible(ExactMatch),
	NameF1:             infallible(F1),
	NameContainsAnswer: infallible(ContainsAnswer),
	NameNumericMatch:   NumericMatch,
	NameSimilarity:     infallible(Similarity),
	NameChoice:         infallible(Choice),
}

// aliases maps the original evaluator's metric names onto ours.
var aliases = map[string]string{
	"f1_score": NameF1,
}

// Names returns the metric names Lookup resolves, sorted, plus
// "llm_judgement" which needs a judge.
func Names() []string {
	names := make([]string, 0, len(registry)+1)
	for name := range registry {
		names = append(names, name)
	}
	names = append(names, NameLLMJudgement)
	slices.Sort(names)
	return names
}

// Lookup returns the metric registered under name ("f1_score" is accepted
// for "f1"). It returns ErrNeedsJudge for "llm_judgement" and
// ErrUnknownMetric for anything else it does not know.
func Lookup(name string) (Func, error) {
	if canon, ok := aliases[name]; ok {
		name = canon
	}
	if f, ok := registry[name]; ok {
		return f, nil
	}
	if name == NameLLMJudgement {
		return nil, fmt.Errorf("metric %q: %w", name, ErrNeedsJudge)
	}
	return nil, fmt.Errorf("metric %q: %w", name, ErrUnknownMetric)
}

// Score scores prediction with the named metric against every acceptable
// reference and returns the best score. References the metric cannot apply
// to are skipped; if it applies to none, Score returns the first such error.
// An empty reference list is ErrNoReference.
func Score(name, prediction string, references []string) (float64, error) {
	f, err := Lookup(name)
	if err != nil {
		return 0, err
	}
	return MaxOver(f, prediction, references)
}

// MaxOver returns the best score of f over references, with the error rules
// of Score.
func MaxOver(f Func, prediction string, references []string) (float64, error) {
	if len(references) == 0 {
		return 0, ErrNoReference
	}
	best, scored := 0.0, false
	var firstErr error
	for _, ref := range references {
		s, err := f(prediction, ref)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if !scored || s > best {
			best, scored = s, true
		}
		if best >= 1 {
			break
		}
	}
	if !scored {
		return 0, firstErr
	}
	return best, nil
}
