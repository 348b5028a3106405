// Package procgroup runs a short-lived program (a probe, a scorer, npm)
// so that waiting for it is bounded by its context: the program runs in
// its own process group, the whole group is killed when the context ends
// and again when the program has exited, and the wait for its output
// stops shortly after the program is gone even where a process it
// started kept the output pipe open (exec.Cmd alone kills only the
// program and then reads the pipe until every holder closes it).
//
// Long-lived programs whose descendants may leave the process group (a
// shell, an interpreter, an external agent) run under package reaper.
package procgroup

import (
	"os/exec"
	"syscall"
	"time"
)

// Run runs cmd, made with exec.CommandContext, as the package doc says:
// waitDelay bounds the wait for its output once it has exited or been
// killed; an error wrapping exec.ErrWaitDelay says a process it started
// kept the output open that long. cmd.SysProcAttr, Cancel and WaitDelay
// are set here.
func Run(cmd *exec.Cmd, waitDelay time.Duration) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = waitDelay
	err := cmd.Run()
	if cmd.Process != nil {
		// Whatever the program left behind in its group goes too.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	return err
}
