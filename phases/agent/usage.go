package agent

import (
	"fmt"
	"strconv"

	"github.com/flockrun/flock/operations"
)

// LimitType is the usage dimension an agent is told about.
type LimitType string

// Limit types. Flock's names (token, action, time) parse to these.
const (
	LimitTokens  LimitType = "tokens"
	LimitActions LimitType = "actions"
	LimitSeconds LimitType = "seconds"
	LimitCost    LimitType = "cost"
)

// ParseLimitType reads Flock's limit_type (token, action, time) or ours
// (tokens, actions, seconds, cost); "" means tokens.
func ParseLimitType(s string) (LimitType, error) {
	switch s {
	case "", "token", "tokens":
		return LimitTokens, nil
	case "action", "actions":
		return LimitActions, nil
	case "time", "seconds":
		return LimitSeconds, nil
	case "cost":
		return LimitCost, nil
	}
	return "", fmt.Errorf("limit_type: %q is not one of token, action, time, cost", s)
}

// Of returns the used amount and the limit (0: none) of this type.
func (t LimitType) Of(u operations.RunUsage, l operations.RunLimits) (used, limit float64) {
	switch t {
	case LimitActions:
		return float64(u.Actions), float64(l.Actions)
	case LimitSeconds:
		return u.Seconds, l.Seconds
	case LimitCost:
		return u.Cost, l.Cost
	}
	return float64(u.Tokens), float64(l.Tokens)
}

// Unit names the type's unit for prompts.
func (t LimitType) Unit() string {
	switch t {
	case LimitActions:
		return "actions"
	case LimitSeconds:
		return "seconds"
	case LimitCost:
		return "USD"
	}
	return "tokens"
}

// Describe renders the limit for a system prompt, e.g. "10000 tokens".
func (t LimitType) Describe(l operations.RunLimits) string {
	_, limit := t.Of(operations.RunUsage{}, l)
	if limit <= 0 {
		return "no fixed limit on " + t.Unit()
	}
	return num(limit) + " " + t.Unit()
}

func num(f float64) string {
	if f == float64(int64(f)) {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'f', 2, 64)
}

// Threshold is a warning shown once usage reaches At (a fraction of the
// limit).
type Threshold struct {
	At   float64
	Text string
}

// Warnings builds the usual two thresholds: a wrap-up warning at soft and
// a last-call warning at hard; finish names the finishing action
// ("submit your answer", "conclude").
func Warnings(soft, hard float64, finish string) []Threshold {
	return []Threshold{
		{At: soft, Text: fmt.Sprintf("Warning: over %d%% of your budget is spent. Focus on finishing: %s soon.", int(soft*100+0.5), finish)},
		{At: hard, Text: fmt.Sprintf("Warning: you are about to run out of budget (over %d%% spent). Your next action should be to %s.", int(hard*100+0.5), finish)},
	}
}

// UsageNotice renders "Usage: U of M <unit> used (P%)." followed by the
// text of the highest threshold reached. Without a limit it only reports
// the usage.
func UsageNotice(t LimitType, u operations.RunUsage, l operations.RunLimits, th []Threshold) string {
	used, limit := t.Of(u, l)
	if t == LimitSeconds {
		used = float64(int64(used))
	}
	if limit <= 0 {
		return fmt.Sprintf("Usage: %s %s used (no limit set).", num(used), t.Unit())
	}
	frac := used / limit
	s := fmt.Sprintf("Usage: %s of %s %s used (%d%%).", num(used), num(limit), t.Unit(), int(frac*100))
	best := -1
	for i, w := range th {
		if frac >= w.At && (best < 0 || w.At >= th[best].At) {
			best = i
		}
	}
	if best >= 0 {
		s += "\n" + th[best].Text
	}
	return s
}
