package grading

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Epoch reducers (inspect_ai's): how the scores of one task's samples
// become one score.
const (
	ReduceMean = "mean"
	ReduceMax  = "max"
	ReduceMode = "mode"
	// ReduceAtLeast is the prefix of "at_least_K": 1 when at least K
	// samples are correct.
	ReduceAtLeast = "at_least_"
)

// CheckReducer reports whether name is a reducer Reduce knows.
func CheckReducer(name string) error {
	switch name {
	case ReduceMean, ReduceMax, ReduceMode:
		return nil
	}
	if k, ok := strings.CutPrefix(name, ReduceAtLeast); ok {
		if n, err := strconv.Atoi(k); err == nil && n >= 1 {
			return nil
		}
	}
	return fmt.Errorf("%w: reducer %q (want mean, max, mode or at_least_K with K >= 1)", ErrUnknownMetric, name)
}

// Reduce reduces one task's sample scores (and whether each is correct)
// with the named reducer: mean, max, mode (the most frequent score, the
// highest on a tie) or at_least_K (1 when at least K are correct, else 0).
// No scores reduce to 0.
func Reduce(name string, scores []float64, correct []bool) (float64, error) {
	if err := CheckReducer(name); err != nil {
		return 0, err
	}
	if len(scores) == 0 {
		return 0, nil
	}
	switch name {
	case ReduceMean:
		return meanOf(scores), nil
	case ReduceMax:
		return slices.Max(scores), nil
	case ReduceMode:
		counts := map[float64]int{}
		best, bestN := 0.0, 0
		for _, s := range scores {
			counts[s]++
		}
		for s, n := range counts {
			if n > bestN || (n == bestN && s > best) {
				best, bestN = s, n
			}
		}
		return best, nil
	}
	k, _ := strconv.Atoi(strings.TrimPrefix(name, ReduceAtLeast))
	c := 0
	for _, ok := range correct {
		if ok {
			c++
		}
	}
	if c >= k {
		return 1, nil
	}
	return 0, nil
}
