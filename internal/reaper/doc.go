// Package reaper keeps the processes of one shell or interpreter together,
// so that ending them ends every process they started, including ones that
// left the process group or the session (setsid, double-forking daemons,
// nohup, programs that ignore SIGHUP and SIGTERM).
//
// # Design
//
// Start does not run the child directly. It re-executes the server's own
// binary (/proc/self/exe, so a binary replaced on disk still works) with
// argv[0] set to ArgvZero; the init function of this package recognizes
// that name, runs the reaper instead of the program's main, and exits.
// Every binary that links this package (the flock server, and test binaries
// of packages that import it) can therefore act as a reaper; nothing else
// has to be installed. This is the pattern of docker's pkg/reexec.
//
// The reaper (one small process per shell or interpreter, started once
// per session) makes itself a child subreaper
// (prctl PR_SET_CHILD_SUBREAPER), so that every orphan among its
// descendants is reparented to it instead of to init, then starts the
// child with the terminal or pipes it inherited: for a terminal child, in a
// new session with stdin as its controlling terminal (the shell keeps its
// terminal exactly as when started directly); otherwise in a new process
// group. It then closes its own copies of those descriptors, so it is in
// the process tree only, never in the data path: what the shell reads and
// writes costs the same as without it.
//
// The reaper ends the whole tree, then exits, when:
//
//   - the child exits (the reaper then exits with the child's status: the
//     same exit code, or dies of the same signal, so callers see what they
//     would have seen without it);
//   - it receives SIGTERM or SIGHUP, which is what Process.Kill sends;
//   - the server dies, kill -9 included: the reaper is started with
//     PR_SET_PDEATHSIG set to SIGTERM, a signal it catches, and it also
//     checks at start that the server is still its parent.
//
// Ending the tree means: SIGKILL to the child's process group and the
// child, then repeatedly walking /proc (every process whose chain of
// parents leads to the reaper) and sending SIGKILL to each live one until
// none is left. A process cannot escape the walk by forking, since the
// parent is found first and its children are reparented to the reaper when
// it dies. SIGINT received by the reaper is forwarded to the child's
// process group and the child (how a running command is interrupted).
//
// Process.KillDescendants does the same walk from the server, sparing one
// process and its ancestors: the python handler uses it to end what a
// timed-out cell started while keeping the interpreter.
//
// # Why not a cgroup
//
// cgroup.kill on a per-session cgroup v2 would be atomic, but it needs a
// delegated, writable cgroup hierarchy, which a server started from a
// terminal, a container or a CI job usually does not have. The subreaper
// works for any unprivileged process on Linux 3.4 and later, so it is the
// one mechanism, rather than a fallback behind a second one.
//
// # Caveats
//
//   - Linux only. Elsewhere Start runs the child directly in its own
//     session or process group and Kill signals that group, which misses
//     processes that leave it.
//   - A process that is itself killed with SIGKILL cannot clean up: if the
//     reaper is killed that way (not by the server dying, which sends it
//     SIGTERM), its child still dies (it has a parent-death signal) but
//     escaped descendants survive.
//   - PR_SET_PDEATHSIG fires when the server thread that started the
//     reaper exits; Go keeps its threads for the life of the process unless
//     a goroutine locked to one exits, which flock does not do.
//   - Processes inside a PID namespace (bwrap's) are reparented to that
//     namespace's init, itself a descendant of the reaper, so the walk
//     still finds them; bwrap's --die-with-parent ends them as well.
package reaper
