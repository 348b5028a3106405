package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/flockrun/flock/grading"
	"github.com/flockrun/flock/operations"
)

// AgentOutput is what an agent program handed back (its stdout's last
// JSON line, or its answer file), parsed: an answer, a trajectory or an
// rLLM-shaped episode. All fields are optional.
type AgentOutput struct {
	Answer     string
	Trajectory *grading.Trajectory
	Episode    *grading.Episode
	// TerminationReason is the episode's, when it names one.
	TerminationReason string
}

// ParseAgentOutput reads an agent's output value: a JSON string (the
// answer), an object with "trajectories" (an episode; its
// artifacts.answer is the answer), with "steps" (a trajectory; its
// output is the answer) or with "answer". null or {} is no output.
func ParseAgentOutput(b []byte) (AgentOutput, error) {
	var out AgentOutput
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return out, nil
	}
	var s string
	if json.Unmarshal(b, &s) == nil {
		out.Answer = s
		return out, nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return out, fmt.Errorf("the agent's output is neither a JSON string nor an object: %w", err)
	}
	switch {
	case keys["trajectories"] != nil:
		var e grading.Episode
		if err := json.Unmarshal(b, &e); err != nil {
			return out, fmt.Errorf("the agent's episode: %w", err)
		}
		out.Episode = &e
		out.Answer = e.Artifacts.Answer
		out.TerminationReason = string(e.TerminationReason)
		if out.Answer == "" && len(e.Trajectories) > 0 {
			out.Answer = e.Trajectories[0].Output
		}
	case keys["steps"] != nil:
		var t grading.Trajectory
		if err := json.Unmarshal(b, &t); err != nil {
			return out, fmt.Errorf("the agent's trajectory: %w", err)
		}
		out.Trajectory = &t
		out.Answer = t.Output
	}
	if a := keys["answer"]; a != nil && out.Answer == "" {
		var s string
		if err := json.Unmarshal(a, &s); err != nil {
			out.Answer = string(bytes.TrimSpace(a)) // a number or an object: its JSON text
		} else {
			out.Answer = s
		}
	}
	return out, nil
}

// StepFromTrace turns one gateway call into an rLLM step: chat_completions
// (the request's messages and the reply), model_response, reasoning, the
// prompt and completion token ids and the logprobs, the tool calls as the
// action, and in info the trace id, op id, model, finish reason and
// usage. Logprobs sit in the step only when they match the completion
// token ids one for one (rLLM's invariant); otherwise in info.logprobs.
func StepFromTrace(t Trace) grading.Step {
	st := grading.Step{ID: t.ID, ChatCompletions: append([]operations.Message(nil), t.Request.Messages...),
		PromptTokenIDs: t.Result.PromptTokenIDs,
		Info: map[string]any{"trace_id": t.ID, "op_id": t.OpID, "model": t.Request.Model,
			"prompt_tokens": t.Result.Usage.PromptTokens, "completion_tokens": t.Result.Usage.CompletionTokens}}
	if t.StepID != "" {
		st.Info["step_id"] = t.StepID
	}
	if t.Replayed {
		st.Info["replayed"] = true
	}
	if len(t.Result.Outputs) == 0 {
		return st
	}
	o := t.Result.Outputs[0]
	st.ChatCompletions = append(st.ChatCompletions, operations.Message{Role: operations.RoleAssistant,
		Content: o.Content, ToolCalls: o.ToolCalls, Reasoning: o.Reasoning})
	st.ModelResponse, st.Reasoning = o.Content, o.Reasoning
	st.CompletionTokenIDs = o.TokenIDs
	st.Info["finish_reason"] = finishReason(o)
	if len(t.Result.Outputs) > 1 {
		st.Info["n"] = len(t.Result.Outputs)
	}
	if len(o.ToolCalls) > 0 {
		st.Action, _ = json.Marshal(o.ToolCalls)
	}
	if len(o.Logprobs) > 0 {
		lps := make([]float64, len(o.Logprobs))
		for i, lp := range o.Logprobs {
			lps[i] = lp.Logprob
		}
		if len(lps) == len(o.TokenIDs) {
			st.Logprobs = lps
		} else {
			st.Info["logprobs"] = lps
		}
	}
	return st
}

