package grading

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
)

// VerifierResult is what a per-task verifier reports about one rollout.
type VerifierResult struct {
	Reward    float64 `json:"reward"`
	IsCorrect bool    `json:"is_correct"`
	// Signals are named extra scores, for example per-test pass rates.
	Signals map[string]float64 `json:"signals,omitempty"`
}

// ParseVerifierOutput parses the JSON a verifier wrote. Accepted forms:
//   - an object {"reward": x, "is_correct": b, "signals": {name: x}}, where
//     "reward" is a number and required, "is_correct" is optional and
//     defaults to reward >= 1, "signals" is optional and must map names to
//     numbers, and other keys are ignored;
//   - an object with "rewards": {name: x} instead of "reward" (rLLM's form):
//     the reward is the mean of those numbers, which also become signals
//     unless "signals" is given;
//   - a bare number, taken as the reward with is_correct = reward >= 1.
//
// Anything else — empty output, invalid JSON, trailing data, a missing or
// non-numeric reward, null values — is an error wrapping
// ErrInvalidVerifierOutput that says what was wrong. The reward is not
// clamped to [0, 1].
func ParseVerifierOutput(data []byte) (VerifierResult, error) {
	bad := func(format string, args ...any) (VerifierResult, error) {
		return VerifierResult{}, fmt.Errorf("%w: %s", ErrInvalidVerifierOutput, fmt.Sprintf(format, args...))
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return bad("empty output")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return bad("not JSON: %v", err)
	}
	if int(dec.InputOffset()) != len(data) {
		return bad("trailing data after the JSON value")
	}
	switch raw[0] {
	case '{':
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		r, err := number(raw)
		if err != nil {
			return bad("reward: %v", err)
		}
		return VerifierResult{Reward: r, IsCorrect: r >= 1}, nil
	default:
		return bad("want a JSON object or number, got %s", truncate(raw, 40))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return bad("%v", err)
	}
	var res VerifierResult
	if rw, ok := obj["reward"]; ok {
		r, err := number(rw)
		if err != nil {
			return bad("reward: %v", err)
		}
		res.Reward = r
	} else if rws, ok := obj["rewards"]; ok {
		m, err := numberMap(rws)
		if err != nil {
			return bad("rewards: %v", err)
		}
		if len(m) == 0 {
			return bad("rewards is empty")
		}
		names := make([]string, 0, len(m))
		for name := range m {
			names = append(names, name)
		}
		slices.Sort(names) // sum in a fixed order
		sum := 0.0
		for _, name := range names {
			sum += m[name]
		}
		res.Reward = sum / float64(len(m))
		res.Signals = m
	} else {
		return bad("no \"reward\" field")
	}
	res.IsCorrect = res.Reward >= 1
	if ic, ok := obj["is_correct"]; ok {
		if err := json.Unmarshal(ic, &res.IsCorrect); err != nil || string(ic) == "null" {
			return bad("is_correct is %s, not a boolean", truncate(ic, 40))
		}
	}
	if sg, ok := obj["signals"]; ok {
		m, err := numberMap(sg)
		if err != nil {
			return bad("signals: %v", err)
		}
		res.Signals = m
	}
	return res, nil
}

// number decodes a finite JSON number.
func number(raw json.RawMessage) (float64, error) {
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || string(bytes.TrimSpace(raw)) == "null" {
		return 0, fmt.Errorf("%s is not a number", truncate(raw, 40))
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("%s is not finite", truncate(raw, 40))
	}
	return f, nil
}

// numberMap decodes a JSON object of finite numbers.
func numberMap(raw json.RawMessage) (map[string]float64, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("%s is not an object", truncate(raw, 40))
	}
	names := make([]string, 0, len(obj))
	for name := range obj {
		names = append(names, name)
	}
	slices.Sort(names) // report the first bad name deterministically
	m := make(map[string]float64, len(obj))
	for _, name := range names {
		f, err := number(obj[name])
		if err != nil {
			return nil, fmt.Errorf("%q: %w", name, err)
		}
		m[name] = f
	}
	return m, nil
}
