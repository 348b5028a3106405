package simulated

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/flockrun/flock/grading"
	"github.com/flockrun/flock/operations"
)

// reBlock is an element holding a text: <name>text</name>, whatever it is
// called.
var reBlock = regexp.MustCompile(`(?s)<([A-Za-z][A-Za-z0-9_-]*)>\n?(.*?)\n?</([A-Za-z][A-Za-z0-9_-]*)>`)

// grader grades a candidate answer (operations.ModelRoleGrader) with a
// JSON verdict: the prompt's last user message holds texts in elements,
// the candidate last; it is correct when it states one of the texts
// before it (exactly, or as whole words within it, grading's rules).
func grader(in Input) operations.Output {
	var texts []string
	for _, m := range reBlock.FindAllStringSubmatch(lastUser(in.Request), -1) {
		if m[1] == m[3] {
			texts = append(texts, strings.TrimSpace(m[2]))
		}
	}
	correct, why := false, "no candidate answer to grade"
	if n := len(texts); n > 0 {
		cand := texts[n-1]
		why = "the candidate states none of the references"
		for _, ref := range texts[:n-1] {
			if grading.ExactMatch(cand, ref) == 1 || grading.ContainsAnswer(cand, ref) == 1 {
				correct, why = true, "the candidate states a reference answer"
				break
			}
		}
	}
	b, _ := json.Marshal(map[string]any{"correct": correct, "reasoning": why})
	return operations.Output{Content: string(b), FinishReason: "stop"}
}
