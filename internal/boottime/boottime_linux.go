//go:build linux

package boottime

import (
	"time"

	"golang.org/x/sys/unix"
)

// Now returns the time since boot, counting suspension (CLOCK_BOOTTIME).
func Now() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		// Every Linux since 2.6.39 has it; a kernel without it still
		// gets a clock that counts a stopped process's time.
		return fallback()
	}
	return time.Duration(ts.Nano())
}
