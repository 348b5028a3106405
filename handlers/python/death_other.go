//go:build !linux && !windows

package python

import "syscall"

// dieWithServer is a no-op where the kernel offers no parent-death signal;
// an idle interpreter still exits when its request pipe closes.
func dieWithServer(*syscall.SysProcAttr) {}
