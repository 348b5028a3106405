package grading

import (
	"errors"
	"math"
	"testing"
)

func TestGroupTrajectories(t *testing.T) {
	steps := []Step{{ModelResponse: "x"}}
	episodes := []Episode{
		{ID: "t1:0", IsCorrect: true, TerminationReason: TerminationEnvDone, Trajectories: []Trajectory{
			{Name: "solver", Steps: steps, Reward: 1},
			{Name: "judge", Steps: steps, Reward: 0.5},
		}},
		{ID: "t1:1", TerminationReason: TerminationMaxTurns, Trajectories: []Trajectory{
			{Name: "solver", Steps: steps, Reward: 0},
		}},
		// No steps: left out.
		{ID: "t1:2", Trajectories: []Trajectory{{Name: "solver", Reward: 1}}},
		// Unnamed: imputed from its position.
		{ID: "t2:0", Trajectories: []Trajectory{{Steps: steps, Reward: 0.25}}},
	}
	groups, err := GroupTrajectories(episodes)
	if err != nil {
		t.Fatal(err)
	}
	wantIDs := []string{"t1:judge", "t1:solver", "t2:default_traj_name_0"}
	if len(groups) != len(wantIDs) {
		t.Fatalf("groups = %+v", groups)
	}
	for i, g := range groups {
		if g.ID != wantIDs[i] {
			t.Fatalf("group %d ID = %q, want %q", i, g.ID, wantIDs[i])
		}
	}
	solver := groups[1]
	if solver.TaskID != "t1" || solver.Name != "solver" || len(solver.Members) != 2 {
		t.Fatalf("solver group = %+v", solver)
	}
	m := solver.Members[1]
	if m.EpisodeID != "t1:1" || m.RolloutIdx != 1 || m.Trajectory != 0 || m.IsCorrect || m.TerminationReason != TerminationMaxTurns {
		t.Fatalf("member = %+v", m)
	}
	assertFloats(t, solver.Rewards(), []float64{1, 0})
	if groups[0].Members[0].Trajectory != 1 {
		t.Fatalf("judge member = %+v", groups[0].Members[0])
	}

	if _, err := GroupTrajectories([]Episode{{ID: "bad"}}); !errors.Is(err, ErrInvalidEpisode) {
		t.Fatalf("bad id err = %v", err)
	}
}

func TestGRPOAdvantages(t *testing.T) {
	s3 := math.Sqrt(3)
	tests := []struct {
		name      string
		rewards   []float64
		normByStd bool
		want      []float64
	}{
		// mean 1/2, sample std sqrt(1/3): ±(1/2)/sqrt(1/3) = ±sqrt(3)/2.
		{"half correct", []float64{1, 0, 0, 1}, true, []float64{s3 / 2, -s3 / 2, -s3 / 2, s3 / 2}},
		// mean 1/3, sample std sqrt(1/3): (2/3)·sqrt(3), (-1/3)·sqrt(3).
		{"one of three", []float64{1, 0, 0}, true, []float64{2 / s3, -1 / s3, -1 / s3}},
		{"mean only", []float64{1, 0, 0}, false, []float64{2.0 / 3, -1.0 / 3, -1.0 / 3}},
		{"group of one", []float64{0.7}, true, []float64{0}},
		{"all equal", []float64{0.1, 0.1, 0.1}, true, []float64{0, 0, 0}},
		{"empty", nil, true, []float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFloats(t, GRPOAdvantages(tt.rewards, tt.normByStd, 0), tt.want)
		})
	}
}

func TestRLOOAdvantages(t *testing.T) {
	tests := []struct {
		name    string
		rewards []float64
		want    []float64
	}{
		{"one of three", []float64{1, 0, 0}, []float64{1, -0.5, -0.5}},
		{"half correct", []float64{1, 0, 0, 1}, []float64{2.0 / 3, -2.0 / 3, -2.0 / 3, 2.0 / 3}},
		{"graded", []float64{0.5, 1}, []float64{-0.5, 0.5}},
		{"group of one", []float64{0.3}, []float64{0}},
		{"all equal", []float64{0.1, 0.1, 0.1}, []float64{0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFloats(t, RLOOAdvantages(tt.rewards), tt.want)
		})
	}
}

func TestAdvantages(t *testing.T) {
	rewards := []float64{1, 0}
	tests := []struct {
		name    string
		opts    AdvantageOptions
		want    []float64
		wantErr error
	}{
		// mean 1/2, sample std sqrt(1/2): ±(1/2)/(sqrt(1/2)+1e-6).
		{"default grpo", AdvantageOptions{}, []float64{0.5 / (math.Sqrt(0.5) + 1e-6), -0.5 / (math.Sqrt(0.5) + 1e-6)}, nil},
		{"grpo epsilon", AdvantageOptions{Estimator: "grpo", Epsilon: 0.5}, []float64{0.5 / (math.Sqrt(0.5) + 0.5), -0.5 / (math.Sqrt(0.5) + 0.5)}, nil},
		{"grpo mean only", AdvantageOptions{NoStdNorm: true}, []float64{0.5, -0.5}, nil},
		{"rloo", AdvantageOptions{Estimator: "rloo"}, []float64{1, -1}, nil},
		{"unknown", AdvantageOptions{Estimator: "ppo"}, nil, ErrUnknownEstimator},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Advantages(rewards, tt.opts)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil {
				assertFloats(t, got, tt.want)
			}
		})
	}
}
