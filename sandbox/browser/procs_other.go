//go:build !linux

package browser

import "time"

// profileProcesses finds nothing off Linux: there the allocator's own kill
// of the main process is all the cleanup.
func profileProcesses(string) []int { return nil }

func killProfileProcesses(string, time.Duration) int { return 0 }
