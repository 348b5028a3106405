package grading

import (
	"errors"
	"math"
	"testing"
)

func TestSegmentRewards(t *testing.T) {
	tests := []struct {
		name   string
		mode   string
		reward float64
		n      int
		gamma  float64
		want   []float64
	}{
		{"last only", RewardLastOnly, 1, 3, 0, []float64{0, 0, 1}},
		{"default is last only", "", 1, 3, 0, []float64{0, 0, 1}},
		{"broadcast", RewardBroadcast, 1, 3, 0, []float64{1, 1, 1}},
		{"uniform", RewardUniform, 1, 3, 0, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}},
		{"uniform negative", RewardUniform, -2, 4, 0, []float64{-0.5, -0.5, -0.5, -0.5}},
		// Weights 0.25, 0.5, 1 over their sum 1.75.
		{"geometric half", RewardGeometric, 1, 3, 0.5, []float64{1.0 / 7, 2.0 / 7, 4.0 / 7}},
		// Weights 0.81, 0.9, 1 over 2.71, times 2.
		{"geometric 0.9", RewardGeometric, 2, 3, 0.9, []float64{1.62 / 2.71, 1.8 / 2.71, 2 / 2.71}},
		{"geometric one is uniform", RewardGeometric, 1, 4, 1, []float64{0.25, 0.25, 0.25, 0.25}},
		{"one segment geometric", RewardGeometric, 0.8, 1, 0.5, []float64{0.8}},
		{"one segment uniform", RewardUniform, 0.8, 1, 0, []float64{0.8}},
		{"no segments", RewardUniform, 1, 0, 0, []float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SegmentRewards(tt.mode, tt.reward, tt.n, tt.gamma)
			if err != nil {
				t.Fatal(err)
			}
			assertFloats(t, got, tt.want)
		})
	}
}

func TestSegmentRewardsErrors(t *testing.T) {
	tests := []struct {
		name    string
		mode    string
		gamma   float64
		wantErr error
	}{
		{"unknown mode", "exponential", 0.5, ErrUnknownRewardMode},
		{"gamma zero", RewardGeometric, 0, ErrInvalidGamma},
		{"gamma above one", RewardGeometric, 1.5, ErrInvalidGamma},
		{"gamma negative", RewardGeometric, -0.5, ErrInvalidGamma},
		{"gamma NaN", RewardGeometric, math.NaN(), ErrInvalidGamma},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := SegmentRewards(tt.mode, 1, 3, tt.gamma); !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
