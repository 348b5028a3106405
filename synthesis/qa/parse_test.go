package qa

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/flockrun/flock/synthesis/trajectory"
)

const pairJSON = `{"question": "Which city?", "answer": "Dijon", "reasoning_steps": [
  {"hop": 1, "fact": "f1", "evidence": "e1", "output": "o1"},
  {"hop": 2, "fact": "f2", "evidence": "e2", "output": "o2"},
  {"hop": 3, "fact": "f3", "evidence": "e3 {with braces}", "output": "Dijon"}]}`

func pair() trajectory.QA {
	return trajectory.QA{Question: "Which city?", Answer: "Dijon", ReasoningSteps: []trajectory.Hop{
		{Hop: 1, Fact: "f1", Evidence: "e1", Output: "o1"},
		{Hop: 2, Fact: "f2", Evidence: "e2", Output: "o2"},
		{Hop: 3, Fact: "f3", Evidence: "e3 {with braces}", Output: "Dijon"},
	}}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		want  trajectory.QA
	}{
		{"bare", pairJSON, pair()},
		{"fenced", "```json\n" + pairJSON + "\n```", pair()},
		{"chatty", "Sure! Here is the pair you asked for:\n\n" + pairJSON + "\n\nLet me know if you need another {one}.", pair()},
		{"prose braces first", "I will use the format {question, answer}: " + pairJSON, pair()},
		{"wrapped", `{"result": ` + pairJSON + `}`, pair()},
		{"braces and quotes in strings", `{"question": "What does \"{}\" mean in {JSON}?", "answer": "an empty object"}`,
			trajectory.QA{Question: `What does "{}" mean in {JSON}?`, Answer: "an empty object"}},
		{"numeric answer", `{"question": "How many?", "answer": 156920, "reasoning_steps": null}`,
			trajectory.QA{Question: "How many?", Answer: "156920"}},
		{"hop as string, hop missing", `{"question": "q", "answer": "a", "reasoning_steps": [{"hop": " 2 ", "fact": "f"}, {"evidence": "e"}, {"hop": null, "output": 7}]}`,
			trajectory.QA{Question: "q", Answer: "a", ReasoningSteps: []trajectory.Hop{{Hop: 2, Fact: "f"}, {Hop: 2, Evidence: "e"}, {Hop: 3, Output: "7"}}}},
		{"empty steps", `{"question": "q", "answer": "a", "reasoning_steps": []}`,
			trajectory.QA{Question: "q", Answer: "a", ReasoningSteps: []trajectory.Hop{}}},
		{"extra keys", `{"question": "q", "answer": "a", "difficulty": "hard", "reasoning_steps": [{"hop": 1, "note": {"x": 1}}]}`,
			trajectory.QA{Question: "q", Answer: "a", ReasoningSteps: []trajectory.Hop{{Hop: 1}}}},
		{"unicode", `{"question": "Où est né Gustave Eiffel ?", "answer": "Dijon \u00e9"}`,
			trajectory.QA{Question: "Où est né Gustave Eiffel ?", Answer: "Dijon é"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.reply)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		want  string // part of the error
	}{
		{"empty", "", "no JSON object in the reply"},
		{"prose", "I cannot write a question for this trajectory.", "no JSON object in the reply"},
		{"unterminated", `Here: {"question": "q", "answer": "a", "reasoning_steps": [{"hop": 1}`, "the JSON object at offset 6 is not closed"},
		{"trailing comma", `{"question": "q", "answer": "a",}`, "the object at offset 0 is not valid JSON: invalid character '}'"},
		{"single quotes", `{'question': 'q'}`, "not valid JSON"},
		{"no question object", `{"verdict": true} and {"score": 3}`, `no JSON object with a "question" field`},
		{"missing question", `{"answer": "a"}`, `no "question" field`},
		{"missing answer", `{"question": "q"}`, `no "answer" field`},
		{"question a number", `{"question": 42, "answer": "a"}`, "question is a number, want a string"},
		{"question null", `{"question": null, "answer": "a"}`, "question is null, want a string"},
		{"answer a list", `{"question": "q", "answer": ["a", "b"]}`, "answer is a list, want a string"},
		{"steps an object", `{"question": "q", "answer": "a", "reasoning_steps": {"hop": 1}}`, "reasoning_steps is an object, want a list"},
		{"step a string", `{"question": "q", "answer": "a", "reasoning_steps": ["first"]}`, "reasoning_steps[0] is a string, want an object"},
		{"evidence an object", `{"question": "q", "answer": "a", "reasoning_steps": [{"hop": 1}, {"evidence": {"text": "e"}}]}`, "reasoning_steps[1].evidence is an object, want a string"},
		{"hop a word", `{"question": "q", "answer": "a", "reasoning_steps": [{"hop": "two"}]}`, `reasoning_steps[0].hop is "two", want a whole number`},
		{"hop a fraction", `{"question": "q", "answer": "a", "reasoning_steps": [{"hop": 1.5}]}`, "reasoning_steps[0].hop is 1.5, want a whole number"},
		{"hop a list", `{"question": "q", "answer": "a", "reasoning_steps": [{"hop": [1]}]}`, "reasoning_steps[0].hop is a list, want a number"},
		{"too long", strings.Repeat(" ", maxReply) + pairJSON, "over the 1048576 limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := Parse(tt.reply)
			if err == nil {
				t.Fatalf("Parse = %+v, want an error naming %q", q, tt.want)
			}
			if !errors.Is(err, ErrInvalidReply) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse error %q, want ErrInvalidReply naming %q", err, tt.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add(pairJSON)
	f.Add("```json\n" + pairJSON + "\n```")
	f.Add(`{"question": "q", "answer": 1, "reasoning_steps": [{"hop": "2"}]}`)
	f.Add(`{"result": {"question": "q\"}", "answer": "a"}}`)
	f.Add(`{"question": "q", "answer": "a",`)
	f.Add(`{{{{"}}}}`)
	f.Add("")
	f.Fuzz(func(t *testing.T, reply string) {
		q, err := Parse(reply)
		if err != nil {
			if !errors.Is(err, ErrInvalidReply) {
				t.Fatalf("error %v does not wrap ErrInvalidReply", err)
			}
			return
		}
		// A parsed pair survives a round trip through its own JSON, and the
		// checks run on it without panicking.
		b, err := json.Marshal(q)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		again, err := Parse(string(b))
		if err != nil {
			t.Fatalf("re-parse of %s: %v", b, err)
		}
		if !reflect.DeepEqual(q, again) {
			t.Fatalf("round trip changed %+v into %+v", q, again)
		}
		Check(q, eiffel(), DefaultCheckOptions())
	})
}
