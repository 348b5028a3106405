package qa

import (
	"strings"

	"github.com/flockrun/flock/grading"
)

// ClosedBookPrompt builds the closed-book filter's prompt: the model sees
// only the question, no trajectory and no tools, and is asked for the bare
// answer or "unknown".
func ClosedBookPrompt(question string) []Message {
	return []Message{
		{Role: "system", Content: "Answer the question from what you already know. You have no tools and no documents. Reply with the answer only (a name, number, date or short phrase), or with \"unknown\" if you do not know it."},
		{Role: "user", Content: strings.TrimSpace(question)},
	}
}

// ClosedBookCorrect reports whether a closed-book reply answers the
// question: the reply and the answer are equal under grading.Normalize
// (the SQuAD rule: case, punctuation and articles dropped) or the answer
// occurs in the reply as whole words (grading's contains_answer). A reply
// that hedges across candidates that include the answer therefore counts
// as correct, which errs towards dropping the pair. An answer with no words
// is never matched.
func ClosedBookCorrect(reply, answer string) bool {
	if len(grading.Tokens(answer)) == 0 {
		return false
	}
	return grading.ExactMatch(reply, answer) == 1 || grading.ContainsAnswer(reply, answer) == 1
}

// ClosedBook turns a closed-book reply into the filter's verdict: a
// *Failure of the closed_book check when the model answered without the
// trajectory (the question does not need the tools), else nil.
func ClosedBook(reply, answer string) *Failure {
	if !ClosedBookCorrect(reply, answer) {
		return nil
	}
	return fail(CheckClosedBook, "a model that saw only the question answered it (%s); ask for something only the observations reveal", quote(strings.TrimSpace(reply)))
}
