//go:build linux

package python

import "syscall"

// dieWithServer makes the kernel kill the interpreter when the server dies
// (kill -9 included), so a cell stuck in a loop does not outlive it and run
// on beside its own re-run after the restart.
func dieWithServer(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
