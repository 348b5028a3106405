package browser

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// profileProcesses returns the pids of the processes started with
// --user-data-dir=profile. Chromium passes the flag to every child (zygote,
// renderers, utilities), and each session's profile is unique, so this finds
// exactly one session's processes.
func profileProcesses(profile string) []int {
	want := []byte("--user-data-dir=" + profile)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		for arg := range bytes.SplitSeq(cmdline, []byte{0}) {
			if bytes.Equal(arg, want) {
				if !isZombie(e.Name()) {
					pids = append(pids, pid)
				}
				break
			}
		}
	}
	return pids
}

func isZombie(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return true // gone
	}
	// The state follows the command name in parentheses.
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] == 'Z'
	}
	return false
}

// killProfileProcesses SIGKILLs the processes of profile until none is left
// for a few passes in a row (a child may fork while its parent dies), or
// until limit. It returns how many it killed, or -1 when some survived.
func killProfileProcesses(profile string, limit time.Duration) int {
	const quietPasses = 3
	killed := 0
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for quiet := 0; quiet < quietPasses; {
		pids := profileProcesses(profile)
		if len(pids) == 0 {
			quiet++
		} else {
			quiet = 0
			for _, pid := range pids {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					killed++
				}
			}
		}
		if time.Now().After(deadline) {
			if len(profileProcesses(profile)) > 0 {
				return -1
			}
			return killed
		}
		<-tick.C
	}
	return killed
}
