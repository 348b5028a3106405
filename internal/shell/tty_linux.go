//go:build linux

package shell

import (
	"os"
	"syscall"
	"unsafe"
)

// initPrefix is prepended to the shell's init line. On Linux the terminal is
// configured before the shell starts, so nothing is needed.
const initPrefix = ""

// ttyModes sets the terminal modes the handler relies on in t: no echo
// (commands sent to the shell must not show up as output), canonical line
// input with signals, and no LF to CRLF translation on output. It reports
// whether t changed.
func ttyModes(t *syscall.Termios) bool {
	old := *t
	t.Lflag &^= syscall.ECHO | syscall.ECHOE | syscall.ECHOK | syscall.ECHONL | syscall.ECHOCTL | syscall.ECHOKE
	t.Lflag |= syscall.ICANON | syscall.ISIG
	t.Oflag &^= syscall.ONLCR
	t.Iflag &^= syscall.IXON
	return *t != old
}

// resetTTY restores the modes of ttyModes if a command changed them (stty
// echo, a full-screen program killed mid-way). It costs one ioctl when
// nothing changed.
func resetTTY(ptmx *os.File) error { return setModes(ptmx, nil) }

// configureTTY turns off echo and output newline translation on the pty and
// puts the master in non-blocking mode so that Close interrupts a pending
// Read. On Linux the termios ioctls on the master act on the slave side. It
// is called before the shell starts, so the shell saves these settings as its
// terminal state.
func configureTTY(ptmx *os.File) error {
	return setModes(ptmx, func(fd uintptr) error { return syscall.SetNonblock(int(fd), true) })
}

// setModes applies ttyModes to the pty of ptmx where they differ, then
// calls then (if not nil) on its descriptor, all inside one Control.
func setModes(ptmx *os.File, then func(fd uintptr) error) error {
	rc, err := ptmx.SyscallConn()
	if err != nil {
		return err
	}
	var opErr error
	err = rc.Control(func(fd uintptr) {
		var t syscall.Termios
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TCGETS, uintptr(unsafe.Pointer(&t))); e != 0 {
			opErr = e
			return
		}
		if ttyModes(&t) {
			if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TCSETS, uintptr(unsafe.Pointer(&t))); e != 0 {
				opErr = e
				return
			}
		}
		if then != nil {
			opErr = then(fd)
		}
	})
	if err != nil {
		return err
	}
	return opErr
}
