package qa

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/flockrun/flock/synthesis/trajectory"
)

// eiffel is a path of three calls and one failed call, the fixture of the
// check tests.
func eiffel() trajectory.Path {
	return trajectory.Path{
		ID:       "src_0000_1a2b3c4d_traj_0",
		SourceID: "src_0000_1a2b3c4d",
		Nodes: []trajectory.Node{
			{ID: "0.0", Depth: 1, Intent: "find who built the tower", Tool: "rag:search", Params: []byte(`{"query":"Eiffel Tower builder"}`),
				Observation: "The Eiffel Tower was designed by the engineering company of Gustave Eiffel and completed in 1889."},
			{ID: "0.0.0", Depth: 2, Intent: "find where he was born", Tool: "rag:search", Params: []byte(`{"query":"Gustave Eiffel birthplace"}`),
				Observation: "Gustave  Eiffel was born in Dijon, France, on 15 December 1832."},
			{ID: "0.0.0.0", Depth: 3, Intent: "look up the city", Tool: "text2sql:execute", Params: []byte(`{"sql":"SELECT * FROM cities WHERE city='Dijon'"}`),
				Observation: `[{"city": "Dijon", "population": 156920, "area_km2": 40.41}]`},
			{ID: "0.0.0.0.0", Depth: 4, Tool: "doc:read", Failed: true,
				Observation: "Error executing doc:read: Dijon guide not found"},
		},
	}
}

func goodQA() trajectory.QA {
	return trajectory.QA{
		Question: "What is the population of the birthplace of the engineer whose company designed the tower completed in 1889 in Paris?",
		Answer:   "156920",
		ReasoningSteps: []trajectory.Hop{
			{Hop: 1, Fact: "Gustave Eiffel's company designed the tower", Evidence: "designed by the engineering company of Gustave Eiffel", Output: "Gustave Eiffel"},
			{Hop: 2, Fact: "Eiffel was born in Dijon", Evidence: "Gustave Eiffel was born in Dijon", Output: "Dijon"},
			{Hop: 3, Fact: "Dijon has 156920 inhabitants", Evidence: `"population": 156920`, Output: "156920"},
		},
	}
}

