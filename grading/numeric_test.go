package grading

import (
	"errors"
	"testing"
)

var numericMatchTests = []struct {
	name      string
	pred, ref string
	want      float64
	wantErr   error
}{
	{"plain", "42", "42", 1, nil},
	{"sentence", "The answer is 42.", "42", 1, nil},
	{"thousands separator", "1,234", "1234", 1, nil},
	{"thousands in reference", "1234", "1,234", 1, nil},
	{"millions with decimals", "$1,234,567.50", "1234567.5", 1, nil},
	{"scientific", "1.2e3", "1200", 1, nil},
	{"scientific both", "6.02e23", "6.02E+23", 1, nil},
	{"negative", "x = -5", "-5", 1, nil},
	{"unicode minus", "−3", "-3", 1, nil},
	{"sign matters", "-5", "5", 0, nil},
	{"percent as value", "45%", "45", 1, nil},
	{"percent as fraction", "45%", "0.45", 1, nil},
	{"fraction reference percent", "0.45", "45%", 1, nil},
	{"percent word", "about 45 percent", "0.45", 1, nil},
	{"fraction", "3/4", "0.75", 1, nil},
	{"latex boxed fraction", `so \boxed{\frac{3}{4}}`, "0.75", 1, nil},
	{"latex dfrac", `\dfrac{1}{8}`, "0.125", 1, nil},
	{"mixed number", "1 1/2 cups", "1.5", 1, nil},
	{"gsm8k marker", "5 + 67 = 72\n#### 72", "72", 1, nil},
	{"boxed wins over later text", `\boxed{12} and then 13`, "12", 1, nil},
	{"first number after marker", "The answer is 5 (from 2 + 3).", "5", 1, nil},
	{"last marker wins", "answer: 3 is wrong. Final answer: 4", "4", 1, nil},
	{"marker without number", "41 is close, but the answer is forty-two", "41", 0, nil},
	{"answer isn't is not a marker", "The answer isn't 5, it's 7", "7", 1, nil},
	{"date is not a number", "On 12/25/2020 we had 5", "5", 1, nil},
	{"word digits ignored", "H2O has 3 atoms", "3", 1, nil},
	// Default tolerance: 1e-6 absolute or 1% of the reference.
	{"within 1 percent", "100", "101", 1, nil},
	{"outside 1 percent", "100", "102", 0, nil},
	{"close decimal", "3.14159", "3.14", 1, nil},
	{"absolute tolerance at zero", "0.000001", "0", 1, nil},
	{"outside absolute tolerance at zero", "0.00001", "0", 0, nil},
	// The original matched any pair of numbers from both sides.
	{"any pair no longer matches", "Tried 3, 4 and 5; the answer is 6", "5", 0, nil},
	{"last number, not any", "not 5 but 7", "5", 0, nil},
	{"comma split no longer", "1,000", "1", 0, nil},
	{"no number in prediction", "I do not know", "5", 0, nil},
	{"empty prediction", "", "5", 0, nil},
	{"non-numeric reference", "5", "five", 0, ErrNotNumeric},
	{"empty reference", "5", "", 0, ErrNotNumeric},
}

func TestNumericMatch(t *testing.T) {
	for _, tt := range numericMatchTests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NumericMatch(tt.pred, tt.ref)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("NumericMatch(%q, %q) error = %v, want %v", tt.pred, tt.ref, err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("NumericMatch(%q, %q) = %v, want %v", tt.pred, tt.ref, got, tt.want)
			}
		})
	}
}

func TestToleranceStrict(t *testing.T) {
	strict := Tolerance{Abs: 1e-6}
	tests := []struct {
		name      string
		pred, ref string
		want      float64
	}{
		{"equal", "100", "100.0", 1},
		{"off by one", "100", "101", 0},
		{"float noise", "0.30000000000000004", "0.3", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := strict.Match(tt.pred, tt.ref)
			if err != nil || got != tt.want {
				t.Fatalf("Match(%q, %q) = %v, %v; want %v", tt.pred, tt.ref, got, err, tt.want)
			}
		})
	}
}

type wantNumber struct {
	v       float64
	percent bool
}

var extractTests = []struct {
	name string
	in   string
	want []wantNumber
}{
	{"integer", "42", []wantNumber{{42, false}}},
	{"thousands and decimals", "1,234,567.89", []wantNumber{{1234567.89, false}}},
	{"short group is a list", "1,23", []wantNumber{{1, false}, {23, false}}},
	{"long group is a list", "1,2345", []wantNumber{{1, false}, {2345, false}}},
	{"range", "3-5", []wantNumber{{3, false}, {5, false}}},
	{"negative", "x = -5", []wantNumber{{-5, false}}},
	{"plus", "+7", []wantNumber{{7, false}}},
	{"negative leading dot", "-.5", []wantNumber{{-0.5, false}}},
	{"leading dot", ".5", []wantNumber{{0.5, false}}},
	{"trailing dot", "5.", []wantNumber{{5, false}}},
	{"two dots", "1.2.3", []wantNumber{{1.2, false}}},
	{"exponent", "1.5E-3", []wantNumber{{0.0015, false}}},
	{"e then letters", "5eggs", []wantNumber{{5, false}}},
	{"glued to letters", "H2O and CO2", nil},
	{"unit after", "mp3 at 320kbps", []wantNumber{{320, false}}},
	{"currency", "$5", []wantNumber{{5, false}}},
	{"date", "12/25/2020", nil},
	{"zero denominator", "3/0", []wantNumber{{3, false}, {0, false}}},
	{"fraction", "-3/4", []wantNumber{{-0.75, false}}},
	{"mixed number needs proper fraction", "2 5/4", []wantNumber{{2, false}, {1.25, false}}},
	{"percent with space", "45 %", []wantNumber{{45, true}}},
	{"percentage is not percent", "5 percentages", []wantNumber{{5, false}}},
	{"percent word case", "5 Percent", []wantNumber{{5, true}}},
	{"overflow skipped", "1e400 and 2", []wantNumber{{2, false}}},
	{"no numbers", "none here", nil},
}

func TestExtractNumbers(t *testing.T) {
	for _, tt := range extractTests {
		t.Run(tt.name, func(t *testing.T) {
			got := ExtractNumbers(tt.in)
			if len(got) != len(tt.want) {
				t.Fatalf("ExtractNumbers(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			for i, n := range got {
				if !near(n.Value, tt.want[i].v) || n.Percent != tt.want[i].percent {
					t.Fatalf("ExtractNumbers(%q)[%d] = %+v, want %+v", tt.in, i, n, tt.want[i])
				}
			}
		})
	}
}

func TestMainNumber(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   float64
		wantOK bool
	}{
		{"last number", "first 1, then 2, finally 3", 3, true},
		{"answer colon", "Answer: 7 (checked with 2 and 5)", 7, true},
		{"answer equals", "answer = -2.5", -2.5, true},
		{"final answer", "Final Answer\n\n12", 12, true},
		{"boxed nested", `\boxed{\text{about } 9}`, 9, true},
		{"empty box", `10 then \boxed{}`, 0, false},
		{"marker inside a word", "reanswer: 4; so 5", 5, true},
		{"nothing", "no digits", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := MainNumber(tt.in)
			if ok != tt.wantOK || (ok && !near(got.Value, tt.want)) {
				t.Fatalf("MainNumber(%q) = %+v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
