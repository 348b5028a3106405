package testkit

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatalf records the message and ends the
// goroutine, as the real one does.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f with a recorder on its own goroutine and returns what Fatalf
// said ("" when f returned normally).
func run(t *testing.T, f func(tb testing.TB)) string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.msg
}

func TestWaitWithin(t *testing.T) {
	tests := []struct {
		name  string
		after int32 // calls before cond holds; -1 never
		want  string
	}{
		{name: "at once", after: 0},
		{name: "after a few polls", after: 5},
		{name: "never", after: -1, want: "timed out after 50ms waiting for the flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			start := time.Now()
			got := run(t, func(tb testing.TB) {
				// Only the test that never holds waits out a short
				// deadline; the others may take as long as a loaded
				// machine needs for their few polls.
				within := DefaultTimeout
				if tt.after < 0 {
					within = 50 * time.Millisecond
				}
				WaitWithin(tb, within, "the flag", func() bool {
					return tt.after >= 0 && calls.Add(1) > tt.after
				})
			})
			if got != tt.want {
				t.Fatalf("Fatalf said %q, want %q", got, tt.want)
			}
			if tt.after >= 0 && time.Since(start) > DefaultTimeout/2 {
				t.Fatalf("took %v", time.Since(start))
			}
		})
	}
}

func TestCheckForReportsLastError(t *testing.T) {
	var n atomic.Int32
	got := run(t, func(tb testing.TB) {
		CheckFor(tb, 30*time.Millisecond, func() error { return fmt.Errorf("attempt %d: %w", n.Add(1), errors.ErrUnsupported) })
	})
	if !strings.HasPrefix(got, "timed out after 30ms: attempt ") || !strings.HasSuffix(got, fmt.Sprintf("attempt %d: unsupported operation", n.Load())) {
		t.Fatalf("Fatalf said %q after %d attempts", got, n.Load())
	}
	if got := run(t, func(tb testing.TB) { CheckFor(tb, time.Second, func() error { return nil }) }); got != "" {
		t.Fatalf("a check that passes failed: %q", got)
	}
}
