// Package shell runs commands in persistent bash shells, one per (owner,
// session), so that the working directory, exported variables, functions
// and aliases carry over from one command to the next. A Pool holds the
// shells; the owner is a run for the bash operation (handlers/bash) and a
// sandbox session for the sandbox's bash and code backends.
//
// # Shells
//
// A shell is `bash --noprofile --norc --noediting` started lazily on a
// pseudo-terminal (github.com/creack/pty) in the command's work directory,
// which is created if missing. It is interactive (so an error such as
// ${x:?} or a Ctrl-C aborts the command, not the shell) but quiet: echo is
// off on the terminal, there is no line editing, no prompt (PS1, PS2 and
// PROMPT_COMMAND are empty), no history and no job control (set +m), so
// background jobs stay in the shell's process group. Bracketed paste is a
// readline feature and does not apply without line editing.
//
// The environment is built from an allow-list, never from the server's:
// the base set of isolation.Environ (PATH, HOME, the locale, TZ, ...) is
// passed through, TERM=dumb, PAGER=cat, GIT_PAGER=cat and TQDM_DISABLE=1
// are set, plus Options.Env. Keys such as OPENAI_API_KEY never reach a
// shell.
//
// Shells run isolated as the operator's policy (Options.Isolation) and the
// owner's Command.Isolation (a run's settings.isolation) resolve
// (isolation.Policy.Resolve): under bwrap by default wherever it can run,
// with the server's data directory (Options.Hidden) invisible but for the
// owner's own work directory.
//
// # Commands
//
// The command text is written to a private file (under /dev/shm, else os.TempDir(), one
// per shell) and the shell is sent one line that sources it:
//
//	{ builtin source FILE; } </dev/null 61>&- 62>&-   # inside { ...; } 2>&62
//
// so a command can span lines, contain heredocs or be syntactically broken
// without confusing the shell, and it reads end-of-file on stdin instead of
// hanging. $? is carried over between commands.
//
// Standard output is the terminal; standard error goes to a separate pipe
// (fd 62 inside the shell, closed for the command's own children except as
// their stderr), so the two streams come back apart. After the command the
// shell prints a marker on both streams:
//
//	__FLOCK_<token>_<exit code>_<$PWD>_<token>__\n
//
// where the token is 128 fresh random bits (crypto/rand) per command, so
// output cannot forge it. Everything before the marker, wherever it starts,
// is the command's output (so output without a final newline comes back as
// is). The $PWD it carries is
// the session's cwd, used when the shell has to be restarted. Output is
// cleaned of ANSI escape sequences; CRLF becomes LF and a lone CR becomes
// LF.
//
// Each stream is capped at the output limit with elide.Middle (head and
// tail kept, the middle replaced with a note counting elided bytes).
// While reading, at most twice the limit is held per stream, so a command
// that prints forever costs bounded memory.
//
// Output a background job prints after a command's marker is reported with
// the next command.
//
// # Timeouts, cancellation and closing
//
// The timeout is Command.Timeout, else Options.DefaultTimeout, else 600 s.
// When it expires the shell's
// process group gets SIGINT, the pool waits up to a second for the
// command to wind down (the request for a marker is repeated every 200 ms
// meanwhile, and SIGINT too while the command prints nothing: bash lets a
// SIGINT pass when it lands as a child exits normally, and drops input it
// was reading when one reaches it),
// then kills the shell and every process it started
// (see Process tree below). The result keeps the output captured so far,
// with timed_out true and exit code 124.
// The shell is gone: the next command of the session starts a new one and
// changes to the last cwd the old one reported, but exported variables,
// functions and aliases are lost.
//
// A context that ends takes the same path; the result carries the partial
// output and exit code 130, and the error is ErrCancelled ("cancelled"). A command that exits the
// shell (exit 3) returns the shell's exit status and the next command gets
// a new shell the same way.
//
// CloseOwner kills an owner's shells and Close kills all; commands running
// in them return at once with ErrSessionClosed.
//
// # Process tree
//
// Each shell runs under its own reaper (package internal/reaper): the
// server's binary re-executed as a child subreaper, which starts the shell
// in a new session on the pty (the shell keeps its controlling terminal)
// and then holds none of the shell's descriptors, so commands cost the same
// as without it. Orphans of the session (double-forked daemons, setsid,
// nohup) are reparented to the reaper instead of init. Whenever the shell
// ends — timeout, cancellation, exit, CloseOwner, Close — the reaper kills
// every process below it, including ones that left the process group or
// the session and ones that ignore SIGHUP and SIGTERM, before it exits;
// the pool waits for that. If the server dies, even of kill -9, the
// reaper gets a parent-death signal and does the same. Background jobs
// therefore live exactly as long as their shell.
//
// # Caveats
//
// Commands that open /dev/tty directly (ssh, sudo asking for a password)
// block until the timeout.
package shell
