package testkit

import (
	"fmt"
	"path/filepath"
	"testing"
)

// MarkerFile is the marker file of command i of script run k under dir:
// the crash tests' commands append a line to it each time they run.
func MarkerFile(dir string, k, i int) string {
	return filepath.Join(dir, fmt.Sprintf("r%d_c%02d", k, i))
}

// MarkerCommand is command i of script run k of the crash tests: it
// appends a line to its MarkerFile under dir, then sleeps sleep seconds.
func MarkerCommand(dir string, k, i int, sleep string) string {
	return fmt.Sprintf("echo ran >> %s; sleep %s", MarkerFile(dir, k, i), sleep)
}

// CheckRanOnce fails tb unless command i of script run k ran once, going
// by its MarkerFile under dir, or twice if its op was tried more than once
// (attempts, as journaled: a crash interrupted it and it ran again). It
// reports whether the command was interrupted.
func CheckRanOnce(tb testing.TB, dir string, k, i, attempts int) bool {
	tb.Helper()
	n := CountLines(tb, MarkerFile(dir, k, i))
	switch {
	case n == 0:
		tb.Fatalf("run %d command %d never ran", k, i)
	case attempts <= 1 && n != 1:
		tb.Fatalf("run %d command %d ran %d times though it was never interrupted", k, i, n)
	case n > 2:
		tb.Fatalf("run %d command %d ran %d times, more than twice", k, i, n)
	}
	return attempts > 1
}
