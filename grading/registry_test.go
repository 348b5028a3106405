package grading

import (
	"errors"
	"slices"
	"testing"
)

func TestNames(t *testing.T) {
	want := []string{"choice", "contains_answer", "exact_match", "f1", "llm_judgement", "numeric_match", "similarity"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %q, want %q", got, want)
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		name    string
		metric  string
		wantErr error
	}{
		{"canonical", "exact_match", nil},
		{"alias", "f1_score", nil},
		{"judge", "llm_judgement", ErrNeedsJudge},
		{"unknown", "semantic", ErrUnknownMetric},
		{"empty", "", ErrUnknownMetric},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Lookup(tt.metric)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (f != nil) {
				t.Fatalf("Lookup(%q) = %v, %v; want error %v", tt.metric, f != nil, err, tt.wantErr)
			}
		})
	}
}

func TestScore(t *testing.T) {
	tests := []struct {
		name    string
		metric  string
		pred    string
		refs    []string
		want    float64
		wantErr error
	}{
		{"best reference", "exact_match", "NYC", []string{"New York City", "NYC"}, 1, nil},
		{"max f1", "f1", "paris", []string{"london", "paris france"}, 2.0 / 3, nil},
		{"alias", "f1_score", "paris", []string{"paris"}, 1, nil},
		{"all zero", "contains_answer", "rome", []string{"paris", "london"}, 0, nil},
		{"non-numeric reference skipped", "numeric_match", "5", []string{"five", "5"}, 1, nil},
		{"no numeric reference", "numeric_match", "5", []string{"five"}, 0, ErrNotNumeric},
		{"no references", "exact_match", "5", nil, 0, ErrNoReference},
		{"judge metric", "llm_judgement", "5", []string{"5"}, 0, ErrNeedsJudge},
		{"unknown metric", "bleu", "5", []string{"5"}, 0, ErrUnknownMetric},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Score(tt.metric, tt.pred, tt.refs)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if !near(got, tt.want) {
				t.Fatalf("Score = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRegistryRange checks every registered metric scores in [0, 1] and
// scores an answer against itself as 1 on the tables' inputs.
func TestRegistryRange(t *testing.T) {
	var inputs []string
	for _, tt := range exactMatchTests {
		inputs = append(inputs, tt.pred, tt.ref)
	}
	for _, tt := range numericMatchTests {
		inputs = append(inputs, tt.pred, tt.ref)
	}
	for _, name := range Names() {
		f, err := Lookup(name)
		if errors.Is(err, ErrNeedsJudge) {
			continue
		}
		for _, p := range inputs {
			for _, r := range inputs {
				s, err := f(p, r)
				if err != nil {
					continue
				}
				if s < 0 || s > 1 {
					t.Fatalf("%s(%q, %q) = %v, outside [0, 1]", name, p, r, s)
				}
			}
			if s, err := f(p, p); err == nil && s != 1 {
				t.Fatalf("%s(%q, itself) = %v, want 1", name, p, s)
			}
		}
	}
}
