package grading

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/flockrun/flock/operations"
)

// validEpisode returns an episode with one folded trajectory of three steps
// over two segments.
func validEpisode() Episode {
	step := func(seg int, answer string) Step {
		return Step{
			ChatCompletions: []operations.Message{
				{Role: operations.RoleUser, Content: "What is 6*7?"},
				{Role: operations.RoleAssistant, Content: answer},
			},
			ModelResponse:      answer,
			Action:             json.RawMessage(`{"tool":"submit"}`),
			Segment:            seg,
			PromptTokenIDs:     []int{1, 2, 3},
			CompletionTokenIDs: []int{4, 5},
			Logprobs:           []float64{-0.1, -0.2},
		}
	}
	return Episode{
		SchemaVersion: EpisodeSchemaVersion,
		ID:            EpisodeID("gsm8k:12", 3),
		Task:          json.RawMessage(`{"question":"What is 6*7?","answer":"42"}`),
		Trajectories: []Trajectory{{
			Name:           "solver",
			Steps:          []Step{step(0, "thinking"), step(1, "still"), step(1, "42")},
			Reward:         1,
			Signals:        map[string]float64{"tests": 1},
			SegmentRewards: []float64{0, 1},
		}},
		Artifacts:         Artifacts{Answer: "42"},
		IsCorrect:         true,
		TerminationReason: TerminationEnvDone,
		Metrics:           map[string]float64{"n_turns": 3},
	}
}

func TestEpisodeID(t *testing.T) {
	id := EpisodeID("gsm8k:12", 3)
	if id != "gsm8k:12:3" {
		t.Fatalf("EpisodeID = %q", id)
	}
	task, idx, err := SplitEpisodeID(id)
	if err != nil || task != "gsm8k:12" || idx != 3 {
		t.Fatalf("SplitEpisodeID(%q) = %q, %d, %v", id, task, idx, err)
	}
	for _, bad := range []string{"abc", ":1", "a:", "a:-1", "a:+1", "a:x", "a:1.0", ""} {
		t.Run(bad, func(t *testing.T) {
			if _, _, err := SplitEpisodeID(bad); !errors.Is(err, ErrInvalidEpisode) {
				t.Fatalf("SplitEpisodeID(%q) err = %v", bad, err)
			}
		})
	}
}

func TestEpisodeValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(e *Episode)
		ok     bool
	}{
		{"valid", func(e *Episode) {}, true},
		{"no task", func(e *Episode) { e.Task = nil }, true},
		{"null task", func(e *Episode) { e.Task = json.RawMessage(`null`) }, true},
		{"no trajectories", func(e *Episode) { e.Trajectories = nil }, true},
		{"no token data", func(e *Episode) {
			s := &e.Trajectories[0].Steps[0]
			s.PromptTokenIDs, s.CompletionTokenIDs, s.Logprobs = nil, nil, nil
		}, true},
		{"bad id", func(e *Episode) { e.ID = "gsm8k" }, false},
		{"task not an object", func(e *Episode) { e.Task = json.RawMessage(`[1]`) }, false},
		{"task not JSON", func(e *Episode) { e.Task = json.RawMessage(`{x`) }, false},
		{"empty termination", func(e *Episode) { e.TerminationReason = "" }, false},
		{"unknown termination", func(e *Episode) { e.TerminationReason = "crashed" }, false},
		{"NaN metric", func(e *Episode) { e.Metrics["x"] = math.NaN() }, false},
		{"infinite reward", func(e *Episode) { e.Trajectories[0].Reward = math.Inf(1) }, false},
		{"NaN signal", func(e *Episode) { e.Trajectories[0].Signals["y"] = math.NaN() }, false},
		{"action not JSON", func(e *Episode) { e.Trajectories[0].Steps[1].Action = json.RawMessage(`tool`) }, false},
		{"logprobs mismatch", func(e *Episode) { e.Trajectories[0].Steps[0].Logprobs = []float64{-1} }, false},
		{"logprobs without tokens", func(e *Episode) { e.Trajectories[0].Steps[0].CompletionTokenIDs = nil }, false},
		{"infinite logprob", func(e *Episode) { e.Trajectories[0].Steps[0].Logprobs[0] = math.Inf(-1) }, false},
		{"segment starts at 1", func(e *Episode) { e.Trajectories[0].Steps[0].Segment = 1 }, false},
		{"segment gap", func(e *Episode) { e.Trajectories[0].Steps[2].Segment = 3 }, false},
		{"segment goes back", func(e *Episode) { e.Trajectories[0].Steps[2].Segment = 0 }, false},
		{"segment rewards count", func(e *Episode) { e.Trajectories[0].SegmentRewards = []float64{1} }, false},
		{"NaN segment reward", func(e *Episode) { e.Trajectories[0].SegmentRewards[0] = math.NaN() }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := validEpisode()
			tt.modify(&e)
			err := e.Validate()
			if tt.ok && err != nil {
				t.Fatalf("Validate() = %v, want nil", err)
			}
			if !tt.ok && !errors.Is(err, ErrInvalidEpisode) {
				t.Fatalf("Validate() = %v, want ErrInvalidEpisode", err)
			}
		})
	}
}

func TestDecodeEpisodeRoundTrip(t *testing.T) {
	want := validEpisode()
	data, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeEpisode(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
}

func TestDecodeEpisode(t *testing.T) {
	tests := []struct {
		name        string
		in          string
		wantErr     error
		wantVersion int
	}{
		{"unversioned is version 1", `{"id":"t:0","trajectories":[],"termination_reason":"unknown"}`, nil, 1},
		{"current", `{"schema_version":1,"id":"t:0","termination_reason":"timeout"}`, nil, 1},
		{"newer", `{"schema_version":2,"id":"t:0","termination_reason":"timeout"}`, ErrUnsupportedSchema, 0},
		{"negative version", `{"schema_version":-1,"id":"t:0","termination_reason":"timeout"}`, ErrInvalidEpisode, 0},
		{"not JSON", `{"id":`, ErrInvalidEpisode, 0},
		{"wrong type", `{"id":"t:0","is_correct":"yes"}`, ErrInvalidEpisode, 0},
		{"invalid", `{"id":"t","termination_reason":"timeout"}`, ErrInvalidEpisode, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := DecodeEpisode([]byte(tt.in))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if e.SchemaVersion != tt.wantVersion {
				t.Fatalf("SchemaVersion = %d, want %d", e.SchemaVersion, tt.wantVersion)
			}
		})
	}
}

func TestTrajectoryAssignSegmentRewards(t *testing.T) {
	tr := validEpisode().Trajectories[0]
	tr.Reward = 3
	if n := tr.NumSegments(); n != 2 {
		t.Fatalf("NumSegments = %d, want 2", n)
	}
	if err := tr.AssignSegmentRewards("", 0); err != nil {
		t.Fatal(err)
	}
	assertFloats(t, tr.SegmentRewards, []float64{0, 3})
	if tr.SegmentRewardMode != RewardLastOnly {
		t.Fatalf("mode = %q", tr.SegmentRewardMode)
	}
	if err := tr.AssignSegmentRewards(RewardGeometric, 2); !errors.Is(err, ErrInvalidGamma) {
		t.Fatalf("err = %v, want ErrInvalidGamma", err)
	}
	if (Trajectory{}).NumSegments() != 0 {
		t.Fatal("empty trajectory has segments")
	}
}