func TestCheck(t *testing.T) {
	all := []string{CheckNonEmpty, CheckNoLeakage, CheckVerbosity, CheckHops, CheckGrounded}
	on := DefaultCheckOptions()
	tests := []struct {
		name   string
		edit   func(q *trajectory.QA)
		opts   CheckOptions
		check  string // failing check; "" when all pass
		reason string // part of the reason
	}{
		{"all pass", func(q *trajectory.QA) {}, on, "", ""},
		{"grounded off", func(q *trajectory.QA) { q.Answer = "Lyon" }, CheckOptions{}, "", ""},

		{"empty question", func(q *trajectory.QA) { q.Question = " \n" }, on, CheckNonEmpty, "the question is empty"},
		{"question without words", func(q *trajectory.QA) { q.Question = "???" }, on, CheckNonEmpty, `the question "???" has no words`},
		{"empty answer", func(q *trajectory.QA) { q.Answer = "" }, on, CheckNonEmpty, "the answer is empty"},
		{"answer without words", func(q *trajectory.QA) { q.Answer = "—" }, on, CheckNonEmpty, `the answer "—" has no words`},

		{"leak", func(q *trajectory.QA) {
			q.Question = "What is the population of Dijon's metropolitan city?"
			q.Answer = "Dijon"
		}, on, CheckNoLeakage, `the answer "Dijon" appears in the question`},
		{"leak ignoring case, punctuation and article", func(q *trajectory.QA) {
			q.Question = "Which engineer's company designed the EIFFEL-TOWER?"
			q.Answer = "The Eiffel Tower"
		}, on, CheckNoLeakage, `the answer "The Eiffel Tower" appears in the question`},
		// Whole words: the answer "1" is not leaked by "1889"; the pair then
		// fails grounding instead, as "1" is in no observation.
		{"no leak inside a number", func(q *trajectory.QA) { q.Answer = "1" }, on, CheckGrounded, `the answer "1" does not occur in any observation`},

		{"question too long", func(q *trajectory.QA) { q.Question = strings.Repeat("x", 499) + "é?" }, on, CheckVerbosity, "the question is 501 characters long, over the limit of 500"},
		{"question at the char limit", func(q *trajectory.QA) { q.Question = strings.Repeat("x", 499) + "?" }, CheckOptions{}, "", ""},
		{"too many words", func(q *trajectory.QA) { q.Question = strings.Repeat("word ", 86) }, on, CheckVerbosity, "the question has 86 words, over the limit of 85"},
		{"words at the limit", func(q *trajectory.QA) { q.Question = strings.Repeat("word ", 85) }, CheckOptions{}, "", ""},
		{"own word limit", func(q *trajectory.QA) {}, CheckOptions{MaxQuestionWords: 10}, CheckVerbosity, "the question has 20 words, over the limit of 10"},

		{"two hops", func(q *trajectory.QA) { q.ReasoningSteps = q.ReasoningSteps[:2] }, on, CheckHops, "the answer takes 2 reasoning steps, at least 3 dependent hops are required"},
		{"no hops", func(q *trajectory.QA) { q.ReasoningSteps = nil }, on, CheckHops, "takes 0 reasoning steps"},
		{"own hop minimum", func(q *trajectory.QA) {}, CheckOptions{MinHops: 4}, CheckHops, "takes 3 reasoning steps, at least 4"},

		// Numbers are compared as written: the observation says 156920.
		{"answer written differently", func(q *trajectory.QA) { q.Answer = "156,920" }, on, CheckGrounded, `the answer "156,920" does not occur in any observation`},
		{"answer part of a decimal", func(q *trajectory.QA) { q.Answer = "40" }, on, CheckGrounded, `the answer "40" does not occur`},
		{"answer only in a failed call", func(q *trajectory.QA) { q.Answer = "Dijon guide" }, on, CheckGrounded, `the answer "Dijon guide" does not occur`},
		{"answer across two observations", func(q *trajectory.QA) { q.Answer = "1889 Gustave" }, on, CheckGrounded, `does not occur`},
		{"paraphrased evidence", func(q *trajectory.QA) { q.ReasoningSteps[1].Evidence = "Eiffel came from Dijon" },
			on, CheckGrounded, `the evidence of reasoning step 2, "Eiffel came from Dijon", does not occur in any observation`},
		{"missing evidence", func(q *trajectory.QA) { q.ReasoningSteps[2].Evidence = " ... " }, on, CheckGrounded, "reasoning step 3 has no evidence"},
		{"ellipsis with a made-up part", func(q *trajectory.QA) { q.ReasoningSteps[1].Evidence = "Gustave Eiffel was born … in Lyon" },
			on, CheckGrounded, "the evidence of reasoning step 2"},

		// Groundedness normalises case, whitespace, punctuation and markup.
		{"grounded modulo case and punctuation", func(q *trajectory.QA) {
			q.Answer = "DIJON!"
			q.Question = "In which city was the engineer whose company designed the tower completed in 1889 born?"
			q.ReasoningSteps[1].Evidence = "gustave eiffel, was born in dijon"
		}, on, "", ""},
		{"grounded decimal", func(q *trajectory.QA) { q.Answer = "40.41" }, on, "", ""},
		{"grounded with an article", func(q *trajectory.QA) { q.Answer = "the Dijon" }, on, "", ""},
		{"grounded ellipsis", func(q *trajectory.QA) {
			q.ReasoningSteps[1].Evidence = "Gustave Eiffel was born ... on 15 December 1832"
		}, on, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := goodQA()
			q.ReasoningSteps = slices.Clone(q.ReasoningSteps)
			tt.edit(&q)
			passed, f := Check(q, eiffel(), tt.opts)
			if tt.check == "" {
				if f != nil {
					t.Fatalf("failed %v", f)
				}
				want := all
				if !tt.opts.Grounded {
					want = all[:4]
				}
				if !slices.Equal(passed, want) {
					t.Errorf("passed %v, want %v", passed, want)
				}
				return
			}
			if f == nil {
				t.Fatalf("passed %v, want %s to fail", passed, tt.check)
			}
			if f.Check != tt.check || !strings.Contains(f.Reason, tt.reason) {
				t.Errorf("failure %s: %s, want %s naming %q", f.Check, f.Reason, tt.check, tt.reason)
			}
			if want := all[:slices.Index(all, tt.check)]; !slices.Equal(passed, want) {
				t.Errorf("passed %v, want %v (the checks before %s)", passed, want, tt.check)
			}
			var err error = f
			if !errors.Is(err, ErrCheckFailed) || err.Error() != f.Check+": "+f.Reason {
				t.Errorf("error %q does not match ErrCheckFailed or is not check: reason", err)
			}
		})
	}
}

func TestCheckGroundedWithoutObservations(t *testing.T) {
	p := eiffel()
	p.Nodes = p.Nodes[3:] // the failed call only
	_, f := Check(goodQA(), p, DefaultCheckOptions())
	if f == nil || f.Check != CheckGrounded || !strings.Contains(f.Reason, "no observation") {
		t.Fatalf("failure %v, want grounded naming the missing observations", f)
	}
}

func TestWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Hello,  World!", []string{"hello", "world"}},
		{`{"population": 156920}`, []string{"population", "156920"}},
		{"1,234 and 3.5 and 1.2.3.", []string{"1", "234", "and", "3.5", "and", "1.2.3"}},
		{"-5 (−7) 3-5", []string{"-5", "-7", "3", "5"}},
		{"name | city\nEiffel | Paris", []string{"name", "city", "eiffel", "paris"}},
		{"Zürich's", []string{"zürich", "s"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := Words(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Words(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzWords: normalising twice changes nothing, and no word is empty or
// holds a space, so phrase search on word boundaries is sound.
func FuzzWords(f *testing.F) {
	for _, s := range []string{"Hello,  World!", "1,234 and 3.5", "-5 (−7) 3-5", `{"a": -1.5}`, "..", "-", "x.-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ws := Words(s)
		for _, w := range ws {
			if w == "" || strings.ContainsFunc(w, unicode.IsSpace) {
				t.Fatalf("Words(%q) has the word %q", s, w)
			}
		}
		if again := Words(normalize(s)); !slices.Equal(again, ws) {
			t.Fatalf("Words(%q) = %q but words of its normal form = %q", s, ws, again)
		}
	})
}
