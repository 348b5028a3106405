//go:build !linux && !windows

package shell

import (
	"os"
	"syscall"
)

// initPrefix turns echo off from inside the shell where termios is not
// configured from Go; the echoed init line itself is discarded with the rest
// of the output that precedes the ready marker.
const initPrefix = "stty -echo -onlcr 2>/dev/null; "

// configureTTY puts the master in non-blocking mode so that Close
// interrupts a pending Read.
func configureTTY(ptmx *os.File) error {
	rc, err := ptmx.SyscallConn()
	if err != nil {
		return err
	}
	var opErr error
	if err := rc.Control(func(fd uintptr) { opErr = syscall.SetNonblock(int(fd), true) }); err != nil {
		return err
	}
	return opErr
}

// resetTTY does nothing where termios is not configured from Go.
func resetTTY(*os.File) error { return nil }
