package qa

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/flockrun/flock/synthesis/trajectory"
)

var update = flag.Bool("update", false, "rewrite the golden prompts in testdata/")

func input() Input {
	p := eiffel()
	p.Nodes[2].Observation += " " + strings.Repeat("padding ", 120) // 1020 runes once trimmed
	return Input{
		Seed:            trajectory.Seed{ID: "src_0000_1a2b3c4d", Content: "Eiffel Tower"},
		SeedDescription: "a landmark to explore with the search and the city database",
		SynthesisTips:   "Prefer questions whose answer is a number.\nAvoid dates.",
		Examples: []Example{
			{Question: "What is the area in km² of the city where the designer of the Statue of Liberty's frame was born?", Answer: "40.41"},
			{Question: "Which river flows through the birthplace of the architect of the Opéra Garnier?", Answer: "Seine"},
		},
		Path: p,
	}
}

// TestPromptGolden pins the whole prompt of a first attempt and of a retry
// after a failed check; go test -run TestPromptGolden -update rewrites them.
func TestPromptGolden(t *testing.T) {
	_, f := Check(trajectory.QA{Question: "Where was Gustave Eiffel born, Dijon?", Answer: "Dijon"}, eiffel(), DefaultCheckOptions())
	if f == nil {
		t.Fatal("the leaking pair passed")
	}
	tests := []struct {
		name     string
		attempt  int
		feedback string
	}{
		{"first", 1, ""},
		{"retry", 2, f.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			for _, m := range Prompt(input(), tt.attempt, tt.feedback) {
				b.WriteString("=== " + m.Role + "\n" + m.Content + "\n")
			}
			path := filepath.Join("testdata", "prompt_"+tt.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if b.String() != string(want) {
				t.Errorf("prompt differs from %s (run with -update to accept):\n%s", path, b.String())
			}
		})
	}
}

func TestPromptParts(t *testing.T) {
	in := input()
	msgs := Prompt(in, 1, "")
	if len(msgs) != 2 || msgs[0].Role != "system" || msgs[1].Role != "user" {
		t.Fatalf("messages %+v, want system and user", msgs)
	}
	user := msgs[1].Content
	for _, want := range []string{
		"Eiffel Tower",
		"What the seed is: a landmark to explore",
		"Intent: find where he was born",
		"Tool: text2sql:execute",
		`Parameters: {"query":"Gustave Eiffel birthplace"}`,
		"Observation (the call failed; this is an error, not evidence): Error executing doc:read",
		"pad… [220 more characters]", // the 1020-rune observation cut to 800
		"at most 85 words and 500 characters",
		"at least 3 dependent hops",
		"must not appear in the question",
		`no "how" or "why" questions`,
		"copy it exactly as written in an observation",
		"Prefer questions whose answer is a number.\nAvoid dates.",
		"Question: Which river flows through the birthplace of the architect of the Opéra Garnier?\nAnswer: Seine",
		`"reasoning_steps": [{"hop": 1, "fact":`,
	} {
		if !strings.Contains(user, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
	if strings.Contains(user, "Regeneration required") {
		t.Error("a first attempt has a regeneration note")
	}

	// Limits come from Input.Limits.
	in.Limits = CheckOptions{MinHops: 4, MaxQuestionWords: 40}
	user = Prompt(in, 1, "")[1].Content
	for _, want := range []string{"at most 40 words and 500 characters", "at least 4 dependent hops"} {
		if !strings.Contains(user, want) {
			t.Errorf("prompt with limits lacks %q", want)
		}
	}

	// The prompt is a pure function of its input.
	if !reflect.DeepEqual(Prompt(input(), 2, "x"), Prompt(input(), 2, "x")) {
		t.Error("two prompts of the same input differ")
	}
}

func TestPromptFeedback(t *testing.T) {
	const fb = "hops: the answer takes 2 reasoning steps, at least 3 dependent hops are required"
	tests := []struct {
		name     string
		attempt  int
		feedback string
		want     bool
	}{
		{"first attempt ignores feedback", 1, fb, false},
		{"retry with feedback", 3, fb, true},
		{"retry without feedback", 2, "  ", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			user := Prompt(input(), tt.attempt, tt.feedback)[1].Content
			has := strings.Contains(user, "## Regeneration required\nThis is attempt ") && strings.Contains(user, "rejected: "+fb)
			if has != tt.want {
				t.Errorf("regeneration note present %v, want %v:\n%s", has, tt.want, user)
			}
		})
	}
}

func TestPromptEmptyPath(t *testing.T) {
	user := Prompt(Input{Seed: trajectory.Seed{Content: "x"}}, 1, "")[1].Content
	if !strings.Contains(user, "(no steps)") || strings.Contains(user, "## Tips") || strings.Contains(user, "## Examples") {
		t.Errorf("prompt of an empty input:\n%s", user)
	}
}

func TestTemperature(t *testing.T) {
	for _, tt := range []struct {
		attempt int
		want    float64
	}{{0, 0.7}, {1, 0.7}, {2, 0.8}, {3, 0.9}, {4, 1}, {9, 1}} {
		if got := Temperature(tt.attempt); got < tt.want-1e-9 || got > tt.want+1e-9 {
			t.Errorf("Temperature(%d) = %v, want %v", tt.attempt, got, tt.want)
		}
	}
}

func TestClosedBook(t *testing.T) {
	tests := []struct {
		name          string
		reply, answer string
		correct       bool
	}{
		{"exact", "Dijon", "Dijon", true},
		{"case and period", "dijon.", "Dijon", true},
		{"inside a sentence", "I believe it is Dijon, in France.", "Dijon", true},
		{"hedge naming it", "Paris, Lyon or Dijon", "Dijon", true},
		{"thousands separator", "156,920", "156920", true}, // grading.Normalize drops the comma
		{"article", "The Seine", "Seine", true},
		{"unknown", "unknown", "Dijon", false},
		{"wrong", "Paris", "Dijon", false},
		{"whole words only", "The answer is 10", "1", false},
		{"empty reply", "", "Dijon", false},
		{"answer without words", "anything", "...", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClosedBookCorrect(tt.reply, tt.answer); got != tt.correct {
				t.Errorf("ClosedBookCorrect(%q, %q) = %v, want %v", tt.reply, tt.answer, got, tt.correct)
			}
			f := ClosedBook(tt.reply, tt.answer)
			if (f != nil) != tt.correct {
				t.Fatalf("ClosedBook = %v, want a failure %v", f, tt.correct)
			}
			if f != nil && (f.Check != CheckClosedBook || !strings.Contains(f.Reason, "a model that saw only the question answered it")) {
				t.Errorf("failure %v", f)
			}
		})
	}
}

func TestClosedBookPrompt(t *testing.T) {
	msgs := ClosedBookPrompt("  Where was Gustave Eiffel born?\n")
	if len(msgs) != 2 || msgs[0].Role != "system" || msgs[1].Role != "user" || msgs[1].Content != "Where was Gustave Eiffel born?" {
		t.Fatalf("messages %+v", msgs)
	}
	if !strings.Contains(msgs[0].Content, "no tools and no documents") || !strings.Contains(msgs[0].Content, `"unknown"`) {
		t.Errorf("system message %q", msgs[0].Content)
	}
}
