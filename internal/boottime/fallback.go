package boottime

import "time"

// origin is the process's start by Go's monotonic clock.
var origin = time.Now()

// fallback is Go's monotonic clock, as a duration since origin.
func fallback() time.Duration { return time.Since(origin) }
