package grading

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/flockrun/flock/operations"
)

// EpisodeSchemaVersion is the version of the Episode JSON layout written by
// this package. DecodeEpisode reads this version and older ones.
const EpisodeSchemaVersion = 1

// TerminationReason says why an episode ended (rLLM's values).
type TerminationReason string

// Termination reasons.
const (
	TerminationEnvDone           TerminationReason = "env_done"
	TerminationMaxTurns          TerminationReason = "max_turns_exceeded"
	TerminationMaxPromptLength   TerminationReason = "max_prompt_length_exceeded"
	TerminationMaxResponseLength TerminationReason = "max_response_length_exceeded"
	TerminationTimeout           TerminationReason = "timeout"
	TerminationError             TerminationReason = "error"
	TerminationUnknown           TerminationReason = "unknown"
)

// Valid reports whether r is one of the termination reasons above.
func (r TerminationReason) Valid() bool {
	switch r {
	case TerminationEnvDone, TerminationMaxTurns, TerminationMaxPromptLength,
		TerminationMaxResponseLength, TerminationTimeout, TerminationError, TerminationUnknown:
		return true
	}
	return false
}

// Episode is one rollout of one task, in rLLM's training-data shape; it is
// written one per line as JSONL.
type Episode struct {
	// SchemaVersion is EpisodeSchemaVersion when written by this package.
	SchemaVersion int `json:"schema_version"`
	// ID is "task_id:rollout_idx"; see EpisodeID.
	ID string `json:"id"`
	// Task is the task as a JSON object (the benchmark row); empty or null
	// when unknown.
	Task json.RawMessage `json:"task,omitempty"`
	// Trajectories are the agents' trajectories; most flows have one.
	Trajectories []Trajectory `json:"trajectories"`
	Artifacts    Artifacts    `json:"artifacts"`
	IsCorrect    bool         `json:"is_correct"`
	// TerminationReason is required; use TerminationUnknown if unknown.
	TerminationReason TerminationReason `json:"termination_reason"`
	// Metrics are flat numeric metrics (timings, token counts, signals).
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// Metadata is free-form (rLLM's Episode.metadata).
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Artifacts are the products of an episode.
type Artifacts struct {
	// Answer is the submitted final answer.
	Answer string `json:"answer"`
}

// Trajectory is the sequence of model calls one agent made.
type Trajectory struct {
	// UID identifies the trajectory (rLLM's Trajectory.uid).
	UID string `json:"uid,omitempty"`
	// Name identifies the agent's role; trajectories group by
	// "task_id:name". Empty names are imputed by GroupTrajectories.
	Name  string `json:"name"`
	Steps []Step `json:"steps"`
	// Reward is the trajectory's reward, usually the evaluation score.
	Reward float64 `json:"reward"`
	// Output is the trajectory's final answer (rLLM's Trajectory.output).
	Output string `json:"output,omitempty"`
	// Signals are named extra scores from the evaluator.
	Signals map[string]float64 `json:"signals,omitempty"`
	// SegmentRewards, when set, holds one reward per context segment (see
	// Step.Segment), as assigned by AssignSegmentRewards.
	SegmentRewards []float64 `json:"segment_rewards,omitempty"`
	// SegmentRewardMode is the mode that produced SegmentRewards.
	SegmentRewardMode string `json:"segment_reward_mode,omitempty"`
}

// Step is one model call and what came of it.
type Step struct {
	// ID identifies the step (rLLM's Step.id).
	ID string `json:"id,omitempty"`
	// ChatCompletions is the prompt messages followed by the assistant reply.
	ChatCompletions []operations.Message `json:"chat_completions"`
	// ModelResponse is the reply's text content.
	ModelResponse string `json:"model_response"`
	// Reasoning is the reply's reasoning text, when the model gave one.
	Reasoning string `json:"reasoning,omitempty"`
	// Action is the parsed action as JSON (for example the tool calls), or
	// empty.
	Action json.RawMessage `json:"action,omitempty"`
	Reward float64         `json:"reward"`
	// Done is true on the step the episode ended at (the last one).
	Done bool `json:"done"`
	// Info is free-form per-step metadata (rLLM's Step.info).
	Info map[string]any `json:"info,omitempty"`
	// Segment is the index of the context segment the call was made in: 0
	// until the first context fold, then 1, and so on. Along a trajectory it
	// starts at 0 and grows by at most 1 per step.
	Segment int `json:"segment"`
	// Token data, present when the endpoint returned it. Logprobs, when
	// present, has one entry per completion token.
	PromptTokenIDs     []int     `json:"prompt_token_ids,omitempty"`
	CompletionTokenIDs []int     `json:"completion_token_ids,omitempty"`
	Logprobs           []float64 `json:"logprobs,omitempty"`
}

// NumSegments returns the number of context segments in t: one more than
// the last step's Segment, or 0 without steps.
func (t Trajectory) NumSegments() int {
	if len(t.Steps) == 0 {
		return 0
	}
	return t.Steps[len(t.Steps)-1].Segment + 1
}

// AssignSegmentRewards splits t.Reward over t's segments with SegmentRewards
// and records the result and the mode in t.
func (t *Trajectory) AssignSegmentRewards(mode string, gamma float64) error {
	rs, err := SegmentRewards(mode, t.Reward, t.NumSegments(), gamma)
	if err != nil {
		return err
	}
	if mode == "" {
		mode = RewardLastOnly
	}
	t.SegmentRewards, t.SegmentRewardMode = rs, mode
	return nil
}

// Identify fills in what an rLLM reader expects of the trajectories of
// episode e that their writer left out: a trajectory uid
// ("episode_id/name/index"), step ids ("uid/step"), done on the last step
// and an info object on each step.
func (e *Episode) Identify() {
	for ti := range e.Trajectories {
		t := &e.Trajectories[ti]
		if t.UID == "" {
			t.UID = e.ID + "/" + t.Name + "/" + strconv.Itoa(ti)
		}
		for si := range t.Steps {
			s := &t.Steps[si]
			if s.ID == "" {
				s.ID = t.UID + "/" + strconv.Itoa(si)
			}
			s.Done = si == len(t.Steps)-1
			if s.Info == nil {
				s.Info = map[string]any{"segment": s.Segment}
			}
		}
	}
}

// EpisodeID returns the episode ID for rollout idx of a task.
func EpisodeID(taskID string, idx int) string {
	return taskID + ":" + strconv.Itoa(idx)
}

// SplitEpisodeID splits an episode ID at its last ':' into the task ID,
// which may itself contain ':', and the rollout index.
func SplitEpisodeID(id string) (taskID string, idx int, err error) {
	i := strings.LastIndexByte(id, ':')
	if i <= 0 {
		return "", 0, fmt.Errorf("%w: id %q is not \"task_id:index\"", ErrInvalidEpisode, id)
	}
	digits := id[i+1:]
	if digits != "" && strings.Trim(digits, "0123456789") == "" {
		idx, err = strconv.Atoi(digits)
	} else {
		err = strconv.ErrSyntax
	}
	if err != nil {
		return "", 0, fmt.Errorf("%w: id %q has no non-negative rollout index", ErrInvalidEpisode, id)
	}
	return id[:i], idx, nil
}

// Validate checks e against the data model: a "task:idx" ID, a task that
// is a JSON object, a known termination reason, finite numbers, actions
// that are JSON, one logprob per completion token, segments that start at 0
// and grow by at most 1, and one segment reward per segment when set.
func (e *Episode) Validate() error {
	if _, _, err := SplitEpisodeID(e.ID); err != nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: episode %s: %s", ErrInvalidEpisode, e.ID, fmt.Sprintf(format, args...))
	}
	if t := bytes.TrimSpace(e.Task); len(t) > 0 && string(t) != "null" {
		if t[0] != '{' || !json.Valid(t) {
			return bad("task is not a JSON object")
		}
	}
	if !e.TerminationReason.Valid() {
		return bad("termination reason %q is not known", e.TerminationReason)
	}
	if name, ok := nonFinite(e.Metrics); ok {
		return bad("metric %q is not finite", name)
	}
	for ti, t := range e.Trajectories {
		if !finite(t.Reward) {
			return bad("trajectories[%d]: reward is not finite", ti)
		}
		if name, ok := nonFinite(t.Signals); ok {
			return bad("trajectories[%d]: signal %q is not finite", ti, name)
		}
		prevSeg := 0
		for si, s := range t.Steps {
			at := fmt.Sprintf("trajectories[%d].steps[%d]", ti, si)
			if !finite(s.Reward) {
				return bad("%s: reward is not finite", at)
			}
			if len(s.Action) > 0 && !json.Valid(s.Action) {
				return bad("%s: action is not JSON", at)
			}
			if len(s.Logprobs) > 0 && len(s.Logprobs) != len(s.CompletionTokenIDs) {
				return bad("%s: %d logprobs for %d completion tokens", at, len(s.Logprobs), len(s.CompletionTokenIDs))
			}
			for _, lp := range s.Logprobs {
				if !finite(lp) {
					return bad("%s: logprob is not finite", at)
				}
			}
			if (si == 0 && s.Segment != 0) || s.Segment < prevSeg || s.Segment > prevSeg+1 {
				return bad("%s: segment %d after segment %d", at, s.Segment, prevSeg)
			}
			prevSeg = s.Segment
		}
		if len(t.SegmentRewards) > 0 && len(t.SegmentRewards) != t.NumSegments() {
			return bad("trajectories[%d]: %d segment rewards for %d segments", ti, len(t.SegmentRewards), t.NumSegments())
		}
		for _, r := range t.SegmentRewards {
			if !finite(r) {
				return bad("trajectories[%d]: segment reward is not finite", ti)
			}
		}
	}
	return nil
}

