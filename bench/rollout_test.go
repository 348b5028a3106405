package main

import (
	"testing"
	"time"
)

// BenchmarkRollout runs the rollout benchmark of the bench command:
// 1,000 tasks × 4 chains of react on an instant scripted model at
// max_concurrency 256 (one rollout per iteration).
//
//	go test -run XXX -bench Rollout -benchtime 1x ./bench
func BenchmarkRollout(b *testing.B) {
	for range b.N {
		s, err := Rollout(RolloutConfig{Tasks: 1000, Chains: 4, Concurrency: 256, Episodes: true})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(s.Wall.Seconds(), "wall-s")
		b.ReportMetric(float64(s.PerSample)/float64(time.Microsecond), "µs/sample")
		b.ReportMetric(float64(s.MeanSample)/float64(time.Millisecond), "ms-latency/sample")
		b.ReportMetric(float64(s.PeakHeap)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(s.VmHWM)/(1<<20), "VmHWM-MiB")
		b.ReportMetric(float64(s.Transitions)/s.Wall.Seconds(), "transitions/s")
	}
}

func TestRolloutSmall(t *testing.T) {
	s, err := Rollout(RolloutConfig{Tasks: 50, Chains: 4, Concurrency: 32, Episodes: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Samples != 200 || s.CorrectRate != 1 {
		t.Fatalf("%+v", s)
	}
}
