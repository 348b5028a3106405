//go:build linux

package reaper

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// Start starts a reaper running s. The reaper and everything under it
// end when Kill is called, when the child exits, or when the calling
// process dies.
func Start(s Spec) (*Process, error) {
	if s.Path == "" || len(s.Args) == 0 {
		return nil, fmt.Errorf("%w: no path or args", ErrBadSpec)
	}
	mode := "pgrp"
	if s.TTY {
		mode = "tty"
	}
	args := append([]string{ArgvZero, mode, strconv.Itoa(len(s.ExtraFiles)), strconv.Itoa(os.Getpid()), s.Path}, s.Args...)
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       args,
		Dir:        s.Dir,
		Env:        s.Env,
		Stdin:      s.Stdin,
		Stdout:     s.Stdout,
		Stderr:     s.Stderr,
		ExtraFiles: s.ExtraFiles,
		// Its own session, without a terminal: a Ctrl-C at the server's
		// terminal does not reach it. The parent-death signal is one it
		// catches, so that it can end its tree before it exits.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGTERM},
	}
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start reaper: %w", err)
	}
	return &Process{cmd: cmd}, nil
}

// Interrupt asks the reaper to send SIGINT to the child's process group and
// to the child. It does nothing once the reaper has been waited for.
func (p *Process) Interrupt() {
	_ = p.cmd.Process.Signal(syscall.SIGINT)
}

// Kill asks the reaper to kill the child and every descendant and to exit;
// Wait returns once that is done. It does nothing once the reaper has been
// waited for, and is safe to call more than once.
func (p *Process) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
}

// KillDescendants kills, from the calling process, every descendant of the
// reaper except the process whose PID, as seen in its own PID namespace, is
// keep, and that process's ancestors. keep is typically the PID a program
// reported about itself (os.getpid() inside a bwrap sandbox is not the
// host's PID). It returns ErrNotFound, killing nothing, when keep is not
// among the descendants.
func (p *Process) KillDescendants(keep int) error {
	root := p.cmd.Process.Pid
	procs, err := scan()
	if err != nil {
		return err
	}
	spare := map[int]bool{}
	for _, pid := range procs.descendants(root) {
		if nsPid(pid) == keep {
			for q := pid; q != root && q > 1 && !spare[q]; q = procs[q].ppid {
				spare[q] = true
			}
			break
		}
	}
	if len(spare) == 0 {
		return fmt.Errorf("%w: pid %d under %d", ErrNotFound, keep, root)
	}
	return sweep(root, spare)
}
