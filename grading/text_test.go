package grading

import "testing"

type pairTest struct {
	name      string
	pred, ref string
	want      float64
}

func runPairTests(t *testing.T, f func(p, r string) float64, tests []pairTest) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := f(tt.pred, tt.ref); !near(got, tt.want) {
				t.Fatalf("(%q, %q) = %v, want %v", tt.pred, tt.ref, got, tt.want)
			}
		})
	}
}

var exactMatchTests = []pairTest{
	{"identical", "Paris", "Paris", 1},
	{"case and punctuation", "paris.", "Paris", 1},
	// The original kept articles and internal punctuation, so these failed.
	{"articles ignored", "The Eiffel Tower.", "eiffel tower", 1},
	{"internal punctuation ignored", "USA", "U.S.A.", 1},
	{"different", "Paris", "London", 0},
	{"extra word", "Paris France", "Paris", 0},
	{"both empty", "", "", 1},
	{"empty prediction", "", "Paris", 0},
	{"decimal kept apart", "3.5", "35", 0},
	{"sign kept apart", "-5", "5", 0},
	{"thousands separator", "1,000", "1000", 1},
}

func TestExactMatch(t *testing.T) { runPairTests(t, ExactMatch, exactMatchTests) }

var f1Tests = []pairTest{
	// pred {cat sat on mat}, ref {cat on mat}: P = 3/4, R = 1, F1 = 6/7.
	{"partial overlap", "the cat sat on the mat", "a cat on a mat", 6.0 / 7},
	// P = 1, R = 1/2.
	{"subset", "Paris", "Paris, France", 2.0 / 3},
	// Multiset overlap 1: P = 1/3, R = 1, F1 = 1/2.
	{"repeated tokens count once", "yes yes yes", "yes", 0.5},
	{"identical after normalisation", "Hello, world!", "hello world", 1},
	{"no overlap", "blue", "red", 0},
	{"both empty", "", "", 1},
	{"both only articles", "the", "a", 1},
	{"empty prediction", "", "red", 0},
	{"empty reference", "red", "", 0},
	// pred {answer is 1.5 m}, ref {1.5}: P = 1/4, R = 1, F1 = 2/5.
	{"number token", "The answer is 1.5 m", "1.5", 0.4},
}

func TestF1(t *testing.T) { runPairTests(t, F1, f1Tests) }

var containsTests = []pairTest{
	{"phrase inside", "I think it is New York City.", "new york", 1},
	{"word inside", "The capital is Paris, France", "Paris", 1},
	{"normalised number", "answer: 1,000 people", "1000", 1},
	{"at the end", "so it is 42", "42", 1},
	{"whole prediction", "Paris", "the Paris", 1},
	// The original's substring misfires.
	{"1 is not in 10", "The answer is 10", "1", 0},
	{"1 is not in 1.5", "It is 1.5", "1", 0},
	{"art is not in party", "the party", "art", 0},
	{"phrase must be whole words", "a new yorker", "new york", 0},
	{"empty reference is not everywhere", "anything", "", 0},
	{"punctuation-only reference", "anything", "...", 0},
	{"both empty", "", "", 1},
	{"empty prediction", "", "Paris", 0},
	{"reference longer than prediction", "york", "new york", 0},
}

func TestContainsAnswer(t *testing.T) { runPairTests(t, ContainsAnswer, containsTests) }

var similarityTests = []pairTest{
	{"identical", "Paris", "paris", 1},
	{"normalised first", "The Cat", "cat", 1},
	// Levenshtein 3 over max length 7.
	{"kitten sitting", "kitten", "sitting", 4.0 / 7},
	// The original used character-set Jaccard, which scores these 1.
	{"anagram abc", "abc", "cba", 1.0 / 3},
	{"anagram listen", "listen", "silent", 1.0 / 3},
	{"plural", "Eiffel Tower", "Eiffel Towers", 1 - 1.0/13},
	{"counted in runes", "café", "cafe", 0.75},
	{"nothing in common", "abc", "xyz", 0},
	{"both empty", "", "", 1},
	{"one empty", "abc", "", 0},
	{"one substitution", "cat", "cap", 2.0 / 3},
	{"synonyms are not similar", "automobile", "car", 0},
	// Levenshtein 11 over 14: wrapping the answer costs.
	{"wrapped answer", "It is New York.", "New York City", 3.0 / 14},
}

func TestSimilarity(t *testing.T) { runPairTests(t, Similarity, similarityTests) }
