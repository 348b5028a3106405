//go:build !linux

package boottime

import "time"

// Now returns the time since the process started by Go's monotonic clock.
func Now() time.Duration { return fallback() }
