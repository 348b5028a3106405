package grading

import (
	"slices"
	"testing"
)

var normalizeTests = []struct {
	name, in, want string
}{
	{"articles", "The Eiffel Tower", "eiffel tower"},
	{"all articles", "An apple a day, the doctor", "apple day doctor"},
	{"article only as a word", "Theater and Anarchy", "theater and anarchy"},
	{"only articles", "a an the", ""},
	{"empty", "", ""},
	{"internal punctuation", "U.S.A.", "usa"},
	{"whitespace", "  Hello,\t  World!\n ", "hello world"},
	{"hyphenated word", "state-of-the-art", "stateoftheart"},
	{"unicode punctuation", "“Quoted” — text…", "quoted text"},
	{"ascii symbols", "$100 + 5^2 = 125", "100 52 125"},
	{"non-ascii letters", "Café Ünïcode", "café ünïcode"},
	{"thousands separator", "1,234", "1234"},
	{"decimal point kept", "3.5", "3.5"},
	{"sentence end after decimal", "It is 3.5.", "it is 3.5"},
	{"version number", "v1.2.3", "v1.2.3"},
	{"minus kept", "-5", "-5"},
	{"minus in parentheses", "(-5)", "-5"},
	{"unicode minus", "−5", "-5"},
	{"range dash dropped", "3-5", "35"},
	{"glued minus dropped", "x=-5", "x5"},
	{"lone dash dropped", "a - 5", "5"},
	{"article before a number", "a -5", "-5"},
}

func TestNormalize(t *testing.T) {
	for _, tt := range normalizeTests {
		t.Run(tt.name, func(t *testing.T) {
			got := Normalize(tt.in)
			if got != tt.want {
				t.Fatalf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if again := Normalize(got); again != got {
				t.Fatalf("not idempotent: %q -> %q", got, again)
			}
		})
	}
}

func TestTokens(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"words", "The cat, the hat.", []string{"cat", "hat"}},
		{"nothing", " the . ", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Tokens(tt.in); !slices.Equal(got, tt.want) {
				t.Fatalf("Tokens(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
