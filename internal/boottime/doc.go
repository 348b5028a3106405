// Package boottime reads a clock that keeps counting while the process
// is stopped (SIGSTOP, a debugger, a frozen VM) and while the machine is
// suspended: what a cluster node measures its leases with, since a lease
// lapses in the other nodes' time however long this one was away.
//
// On Linux it is CLOCK_BOOTTIME. Go's own monotonic clock (time.Now,
// time.Since) is CLOCK_MONOTONIC there, which counts a stopped process's
// time but not a suspended machine's. Elsewhere Now falls back to Go's
// monotonic clock, which counts a stopped process's time and, depending
// on the system, may miss a suspension.
//
// # Caveats
//
// Readings are only comparable within one process (and one boot); they
// are durations from an arbitrary origin, not times of day.
package boottime
