// Package isolation keeps the programs flock starts — the bash and python
// of runs, scorers, external agent programs and the programs of sandbox
// sessions — away from flock itself: its memory, its environment (the auth
// token, provider keys) and its data directory (flock.db, other runs' work
// directories, other sessions' workspaces). It is the one place where that
// is decided: every caller resolves its isolation with Policy.Resolve,
// wraps its command line with Wrap and builds its environment with
// Environ.
//
// # flock's own process
//
// ProtectSelf, first in main, makes flock non-dumpable and, when it runs
// as root, removes CAP_SYS_PTRACE, CAP_SYS_ADMIN, CAP_SYS_MODULE,
// CAP_SYS_RAWIO, CAP_PERFMON and CAP_BPF from its capability bounding set
// (re-executing itself once so that every thread has the lowered set). A
// non-dumpable process's /proc/PID/environ, mem, maps and fd links are
// refused to every process without CAP_SYS_PTRACE, its own user's
// included, and no program flock starts can hold that capability: this
// holds with and without bubblewrap. Non-dumpable alone would not do for
// root: a root child keeps CAP_SYS_PTRACE unless the bounding set loses it.
//
// # Policy
//
// The operator chooses (server setting isolation, flag --isolation):
//
//   - auto (the default): bwrap wherever it can run (Available), else no
//     isolation, said once at start-up (Warning) with what that exposes:
//     the data directory, not flock's memory or environment;
//   - bwrap: always; start-up fails where bwrap cannot run (Check);
//   - none: the operator opts out by name.
//
// A run's settings.isolation may ask for more ("bwrap": a private /tmp and
// no network unless network: true) under any policy, and for "none" only
// where the policy's default is none already: a run cannot turn off what
// the operator turned on (ErrNotAllowed). A sandbox config's per-backend
// "isolation" is the operator's, so its "none" opts out.
//
// The default isolation (Policy.Default) is bwrap with the network and the
// host's /tmp shared writable: a program keeps what it would have
// unisolated except the data directory, flock's processes, its
// capabilities, and writes outside its work directory and /tmp. External
// agents always get the network (their model gateway is on it).
//
// # What bwrap protects against
//
//   - Reading the server's data directory and, through it, other runs'
//     work, events and results: every hidden path (Wrap's hidden) is covered
//     by an empty tmpfs. A work directory inside a hidden path is bound back
//     on top, so a run sees only its own directory.
//   - Seeing or signalling the server's and other runs' processes (own PID
//     namespace: flock's PID does not exist in the sandbox's /proc), and
//     System V IPC and hostname changes (own IPC and UTS namespaces).
//   - Privilege: the sandbox holds no capabilities (--cap-drop ALL), so
//     root in it cannot undo the mounts, reach the host's devices or
//     ptrace anything.
//   - Writes outside the work directory: the whole filesystem is mounted
//     read-only except the work directory, /tmp (private per sandbox for
//     kind bwrap, the host's for the default isolation) and a fresh /dev.
//   - Network access, unless the isolation has the network: the sandbox
//     then has its own network namespace with only a loopback interface,
//     which is not the host's loopback (services on the host's 127.0.0.1
//     are out of reach).
//   - Outliving the server: --die-with-parent kills the sandbox when the
//     process that started bwrap dies (the handlers' per-session reaper,
//     which itself ends its whole tree when the server dies).
//
// # What it does not protect against
//
//   - A hostile program: bubblewrap shares the host kernel, so a kernel
//     exploit escapes it. It is a guard rail, not a VM.
//   - Resource exhaustion: there are no cgroup limits. Memory, CPU, process
//     count and disk use in the work directory and /tmp (tmpfs: RAM) are
//     bounded only by the operation timeouts and the host.
//   - Reading the rest of the system: everything not hidden stays readable,
//     including /etc, /home, other users' world-readable files and /sys
//     (the host's, so /sys/class/net still lists the host's interfaces
//     even when the network is off). Pass every sensitive directory in
//     hidden.
//   - With the host's /tmp shared (the default isolation), files other
//     programs leave in /tmp.
//
// Without bwrap (policy none, or auto where bwrap cannot run) a program
// runs as the server's user with its view of the system: flock's memory
// and environment stay out of reach (above), but the data directory, other
// runs' and sessions' files, the files flock read its token and settings
// from, and the environments of flock's other children (an external
// agent's gateway token) do not. This is so for a server run by root and
// by any other user alike (e2e TestSecretsOutOfReachAsUser).
//
// # Environment
//
// Environ builds every program's environment from an allowlist of flock's
// (PATH, HOME, USER, LOGNAME, SHELL, LANG, LANGUAGE, LC_*, TZ, TERM, and
// TMPDIR for unisolated programs) plus what the caller means to give.
// Nothing else passes, whatever it is called: PGPASSWORD, OPENAI_KEY,
// TOKEN, GITHUB_PAT, AWS_ACCESS_KEY_ID and SSH_AUTH_SOCK stay out as
// surely as *_API_KEY. A run passes more of flock's variables only by
// naming them where the operator allows (the external workflow's pass_env
// against the server setting pass_env; Lookup reads them).
//
// # Caveats
//
// The sandbox does not start a new session (no --new-session): bash's job
// control on a pty needs the controlling terminal. The flip side is that a
// program in the sandbox could inject input into that terminal with the
// TIOCSTI ioctl on kernels that still allow it. Inherited file descriptors
// are passed through (the python driver's protocol pipes rely on this).
//
// bwrap must be able to create namespaces: it fails inside most
// unprivileged containers and where unprivileged user namespaces are
// disabled (flock run as root without CAP_SYS_ADMIN needs them too);
// Available reports that case with bwrap's own message.
package isolation
