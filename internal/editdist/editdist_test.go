package editdist

import "testing"

func TestDistance(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want int
	}{
		{name: "equal", a: "limits", b: "limits", want: 0},
		{name: "empty", a: "", b: "abc", want: 3},
		{name: "swap", a: "limts", b: "limits", want: 1},
		{name: "kitten", a: "kitten", b: "sitting", want: 3},
		{name: "runes", a: "café", b: "cafe", want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Distance([]rune(tt.a), []rune(tt.b)); got != tt.want {
				t.Fatalf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
			if got := Distance([]rune(tt.b), []rune(tt.a)); got != tt.want {
				t.Fatalf("not symmetric: %d", got)
			}
		})
	}
	if got := Distance([]byte("café"), []byte("cafe")); got != 2 {
		t.Fatalf("bytes: %d, want 2", got)
	}
}

func TestClosest(t *testing.T) {
	commands := []string{"db", "help", "rollout", "run", "runs", "sandbox", "serve", "synthesize", "version", "workflows"}
	tests := []struct {
		name, word string
		candidates []string
		want       string
	}{
		{name: "dropped letter", word: "rn", candidates: commands, want: "run"},
		{name: "swapped letters", word: "sever", candidates: commands, want: "serve"},
		{name: "case", word: "RUNS", candidates: commands, want: "runs"},
		{name: "prefix", word: "synth", candidates: commands, want: "synthesize"},
		{name: "longer", word: "workflowsx", candidates: commands, want: "workflows"},
		{name: "nothing near", word: "frobnicate", candidates: commands, want: ""},
		{name: "too short to guess", word: "x", candidates: commands, want: ""},
		{name: "itself is no suggestion", word: "run", candidates: []string{"run"}, want: ""},
		{name: "no candidates", word: "run", want: ""},
		{name: "workflow", word: "scirpt", candidates: []string{"external", "modular", "react", "rollout", "script", "triframe"}, want: "script"},
		{name: "ties go to the first", word: "rux", candidates: []string{"run", "rum"}, want: "run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Closest(tt.word, tt.candidates); got != tt.want {
				t.Fatalf("Closest(%q) = %q, want %q", tt.word, got, tt.want)
			}
		})
	}
}