// DecodeEpisode decodes one JSON episode (one JSONL line), migrates it to
// EpisodeSchemaVersion and validates it. An episode without a
// schema_version is taken as version 1, the first layout; a newer version
// is ErrUnsupportedSchema.
func DecodeEpisode(data []byte) (Episode, error) {
	var e Episode
	if err := json.Unmarshal(data, &e); err != nil {
		return Episode{}, fmt.Errorf("%w: %w", ErrInvalidEpisode, err)
	}
	if err := migrateEpisode(&e); err != nil {
		return Episode{}, err
	}
	if err := e.Validate(); err != nil {
		return Episode{}, err
	}
	return e, nil
}

// migrateEpisode brings e up to EpisodeSchemaVersion.
func migrateEpisode(e *Episode) error {
	switch {
	case e.SchemaVersion == 0:
		e.SchemaVersion = 1
	case e.SchemaVersion < 0:
		return fmt.Errorf("%w: schema version %d", ErrInvalidEpisode, e.SchemaVersion)
	case e.SchemaVersion > EpisodeSchemaVersion:
		return fmt.Errorf("%w: %d (this build reads up to %d)", ErrUnsupportedSchema, e.SchemaVersion, EpisodeSchemaVersion)
	}
	return nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// nonFinite returns the name of a non-finite value in m, the smallest such
// name so the error is deterministic.
func nonFinite(m map[string]float64) (string, bool) {
	found, bad := "", false
	for k, v := range m {
		if !finite(v) && (!bad || k < found) {
			found, bad = k, true
		}
	}
	return found, bad
}
