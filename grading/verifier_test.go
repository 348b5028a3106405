package grading

import (
	"errors"
	"maps"
	"testing"
)

func TestParseVerifierOutput(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want VerifierResult
	}{
		{"full", `{"reward": 1, "is_correct": true, "signals": {"tests_passed": 0.8}}`,
			VerifierResult{1, true, map[string]float64{"tests_passed": 0.8}}},
		{"partial reward is incorrect", `{"reward": 0.5}`, VerifierResult{0.5, false, nil}},
		{"full reward is correct", `{"reward": 1}`, VerifierResult{1, true, nil}},
		{"explicit correctness wins", `{"reward": 0.2, "is_correct": true}`, VerifierResult{0.2, true, nil}},
		{"rewards map averaged", `{"rewards": {"a": 1, "b": 0}}`, VerifierResult{0.5, false, map[string]float64{"a": 1, "b": 0}}},
		{"rewards with signals", `{"rewards": {"a": 1}, "signals": {"s": 2}}`, VerifierResult{1, true, map[string]float64{"s": 2}}},
		{"bare number", `0.75`, VerifierResult{0.75, false, nil}},
		{"bare one", "1\n", VerifierResult{1, true, nil}},
		{"negative reward kept", `{"reward": -1}`, VerifierResult{-1, false, nil}},
		{"whitespace", "  {\"reward\": 1}\n", VerifierResult{1, true, nil}},
		{"unknown keys ignored", `{"reward": 0, "metadata": {"x": [1]}}`, VerifierResult{0, false, nil}},
		{"empty signals", `{"reward": 0, "signals": {}}`, VerifierResult{0, false, map[string]float64{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseVerifierOutput([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !near(got.Reward, tt.want.Reward) || got.IsCorrect != tt.want.IsCorrect || !maps.Equal(got.Signals, tt.want.Signals) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

var badVerifierOutputs = []struct{ name, in string }{
	{"empty", ""},
	{"blank", "  \n"},
	{"not JSON", "reward: 1"},
	{"string reward", `{"reward": "1"}`},
	{"null reward", `{"reward": null}`},
	{"no reward", `{"is_correct": true}`},
	{"empty object", `{}`},
	{"two objects", `{"reward": 1} {"reward": 2}`},
	{"stray brace", `{"reward": 1}}`},
	{"string is_correct", `{"reward": 1, "is_correct": "yes"}`},
	{"null is_correct", `{"reward": 1, "is_correct": null}`},
	{"string signal", `{"reward": 1, "signals": {"a": "x"}}`},
	{"array signals", `{"reward": 1, "signals": [1]}`},
	{"empty rewards", `{"rewards": {}}`},
	{"array", `[1]`},
	{"bool", `true`},
	{"quoted number", `"0.5"`},
	{"overflow", `{"reward": 1e999}`},
}

func TestParseVerifierOutputErrors(t *testing.T) {
	for _, tt := range badVerifierOutputs {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseVerifierOutput([]byte(tt.in))
			if !errors.Is(err, ErrInvalidVerifierOutput) {
				t.Fatalf("ParseVerifierOutput(%q) = %+v, %v; want ErrInvalidVerifierOutput", tt.in, got, err)
			}
		})
	}
}
