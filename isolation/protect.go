package isolation

// ProtectSelf keeps the programs flock starts out of flock's own process:
// call it first in main, before any secret is read. On Linux it
//
//   - makes the process non-dumpable (prctl PR_SET_DUMPABLE 0), so that
//     /proc/PID/environ, /proc/PID/mem, /proc/PID/fd and ptrace of flock
//     are refused to every process without CAP_SYS_PTRACE, the server's
//     own user included;
//   - when it runs as root, lowers its capability bounding set by
//     CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_SYS_MODULE, CAP_SYS_RAWIO,
//     CAP_PERFMON and CAP_BPF and re-executes itself (once) so that every
//     thread has the lowered set: no program it starts, root or not,
//     bubblewrap or not, can regain them, so none can read flock's memory
//     or environment. flock itself needs none of them (bwrap, which does,
//     then runs in a user namespace, as it does for other users).
//
// It returns an error only when the process could not be made
// non-dumpable or could not re-execute itself; the caller should report
// it and may go on.
func ProtectSelf() error { return protectSelf() }
