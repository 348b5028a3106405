// Package isolation builds the command lines that run bash and python
// operations isolated from the host, as selected by a run's settings.isolation
// (its deprecated name, settings.sandbox, still works: see configs).
//
// # Kinds
//
// "none" (or "") runs commands as they are, with the server's user and
// view of the system. "bwrap" runs them under bubblewrap
// (https://github.com/containers/bubblewrap), which must be installed; use
// Available to check once at start-up.
//
// # What bwrap protects against
//
//   - Accidental or careless writes outside the run's work directory: the
//     whole filesystem is mounted read-only except the work directory, a
//     private /tmp (a fresh tmpfs per sandbox, gone when it ends) and a
//     fresh /dev.
//   - Reading the server's data directory and, through it, other runs'
//     work, events and results: every hidden path (Wrap's hidden) is covered
//     by an empty tmpfs. A work directory inside a hidden path is bound back
//     on top, so a run sees only its own directory.
//   - Network access, unless settings.isolation.network is true: the sandbox
//     has its own network namespace with only a loopback interface, which
//     is not the host's loopback (services on the host's 127.0.0.1 are out
//     of reach).
//   - Seeing or signalling the server's and other runs' processes (own PID
//     namespace), and System V IPC and hostname changes (own IPC and UTS
//     namespaces).
//   - Outliving the server: --die-with-parent kills the sandbox when the
//     process that started bwrap dies (the handlers' per-session reaper,
//     which itself ends its whole tree when the server dies).
//
// # What it does not protect against
//
//   - A hostile program: bubblewrap shares the host kernel, so a kernel
//     exploit escapes it. It is a guard rail against accidents and sloppy
//     agents, not a security boundary for untrusted code; use a VM for that.
//   - Resource exhaustion: there are no cgroup limits. Memory, CPU, process
//     count and disk use in the work directory and /tmp (tmpfs: RAM) are
//     bounded only by the operation timeouts and the host.
//   - Reading the rest of the system: everything not hidden stays readable,
//     including /etc, /home, other users' world-readable files, the
//     server's environment-independent configuration and /sys (the host's,
//     so /sys/class/net still lists the host's interfaces even when the
//     network is off). Pass every sensitive directory in hidden.
//   - Secrets in the environment: bwrap passes the environment through;
//     callers must build a clean one (the python handler uses an
//     allow-list).
//   - Inherited file descriptors are passed through (the python driver's
//     protocol pipes rely on this).
//
// # Caveats
//
// The sandbox does not start a new session (no --new-session): bash's job
// control on a pty needs the controlling terminal. The flip side is that a
// program in the sandbox could inject input into that terminal with the
// TIOCSTI ioctl on kernels that still allow it.
//
// bwrap must be able to create namespaces: it fails inside most unprivileged
// containers and where unprivileged user namespaces are disabled; Available
// reports that case with bwrap's own message.
package isolation
