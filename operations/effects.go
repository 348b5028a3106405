package operations

import (
	"encoding/json"

	"github.com/flockrun/flock/record"
)

// Effects is what a finished operation changes in its run besides handing
// its result to the next phase. The executor applies them, in request
// order, before the next phase is called; it has no code of its own for
// any kind.
type Effects struct {
	// Usage is added to the run's usage (Seconds is ignored: the executor
	// keeps time). Actions counts towards the run's actions limit, Tokens
	// and Cost towards theirs.
	Usage RunUsage
	// Entries are appended to the run's log, in order, with the next commit.
	Entries []Record
	// Result, when not nil, becomes the run's result (a JSON value).
	Result json.RawMessage
}

// Record is an entry to append to the run's log: Data is encoded as JSON.
type Record struct {
	Type string
	Data any
}

// EffectInput is what a result's effects may depend on.
type EffectInput struct {
	// Request is the operation's request.
	Request Request
	// Error is the result's error ("" when the operation did its job).
	Error string
	// Usage is the run's usage when the result is applied; Seconds is the
	// run's elapsed time.
	Usage RunUsage
}

// Effector is implemented by result payloads whose operation changes the
// run (counts as an action, spends tokens, records entries). A payload
// that does not implement it has no effect.
type Effector interface {
	Effects(in EffectInput) Effects
}

// Effects returns the effects of r, the result of req, given the run's
// usage so far: those its payload declares (see Effector), none when it
// has no payload.
func (r Result) Effects(req Request, usage RunUsage) Effects {
	e, ok := r.Data.(Effector)
	if !ok || isNilPayload(r.Data) {
		return Effects{}
	}
	return e.Effects(EffectInput{Request: req, Error: r.Error, Usage: usage})
}

// action counts one action when the operation did its job.
func action(in EffectInput) Effects {
	if in.Error != "" {
		return Effects{}
	}
	return Effects{Usage: RunUsage{Actions: 1}}
}

// Effects counts a command that ran as an action.
func (*BashResult) Effects(in EffectInput) Effects { return action(in) }

// Effects counts a sandbox tool call that was answered as an action,
// whatever its envelope's code.
func (*SandboxResult) Effects(in EffectInput) Effects { return action(in) }

// Effects counts code that ran as an action.
func (*PythonResult) Effects(in EffectInput) Effects { return action(in) }

// Effects adds the tokens and cost the model reported, even for a result
// that carries an error.
func (g *GenerateResult) Effects(EffectInput) Effects {
	switch g.Replay {
	case ReplayHit:
		return Effects{Usage: RunUsage{ReplayHits: 1}}
	case ReplayMiss:
		return Effects{Usage: RunUsage{Tokens: g.Usage.PromptTokens + g.Usage.CompletionTokens, Cost: g.Usage.Cost, ReplayMisses: 1}}
	}
	return Effects{Usage: RunUsage{Tokens: g.Usage.PromptTokens + g.Usage.CompletionTokens, Cost: g.Usage.Cost}}
}

// Effects adds the child's tokens, actions and cost to the parent's.
func (s *SpawnResult) Effects(EffectInput) Effects {
	return Effects{Usage: RunUsage{Tokens: s.Usage.Tokens, Actions: s.Usage.Actions, Cost: s.Usage.Cost}}
}

// Effects counts a score as an action and records it as a "score" entry
// stamped with the run's elapsed time (score_log reads those back).
func (s *ScoreResult) Effects(in EffectInput) Effects {
	e := action(in)
	e.Entries = []Record{{Type: EntryScore, Data: ScoreLogEntry{ElapsedSeconds: in.Usage.Seconds, Score: s.Score, Message: s.Message}}}
	return e
}

// Effects counts a submission as an action; an accepted one becomes the
// run's result and a "submission" entry.
func (s *SubmitResult) Effects(in EffectInput) Effects {
	e := action(in)
	sub := Submit.Params(in.Request)
	if in.Error != "" || !s.Accepted || sub == nil {
		return e
	}
	e.Result, _ = json.Marshal(sub.Answer)
	e.Entries = []Record{{Type: EntrySubmission, Data: sub}}
	return e
}

// Effects records the request (a log, action or observation) as an entry
// named after its kind.
func (*RecordedResult) Effects(in EffectInput) Effects {
	p := in.Request.Params
	if in.Error != "" || p == nil {
		return Effects{}
	}
	return Effects{Entries: []Record{{Type: string(in.Request.Kind), Data: p}}}
}

// Entry types written from results' effects.
const (
	// EntryScore is a score from the task's scorer (ScoreLogEntry).
	EntryScore = record.EntryTypeScore
	// EntrySubmission is an accepted submission (SubmitRequest).
	EntrySubmission = record.EntryTypeSubmission
)

var (
	_ Effector = (*BashResult)(nil)
	_ Effector = (*PythonResult)(nil)
	_ Effector = (*GenerateResult)(nil)
	_ Effector = (*SpawnResult)(nil)
	_ Effector = (*ScoreResult)(nil)
	_ Effector = (*SubmitResult)(nil)
	_ Effector = (*RecordedResult)(nil)
)
