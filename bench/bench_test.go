package main

import (
	"testing"
	"time"
)

// These benchmarks run the scenarios of the bench command under go test:
//
//	go test -run XXX -bench . ./bench

func report(b *testing.B, s TransitionStats) {
	b.ReportMetric(float64(s.P50)/float64(time.Microsecond), "p50-µs")
	b.ReportMetric(float64(s.P90)/float64(time.Microsecond), "p90-µs")
	b.ReportMetric(s.PerSecond, "transitions/s")
	b.ReportMetric(s.BytesPerTransition, "B/transition")
}

func BenchmarkTransitionOneRun(b *testing.B) {
	s, err := Transitions(1, max(b.N, 10), 0, 200)
	if err != nil {
		b.Fatal(err)
	}
	report(b, s)
}

func BenchmarkTransitionsConcurrent1000(b *testing.B) {
	steps := max(b.N/1000, 5)
	s, err := Transitions(1000, steps, 0, 200)
	if err != nil {
		b.Fatal(err)
	}
	report(b, s)
}

func BenchmarkTransitionHistory(b *testing.B) {
	for _, prefill := range []int{10, 10000} {
		b.Run(map[int]string{10: "entries=10", 10000: "entries=10000"}[prefill], func(b *testing.B) {
			s, err := Transitions(1, max(b.N, 10), prefill, 200)
			if err != nil {
				b.Fatal(err)
			}
			report(b, s)
		})
	}
}

func BenchmarkScriptVersusFork(b *testing.B) {
	n := max(b.N, 50)
	script, fork, err := ScriptVersusFork(n)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(script)/float64(n)/float64(time.Microsecond), "script-µs/cmd")
	b.ReportMetric(float64(fork)/float64(n)/float64(time.Microsecond), "fork-µs/cmd")
}

func BenchmarkShellRoundTrip(b *testing.B) {
	s, err := ShellRoundTrip(max(b.N, 50))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(s.P50)/float64(time.Microsecond), "op-p50-µs")
	b.ReportMetric(1e6/s.PerSecond, "step-µs")
}

// BenchmarkSnapshotStep measures what the work-dir snapshot adds to a
// step (see SnapshotStep): 1,000 files of 4 KiB, one rewritten per step,
// and a 256 MiB sparse file holding 4 KiB (the store before issue 23.5's follow-up
// wrote it out whole).
//
//	go test -run XXX -bench SnapshotStep -benchtime 1x ./bench
func BenchmarkSnapshotStep(b *testing.B) {
	for range b.N {
		s, err := SnapshotStep(1000, 200, 256<<20)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(s.With)/float64(time.Microsecond), "step-gap-µs")
		b.ReportMetric(float64(s.Without)/float64(time.Microsecond), "step-gap-nosnap-µs")
		b.ReportMetric(float64(s.Sparse)/float64(time.Millisecond), "sparse-step-ms")
		b.ReportMetric(float64(s.SparseWithout)/float64(time.Millisecond), "sparse-step-nosnap-ms")
		b.ReportMetric(float64(s.StoreBytes)/(1<<20), "store-MiB")
	}
}

// BenchmarkLiveRun measures the memory of live, idle runs and the time to
// resume them (see LiveRuns).
func BenchmarkLiveRun(b *testing.B) {
	for _, c := range []struct {
		name          string
		runs, entries int
	}{{"runs=1000/entries=10", 1000, 10}, {"runs=1/entries=100000", 1, 100000}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				s, err := LiveRuns(c.runs, c.entries)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(s.PerRun, "B/run")
				b.ReportMetric(float64(s.Resume)/float64(time.Millisecond), "resume-ms")
			}
		})
	}
}
