package react

import (
	"encoding/json"

	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
)

// Entry types the workflow appends.
const (
	// EntryMessage is one chat message (Message).
	EntryMessage = "message"
	// EntryFold marks a context fold (Fold): the messages after it form
	// the new segment's context.
	EntryFold = "fold"
)

// Message is a chat message of the conversation with the model, as
// appended to the run's log. The log keeps every message of every segment:
// the context of a generate is the messages after the last fold entry.
type Message struct {
	operations.Message
	// Summary is a one-line description for people (the CLI prints it).
	Summary string `json:"summary,omitempty"`
	// Segment is the context segment (0 until the first fold).
	Segment int `json:"segment"`
	// Turn is the model call that produced (assistant) or answered (tool)
	// the message, from 1; 0 for the prompt.
	Turn int `json:"turn,omitempty"`
	// FinishReason, TokenIDs, Logprobs and Usage are kept from the
	// generate of an assistant message, for training data.
	FinishReason string            `json:"finish_reason,omitempty"`
	TokenIDs     []int             `json:"token_ids,omitempty"`
	Logprobs     []float64         `json:"logprobs,omitempty"`
	Usage        *operations.Usage `json:"usage,omitempty"`
	// Carried marks a copy of the folding turn's assistant message that
	// opens the next segment (with the results of its calls other than
	// summarize); it is not a model call of its own.
	Carried bool `json:"carried,omitempty"`
}

// FoldRecord is the entry of a context fold.
type FoldRecord struct {
	Summary string `json:"summary"`
	// Segment is the segment that starts here.
	Segment int `json:"segment"`
	// Turn is the turn whose summarize call folded.
	Turn int `json:"turn"`
	// Text is the model's summary.
	Text string `json:"text"`
}

// Result is the run's result (its End.Result), read by the rollout.
type Result struct {
	Answer string `json:"answer"`
	// TerminationReason is an rLLM termination reason: env_done,
	// max_turns_exceeded or error.
	TerminationReason string `json:"termination_reason"`
	// AnswerSource says which rule produced Answer (see ExtractAnswer).
	AnswerSource string `json:"answer_source"`
	Turns        int    `json:"turns"`
	Segments     int    `json:"segments"`
	Error        string `json:"error,omitempty"`
}

// loop is the workflow's var "react".
type loop struct {
	Turns    int  `json:"turns"`
	Segment  int  `json:"segment"`
	SegTurns int  `json:"seg_turns"`
	Nudged   bool `json:"nudged,omitempty"`
	// Pending are the calls of the turn being executed.
	Pending []pending `json:"pending,omitempty"`
}

// pending is one tool call of the current turn.
type pending struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Invalid says why the call was rejected (no op ran).
	Invalid string `json:"invalid,omitempty"`
	// Op is the index of the call's operation, -1 when none ran.
	Op int `json:"op"`
	// Text is the summary of a summarize call or the answer of a submit.
	Text string `json:"text,omitempty"`
}

const varLoop = "react"

func getLoop(s phases.State) (loop, error) {
	var l loop
	if _, err := phases.GetVar(s, varLoop, &l); err != nil {
		return l, err
	}
	return l, nil
}

// messages returns the message entries of the log, in order, with the
// index of the last fold entry (-1 if none).
func messages(s phases.State, from int) ([]Message, error) {
	var out []Message
	for i := from; i < s.Len(); i++ {
		e := s.Entry(i)
		if e.Type != EntryMessage {
			continue
		}
		var m Message
		if err := json.Unmarshal(e.Data, &m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
