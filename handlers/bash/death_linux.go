//go:build linux

package bash

import "syscall"

// dieWithServer makes the kernel kill the shell when the server dies
// (kill -9 included), so no shell outlives it; the commands it runs in the
// foreground get the terminal's hang-up.
func dieWithServer(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
