//go:build !linux && !windows

package bash

import "syscall"

// dieWithServer is a no-op where the kernel offers no parent-death signal;
// a shell then ends when its terminal hangs up.
func dieWithServer(*syscall.SysProcAttr) {}
