package grading

import (
	"errors"
	"strings"
	"testing"

	"github.com/flockrun/flock/operations"
)

var judgeReplyTests = []struct {
	name    string
	reply   string
	want    JudgeVerdict
	wantErr bool
}{
	{"bare object", `{"correct": true, "reasoning": "same city"}`, JudgeVerdict{true, "same city"}, false},
	{"fenced json", "```json\n{\"correct\": false, \"reasoning\": \"wrong city\"}\n```", JudgeVerdict{false, "wrong city"}, false},
	{"fenced without language", "```\n{\"correct\": true}\n```", JudgeVerdict{true, ""}, false},
	{"surrounding text", `Sure! My verdict: {"correct": true, "reasoning": "ok"} Hope this helps.`, JudgeVerdict{true, "ok"}, false},
	{"extra keys", `{"reasoning": "x", "correct": false, "confidence": 0.9}`, JudgeVerdict{false, "x"}, false},
	{"null reasoning", `{"correct": true, "reasoning": null}`, JudgeVerdict{true, ""}, false},
	{"braces in reasoning", `{"correct": true, "reasoning": "set {1, 2} matches"}`, JudgeVerdict{true, "set {1, 2} matches"}, false},
	{"agreeing verdicts, last wins", "{\"correct\": true}\n```json\n{\"correct\": true, \"reasoning\": \"r\"}\n```", JudgeVerdict{true, "r"}, false},
	{"broken object then verdict", `{not json} {"correct": false}`, JudgeVerdict{false, ""}, false},
	{"other object then verdict", `{"score": 3} {"correct": true}`, JudgeVerdict{true, ""}, false},
	// Unparseable replies are errors; the original guessed from "true".
	{"prose", "The answer is correct.", JudgeVerdict{}, true},
	{"prose with true", "The answer is not true", JudgeVerdict{}, true},
	{"bare true", "true", JudgeVerdict{}, true},
	{"empty", "", JudgeVerdict{}, true},
	{"string correct", `{"correct": "yes"}`, JudgeVerdict{}, true},
	{"numeric correct", `{"correct": 1}`, JudgeVerdict{}, true},
	{"null correct", `{"correct": null}`, JudgeVerdict{}, true},
	{"non-string reasoning", `{"correct": true, "reasoning": 5}`, JudgeVerdict{}, true},
	{"template echo", `{"correct": true or false, "reasoning": "..."}`, JudgeVerdict{}, true},
	{"disagreeing verdicts", `{"correct": true} then {"correct": false}`, JudgeVerdict{}, true},
	{"nested verdict only", `{"verdict": {"correct": true}}`, JudgeVerdict{}, true},
	{"object without verdict", `{"score": 1}`, JudgeVerdict{}, true},
	{"truncated", `{"correct": tr`, JudgeVerdict{}, true},
	{"array", `[{"correct": true}]`, JudgeVerdict{true, ""}, false},
}

func TestParseJudgeReply(t *testing.T) {
	for _, tt := range judgeReplyTests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseJudgeReply(tt.reply)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidJudgeReply) {
					t.Fatalf("ParseJudgeReply(%q) = %+v, %v; want ErrInvalidJudgeReply", tt.reply, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseJudgeReply(%q) = %+v, %v; want %+v", tt.reply, got, err, tt.want)
			}
		})
	}
}

func TestParseJudgeReplyTooLarge(t *testing.T) {
	reply := `{"correct": true, "reasoning": "` + strings.Repeat("x", maxJudgeReply) + `"}`
	if _, err := ParseJudgeReply(reply); !errors.Is(err, ErrInvalidJudgeReply) {
		t.Fatalf("err = %v, want ErrInvalidJudgeReply", err)
	}
}

func TestJudgeMessages(t *testing.T) {
	msgs := Judge{}.Messages("Capital of France?", "Paris", []string{"Paris", "Paris, France"})
	if len(msgs) != 2 || msgs[0].Role != operations.RoleSystem || msgs[1].Role != operations.RoleUser {
		t.Fatalf("messages = %+v", msgs)
	}
	if msgs[0].Content != DefaultJudgeInstructions {
		t.Fatalf("system prompt is not the default")
	}
	want := "<question>\nCapital of France?\n</question>\n\n" +
		"<reference>\nParis\n</reference>\n\n" +
		"<reference>\nParis, France\n</reference>\n\n" +
		"<candidate>\nParis\n</candidate>"
	if msgs[1].Content != want {
		t.Fatalf("user message:\n%s\nwant:\n%s", msgs[1].Content, want)
	}

	custom := Judge{Instructions: "grade"}.Messages("", "x", []string{"y"})
	if custom[0].Content != "grade" || strings.Contains(custom[1].Content, "<question>") {
		t.Fatalf("custom messages = %+v", custom)
	}
}

func TestJudgeVerdictScore(t *testing.T) {
	if (JudgeVerdict{Correct: true}).Score() != 1 || (JudgeVerdict{}).Score() != 0 {
		t.Fatal("Score is not 1 for correct and 0 otherwise")
	}
}
