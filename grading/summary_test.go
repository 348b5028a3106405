package grading

import (
	"maps"
	"testing"
)

func TestSummarize(t *testing.T) {
	samples := []Sample{
		{TaskID: "a", Score: 1, Correct: true, Signals: map[string]float64{"tests": 1}},
		{TaskID: "a", Score: 0, Signals: map[string]float64{"tests": 0.5}},
		// Failed: its score and correctness are ignored, it still counts.
		{TaskID: "a", Score: 0.7, Correct: true, Failed: true},
		{TaskID: "b", Score: 0.5, Signals: map[string]float64{"tests": 0}},
		{TaskID: "b", Score: 1, Correct: true},
		{TaskID: "b", Score: 1, Correct: true, Signals: map[string]float64{"lint": 1}},
	}
	got := Summarize(samples)
	if got.Samples != 6 || got.Tasks != 2 || got.Failed != 1 || got.Correct != 3 {
		t.Fatalf("counts = %+v", got)
	}
	// (1 + 0 + 0 + 0.5 + 1 + 1) / 6, the failure counted as 0.
	if !near(got.MeanScore, 3.5/6) {
		t.Fatalf("MeanScore = %v, want %v", got.MeanScore, 3.5/6)
	}
	if !near(got.SuccessRate, 5.0/6) || got.Correct != 3 {
		t.Fatalf("SuccessRate = %v, Correct = %v", got.SuccessRate, got.Correct)
	}
	// a: n=3 c=1 -> 1/3, 2/3, 1; b: n=3 c=2 -> 2/3, 1, 1.
	assertFloats(t, got.PassAtK, []float64{0.5, 5.0 / 6, 1})
	want := map[string]float64{"tests": 0.5, "lint": 1}
	if !maps.Equal(got.SignalMeans, want) {
		t.Fatalf("SignalMeans = %v, want %v", got.SignalMeans, want)
	}
}

func TestSummarizeEdges(t *testing.T) {
	tests := []struct {
		name     string
		samples  []Sample
		wantMean float64
		wantPass []float64
	}{
		{"empty", nil, 0, nil},
		{"all failed", []Sample{{TaskID: "a", Failed: true, Score: 1}}, 0, []float64{0}},
		// Task b has one sample, so only pass@1 is defined for all tasks.
		{"uneven chains", []Sample{
			{TaskID: "a", Score: 1, Correct: true},
			{TaskID: "a", Score: 0},
			{TaskID: "b", Score: 1, Correct: true},
		}, 2.0 / 3, []float64{0.75}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summarize(tt.samples)
			if !near(got.MeanScore, tt.wantMean) {
				t.Fatalf("MeanScore = %v, want %v", got.MeanScore, tt.wantMean)
			}
			assertFloats(t, got.PassAtK, tt.wantPass)
			if tt.samples == nil && got.SignalMeans != nil {
				t.Fatalf("SignalMeans = %v, want nil", got.SignalMeans)
			}
		})
	}
}
