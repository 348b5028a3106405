package testkit

import (
	"testing"
	"time"
)

// DefaultTimeout is WaitFor's deadline: generous, so that a loaded machine
// (-race, parallel packages) does not fail a test that is merely slow.
const DefaultTimeout = 20 * time.Second

// Poll intervals: the first poll waits minPoll, each next one twice as
// long, up to maxPoll.
const (
	minPoll = time.Millisecond
	maxPoll = 20 * time.Millisecond
)

// WaitFor polls cond until it returns true, or fails tb with "timed out
// waiting for <what>" after DefaultTimeout.
func WaitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	WaitWithin(tb, DefaultTimeout, what, cond)
}

// WaitWithin is WaitFor with the deadline d.
func WaitWithin(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !poll(d, cond) {
		tb.Fatalf("timed out after %v waiting for %s", d, what)
	}
}

// CheckFor polls check until it returns nil, or fails tb after d with the
// last error check returned.
func CheckFor(tb testing.TB, d time.Duration, check func() error) {
	tb.Helper()
	var last error
	if !poll(d, func() bool { last = check(); return last == nil }) {
		tb.Fatalf("timed out after %v: %v", d, last)
	}
}

// poll calls done until it returns true, and reports false when d passed
// first. done is called once more after the last wait, so a condition
// that came true during it counts.
func poll(d time.Duration, done func() bool) bool {
	deadline := time.Now().Add(d)
	wait := minPoll
	for !done() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait)
		wait = min(2*wait, maxPoll)
	}
	return true
}
