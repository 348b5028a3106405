//go:build !linux

package reaper

import (
	"fmt"
	"os/exec"
	"syscall"
)

// Start runs s's child directly, in a new session (TTY) or process group:
// there is no subreaper outside Linux, so Kill reaches that group only.
func Start(s Spec) (*Process, error) {
	if s.Path == "" || len(s.Args) == 0 {
		return nil, fmt.Errorf("%w: no path or args", ErrBadSpec)
	}
	cmd := &exec.Cmd{Path: s.Path, Args: s.Args, Dir: s.Dir, Env: s.Env,
		Stdin: s.Stdin, Stdout: s.Stdout, Stderr: s.Stderr, ExtraFiles: s.ExtraFiles}
	if s.TTY {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Path, err)
	}
	return &Process{cmd: cmd}, nil
}

// Interrupt sends SIGINT to the child's process group.
func (p *Process) Interrupt() { _ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT) }

// Kill sends SIGKILL to the child's process group.
func (p *Process) Kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	_ = p.cmd.Process.Kill()
}

// KillDescendants does nothing outside Linux.
func (p *Process) KillDescendants(keep int) error { return nil }
