package react

import "testing"

func TestExtractAnswer(t *testing.T) {
	tests := []struct {
		name, text, want, source string
	}{
		{name: "empty", text: "  \n", want: "", source: SourceNone},
		{name: "answer tag wins", text: "Final answer: 7\n<answer>42</answer>", want: "42", source: SourceAnswerTag},
		{name: "last answer tag", text: "<answer>1</answer> then <answer> 2 </answer>", want: "2", source: SourceAnswerTag},
		{name: "boxed", text: `So we get \boxed{\frac{1}{2}}.`, want: `\frac{1}{2}`, source: SourceBoxed},
		{name: "last boxed", text: `\boxed{1} no, \boxed{2}`, want: "2", source: SourceBoxed},
		{name: "unbalanced boxed falls back", text: `\boxed{3} and \boxed{4`, want: "3", source: SourceBoxed},
		{name: "final answer colon", text: "Work...\nFinal answer: 42.", want: "42", source: SourceLabel},
		{name: "bold label", text: "**Final Answer:** Paris", want: "Paris", source: SourceLabel},
		{name: "the answer is", text: "I think the answer is 1,234.", want: "1,234", source: SourceLabel},
		{name: "label alone on its line", text: "Final answer:\n\n  Berlin  \nThanks", want: "Berlin", source: SourceLabel},
		{name: "last label wins", text: "Answer: 3\nWait, recheck.\nAnswer: 4", want: "4", source: SourceLabel},
		{name: "no so misfire", text: "It is also, clearly, a prime.\n17", want: "17", source: SourceLastLine},
		{name: "no therefore rule", text: "Therefore the capital is Rome.\nRome", want: "Rome", source: SourceLastLine},
		{name: "answer inside word is no label", text: "Reanswer: no\nswordfish", want: "swordfish", source: SourceLastLine},
		{name: "answers is no label", text: "The answers are below\n5", want: "5", source: SourceLastLine},
		{name: "isn't is no label", text: "The answer isn't obvious\n9", want: "9", source: SourceLastLine},
		{name: "last line quoted", text: "Thinking\n`ls -la`", want: "ls -la", source: SourceLastLine},
		{name: "dollars and period", text: "Answer: $x = 3$.", want: "x = 3", source: SourceLabel},
		{name: "ellipsis kept", text: "and so on...", want: "and so on...", source: SourceLastLine},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, src := ExtractAnswer(tt.text)
			if got != tt.want || src != tt.source {
				t.Fatalf("ExtractAnswer(%q) = %q (%s), want %q (%s)", tt.text, got, src, tt.want, tt.source)
			}
		})
	}
}

func FuzzExtractAnswer(f *testing.F) {
	for _, s := range []string{"Final answer: 4", `\boxed{{}`, "<answer></answer>", "answer\n", "**"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, src := ExtractAnswer(s)
		if src == "" {
			t.Fatal("empty source")
		}
		if b, _ := ExtractAnswer(s); b != a {
			t.Fatal("not deterministic")
		}
	})
}