// Enrich builds the episode of an agent from its output and the gateway
// trace of its session, as rLLM's engine does but matching by id, never by
// position: an agent step whose id is a trace's id, completion id
// ("chatcmpl-" + id), response id ("resp_" + id, ':' as '_') or
// X-Flock-Step-Id takes that trace's model data
// (keeping its own action, reward and done); a trajectory without steps
// receives every trace no step claimed, in call order; with no
// trajectories at all, one named name holds all traces. Agent steps that
// match no trace are kept as they are. id is the episode's id.
func Enrich(id, name string, out AgentOutput, traces []Trace) grading.Episode {
	ep := grading.Episode{SchemaVersion: grading.EpisodeSchemaVersion, ID: id,
		TerminationReason: grading.TerminationReason(out.TerminationReason)}
	if out.Episode != nil {
		ep.Trajectories = out.Episode.Trajectories
		ep.Artifacts = out.Episode.Artifacts
		ep.Metrics = out.Episode.Metrics
		ep.Metadata = out.Episode.Metadata
		ep.IsCorrect = out.Episode.IsCorrect
	} else if out.Trajectory != nil {
		ep.Trajectories = []grading.Trajectory{*out.Trajectory}
	}
	if ep.Artifacts.Answer == "" {
		ep.Artifacts.Answer = out.Answer
	}
	if len(ep.Trajectories) == 0 {
		ep.Trajectories = []grading.Trajectory{{Name: name}}
	}
	byID := map[string]int{}
	for i, t := range traces {
		byID[t.ID] = i
		byID[t.completionID()] = i
		byID[responseID(&traces[i])] = i
		if t.StepID != "" {
			byID[t.StepID] = i
		}
	}
	claimed := make([]bool, len(traces))
	for ti := range ep.Trajectories {
		tr := &ep.Trajectories[ti]
		if tr.Name == "" {
			tr.Name = name
		}
		for si := range tr.Steps {
			s := &tr.Steps[si]
			i, ok := byID[s.ID]
			if !ok || claimed[i] {
				continue
			}
			claimed[i] = true
			full := StepFromTrace(traces[i])
			full.ID = s.ID
			if len(s.Action) > 0 {
				full.Action = s.Action
			}
			full.Reward, full.Done, full.Segment = s.Reward, s.Done, s.Segment
			for k, v := range s.Info {
				full.Info[k] = v
			}
			*s = full
		}
	}
	for ti := range ep.Trajectories {
		tr := &ep.Trajectories[ti]
		if len(tr.Steps) > 0 {
			continue
		}
		tr.Steps = []grading.Step{}
		for i, t := range traces {
			if !claimed[i] {
				claimed[i] = true
				tr.Steps = append(tr.Steps, StepFromTrace(t))
			}
		}
	}
	for ti := range ep.Trajectories {
		if ep.Trajectories[ti].Output == "" && ti == 0 {
			ep.Trajectories[ti].Output = ep.Artifacts.Answer
		}
	}
	if !ep.TerminationReason.Valid() {
		ep.TerminationReason = grading.TerminationUnknown
	}
	ep.Metrics = withMetric(ep.Metrics, "n_turns", float64(len(traces)))
	ep.Identify()
	return ep
}

func withMetric(m map[string]float64, k string, v float64) map[string]float64 {
	if m == nil {
		m = map[string]float64{}
	}
	m[k] = v
	return m
}

// LastJSONLine returns the last line of out that is a JSON value (an
// object, list or string), or nil.
func LastJSONLine(out []byte) []byte {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			continue
		}
		if (l[0] == '{' || l[0] == '[' || l[0] == '"') && json.Valid([]byte(l)) {
			return []byte(l)
		}
	}
	return nil
}
