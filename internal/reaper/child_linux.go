//go:build linux

package reaper

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER from linux/prctl.h.
const prSetChildSubreaper = 36

// init turns the process into a reaper when it was started as one (see
// Start) and never returns in that case.
func init() {
	if len(os.Args) > 0 && os.Args[0] == ArgvZero {
		os.Exit(runReaper(os.Args[1:]))
	}
}

// runReaper is the reaper's main: args are the mode ("tty" or "pgrp"), the
// number of extra fds, the server's PID, the child's path and its argv.
// It returns the exit code when it does not die of the child's signal.
func runReaper(args []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "flock-reaper: "+format+"\n", a...)
		return 127
	}
	if len(args) < 5 {
		return fail("usage: %s tty|pgrp NFDS PARENT PATH ARGV...", ArgvZero)
	}
	tty := args[0] == "tty"
	nfds, err1 := strconv.Atoi(args[1])
	parent, err2 := strconv.Atoi(args[2])
	if err1 != nil || err2 != nil || nfds < 0 || (args[0] != "tty" && args[0] != "pgrp") {
		return fail("bad arguments %q", args[:3])
	}
	path, argv := args[3], args[4:]

	// Catch before anything can arrive: the parent-death signal (SIGTERM),
	// Kill (SIGTERM), children exiting (SIGCHLD) and interrupts to forward.
	sigs := make(chan os.Signal, 64)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGCHLD)
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0, 0, 0, 0); e != 0 {
		return fail("prctl(PR_SET_CHILD_SUBREAPER): %v", e)
	}
	if os.Getppid() != parent {
		return 128 + int(syscall.SIGTERM) // the server died before we were ready
	}

	files := make([]uintptr, 3+nfds)
	for i := range files {
		files[i] = uintptr(i)
	}
	attr := &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: files,
		Sys: &syscall.SysProcAttr{
			Setsid:    tty,
			Setctty:   tty,
			Ctty:      0,
			Setpgid:   !tty,
			Pdeathsig: syscall.SIGKILL,
		},
	}
	child, err := syscall.ForkExec(path, argv, attr)
	if err != nil {
		return fail("start %s: %v", path, err)
	}
	releaseFiles(nfds)

	for sig := range sigs {
		switch sig {
		case syscall.SIGCHLD:
			if ws, done := reapAll(child); done {
				_ = sweep(os.Getpid(), nil)
				reapAll(0)
				return exitLike(ws)
			}
		case syscall.SIGINT:
			_ = syscall.Kill(-child, syscall.SIGINT)
			_ = syscall.Kill(child, syscall.SIGINT)
		default: // SIGTERM, SIGHUP, SIGQUIT: end everything
			_ = syscall.Kill(-child, syscall.SIGKILL)
			_ = syscall.Kill(child, syscall.SIGKILL)
			_ = sweep(os.Getpid(), nil)
			var ws syscall.WaitStatus
			if _, err := syscall.Wait4(child, &ws, 0, nil); err != nil {
				ws = syscall.WaitStatus(syscall.SIGKILL) // reaped already by a SIGCHLD round
			}
			reapAll(0)
			return exitLike(ws)
		}
	}
	return 0
}

// releaseFiles points fds 0-2 at /dev/null and closes the extra fds, so
// that the reaper holds none of the child's terminal or pipes open.
func releaseFiles(nfds int) {
	if null, err := syscall.Open("/dev/null", syscall.O_RDWR, 0); err == nil {
		for fd := range 3 {
			_ = syscall.Dup3(null, fd, 0)
		}
		if null > 2 {
			_ = syscall.Close(null)
		}
	}
	for fd := 3; fd < 3+nfds; fd++ {
		_ = syscall.Close(fd)
	}
}

// reapAll reaps every child that has exited, without blocking, and
// reports the status of child when it was among them.
func reapAll(child int) (syscall.WaitStatus, bool) {
	var found syscall.WaitStatus
	done := false
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return found, done
		}
		if pid == child && child > 0 {
			found, done = ws, true
		}
	}
}

// exitLike ends the reaper the way the child ended: with its exit code, or
// by the same signal (with the default action restored and no core dump).
// It returns 128+signal if raising did not end the process.
func exitLike(ws syscall.WaitStatus) int {
	if !ws.Signaled() {
		return ws.ExitStatus()
	}
	sig := ws.Signal()
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
	signal.Reset(sig)
	// SIG_DFL: an all-zero struct sigaction, whatever its layout.
	var act [8]uint64
	_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	_ = syscall.Kill(os.Getpid(), sig)
	time.Sleep(100 * time.Millisecond) // delivery is asynchronous
	return 128 + int(sig)
}
