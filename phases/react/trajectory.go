package react

import (
	"encoding/json"

	"github.com/flockrun/flock/grading"
	"github.com/flockrun/flock/operations"
	"github.com/flockrun/flock/phases"
)

// BuildTrajectory turns the run's messages (the log's, then added) into a
// grading.Trajectory: one step per model call, whose chat_completions are
// the context of that call (the messages of its segment before it, as
// logged, before any context_chars fitting) followed by the reply. Steps of
// a folded run carry their segment index. Rewards are left 0: the rollout
// assigns them.
func BuildTrajectory(st phases.State, added []Message, name string) (grading.Trajectory, error) {
	t := grading.Trajectory{Name: name, Steps: []grading.Step{}}
	var ctx []operations.Message
	step := func(m Message) {
		cc := make([]operations.Message, 0, len(ctx)+1)
		cc = append(cc, ctx...)
		cc = append(cc, m.Message)
		s := grading.Step{
			ChatCompletions:    cc,
			ModelResponse:      m.Content,
			Reasoning:          m.Reasoning,
			Segment:            m.Segment,
			CompletionTokenIDs: m.TokenIDs,
		}
		if len(m.Logprobs) == len(m.TokenIDs) {
			s.Logprobs = m.Logprobs
		}
		if len(m.ToolCalls) > 0 {
			s.Action, _ = json.Marshal(m.ToolCalls)
		}
		t.Steps = append(t.Steps, s)
	}
	visit := func(m Message) {
		if m.Role == operations.RoleAssistant && !m.Carried {
			step(m)
		}
		ctx = append(ctx, m.Message)
	}
	for i := 0; i < st.Len(); i++ {
		e := st.Entry(i)
		switch e.Type {
		case EntryFold:
			ctx = nil
		case EntryMessage:
			var m Message
			if err := e.Decode(&m); err != nil {
				return t, err
			}
			visit(m)
		}
	}
	for _, m := range added {
		visit(m)
	}
	return t, nil
}
