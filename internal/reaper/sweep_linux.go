//go:build linux

package reaper

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sweepTimeout bounds a sweep: a process in uninterruptible sleep (a hung
// NFS read) can take a while to die of SIGKILL.
const sweepTimeout = 5 * time.Second

// proc is what the sweep needs of one /proc entry.
type proc struct {
	ppid   int
	zombie bool // dead, waiting to be reaped: nothing left to kill
}

// table maps PIDs to their entry.
type table map[int]proc

// scan reads every process's parent and state from /proc/*/stat.
// Processes that vanish while it reads are skipped.
func scan() (table, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("scan processes: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("scan processes: %w", err)
	}
	t := make(table, len(names))
	buf := make([]byte, 512)
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		ppid, state, ok := readStat(pid, buf)
		if !ok {
			continue
		}
		t[pid] = proc{ppid: ppid, zombie: state == 'Z' || state == 'X'}
	}
	return t, nil
}

// readStat returns the parent PID and state letter of pid. The command
// name in parentheses may contain anything, so fields are read after the
// last ')'.
func readStat(pid int, buf []byte) (ppid int, state byte, ok bool) {
	fd, err := syscall.Open("/proc/"+strconv.Itoa(pid)+"/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0, false
	}
	n, err := syscall.Read(fd, buf)
	_ = syscall.Close(fd)
	if err != nil || n <= 0 {
		return 0, 0, false
	}
	b := buf[:n]
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	if err != nil {
		return 0, 0, false
	}
	return ppid, f[0][0], true
}

// descendants lists every process whose chain of parents leads to root,
// zombies included, parents before their children.
func (t table) descendants(root int) []int {
	children := make(map[int][]int)
	for pid, p := range t {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if c == root {
				continue
			}
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// sweep sends SIGKILL to every live descendant of root not in spare, and
// repeats until none is left or sweepTimeout passes (ErrSurvivors).
func sweep(root int, spare map[int]bool) error {
	deadline := time.Now().Add(sweepTimeout)
	pause := 100 * time.Microsecond
	for {
		t, err := scan()
		if err != nil {
			return err
		}
		left := 0
		for _, pid := range t.descendants(root) {
			if spare[pid] || t[pid].zombie {
				continue
			}
			left++
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %d under pid %d", ErrSurvivors, left, root)
		}
		// Give the killed processes a moment to die before looking again.
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// nsPid returns pid's PID in its innermost PID namespace (the last field of
// NSpid in /proc/PID/status), or pid when the kernel does not say.
func nsPid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return pid
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "NSpid:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			break
		}
		if n, err := strconv.Atoi(f[len(f)-1]); err == nil {
			return n
		}
	}
	return pid
}
