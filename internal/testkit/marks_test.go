package testkit

import (
	"os/exec"
	"testing"
)

// TestCheckRanOnce runs marker commands through sh and checks the counts
// CheckRanOnce accepts and refuses: once, or twice when interrupted.
func TestCheckRanOnce(t *testing.T) {
	tests := []struct {
		name           string
		runs, attempts int
		want           string
		interrupted    bool
	}{
		{name: "once", runs: 1, attempts: 1},
		{name: "twice, interrupted", runs: 2, attempts: 2, interrupted: true},
		{name: "once, interrupted before it ran", runs: 1, attempts: 2, interrupted: true},
		{name: "never", runs: 0, attempts: 1, want: "run 3 command 1 never ran"},
		{name: "twice, never interrupted", runs: 2, attempts: 1, want: "run 3 command 1 ran 2 times though it was never interrupted"},
		{name: "three times", runs: 3, attempts: 3, want: "run 3 command 1 ran 3 times, more than twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for range tt.runs {
				if out, err := exec.Command("sh", "-c", MarkerCommand(dir, 3, 1, "0")).CombinedOutput(); err != nil {
					t.Fatalf("%v: %s", err, out)
				}
			}
			var interrupted bool
			got := run(t, func(tb testing.TB) { interrupted = CheckRanOnce(tb, dir, 3, 1, tt.attempts) })
			if got != tt.want || (got == "" && interrupted != tt.interrupted) {
				t.Fatalf("CheckRanOnce: %q, interrupted %t; want %q, %t", got, interrupted, tt.want, tt.interrupted)
			}
		})
	}
}
