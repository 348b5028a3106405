//go:build linux

package isolation

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"
)

// prctl options (linux/prctl.h) and capability numbers
// (linux/capability.h).
const (
	prSetDumpable = 4
	prCapbsetRead = 23
	prCapbsetDrop = 24

	capSysModule = 16
	capSysRawio  = 17
	capSysPtrace = 19
	capSysAdmin  = 21
	capPerfmon   = 38
	capBPF       = 39

	linuxCapabilityVersion3 = 0x20080522
)

// childCaps are the capabilities no program flock starts may hold: each
// reaches into another process's memory or environment, or past the
// checks that guard them (ptrace and /proc/PID/{environ,mem}, kernel
// modules, raw I/O, BPF and perf events, and CAP_SYS_ADMIN, which also
// stands in for the last two).
var childCaps = []uintptr{capSysPtrace, capSysAdmin, capSysModule, capSysRawio, capPerfmon, capBPF}

// protectSelf makes the process non-dumpable and keeps childCaps from
// every program it will start. Capability sets are per thread, and a
// thread's children inherit that thread's sets, so the bounding set is
// lowered on one locked thread which then re-executes the binary: the new
// image starts with that thread's sets, and every thread it makes copies
// them. A process that may not lower its bounding set (no CAP_SETPCAP:
// not root) skips that step; its children have none of these
// capabilities to begin with.
func protectSelf() error {
	if held := boundingHolds(); len(held) > 0 {
		runtime.LockOSThread()
		dropped := 0
		for _, c := range held {
			if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prCapbsetDrop, c, 0); e == 0 {
				dropped++
			}
		}
		if dropped > 0 && len(boundingHolds()) == 0 {
			clearInheritable()
			// By its path, so that the process keeps its name (exec of
			// /proc/self/exe would call it "exe"); the link itself when
			// the file is gone.
			exe, err := os.Executable()
			if err != nil || strings.HasSuffix(exe, " (deleted)") {
				exe = "/proc/self/exe"
			}
			// Exec only returns on failure; then the process goes on
			// with this thread's sets lowered and the others' not.
			err = syscall.Exec(exe, os.Args, os.Environ())
			runtime.UnlockOSThread()
			return fmt.Errorf("re-executing %s with a lowered capability bounding set: %w", exe, err)
		}
		runtime.UnlockOSThread()
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0); e != 0 {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", e)
	}
	return nil
}

// boundingHolds lists the childCaps the calling thread's bounding set
// still holds (a capability the kernel does not know counts as absent).
func boundingHolds() []uintptr {
	var held []uintptr
	for _, c := range childCaps {
		if r, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prCapbsetRead, c, 0); e == 0 && r == 1 {
			held = append(held, c)
		}
	}
	return held
}

// capHeader and capData are the capget/capset structures (version 3:
// two 32-bit words per set).
type capHeader struct {
	version uint32
	pid     int32
}

type capData struct {
	effective, permitted, inheritable uint32
}

// clearInheritable removes childCaps from the calling thread's
// inheritable set: for root, exec grants the inheritable set whatever the
// bounding set says.
func clearInheritable() {
	h := capHeader{version: linuxCapabilityVersion3}
	var d [2]capData
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&d[0])), 0); e != 0 {
		return
	}
	for _, c := range childCaps {
		d[c/32].inheritable &^= 1 << (c % 32)
	}
	_, _, _ = syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&d[0])), 0)
}

// dumpable reports the process's dumpable flag (tests).
func dumpable() bool {
	r, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, 3 /* PR_GET_DUMPABLE */, 0, 0)
	return e == 0 && r != 0
}
