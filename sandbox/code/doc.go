// Package code is the sandbox backend "code": a per-session workspace with a
// persistent Python interpreter (internal/pyinterp, the python operation's),
// a bash shell (internal/shell, the bash operation's) and file access
// confined to the workspace.
//
// Tools (all stateful, resource type "code"):
//
//   - code:python {code, timeout?} → {output, error, timed_out, truncated}
//     plus the fields AgentFlow's client formatter reads for "code" (stdout =
//     output, stderr = error, return_code 1 when there is an error, else 0,
//     execution_time_ms): runs a cell in the session's interpreter, started
//     in the workspace on first use; globals, imports and definitions
//     persist between calls. Output is stdout and stderr interleaved; a
//     traceback is in error (still code 0). A cell past its timeout is interrupted (KeyboardInterrupt) and
//     answers 5006; the interpreter and its globals are kept and every
//     process the cell started is killed.
//   - code:bash {command, timeout?} → a plain string, as AgentFlow's removed
//     code backend answered: stdout, then "\n[stderr]:\n" and stderr when
//     stderr is not empty, or "(no output)". The shell runs in the same
//     workspace; an empty command is 4000, a timeout 5006 (the shell is
//     restarted on the next call, files kept).
//   - code:read {path} → {path, content, size}: a file of the workspace.
//   - code:write {path, content} → {path, size}: creates or replaces a file
//     of the workspace, creating parent directories.
//   - code:glob {pattern, path?} → {pattern, path, matches, count,
//     truncated}: the regular files beneath path (default the workspace)
//     whose path relative to it matches pattern (* and ? within a name,
//     [...] classes, ** across directories), relative to the workspace and
//     sorted; at most 1000 (MaxGlobMatches), then truncated is true.
//   - code:grep {pattern, path?, glob?, ignore_case?, max_matches?} →
//     {pattern, path, matches: [{path, line, text}], count, truncated,
//     files_searched}: lines matching an RE2 regular expression in the file
//     path names or the files beneath it, optionally only those whose name
//     matches glob; at most max_matches (default 100, at most 1000) lines,
//     each cut at 500 bytes. Files larger than max_file_size and binary
//     files (a NUL byte in the first 8000 bytes) are not searched. A bad
//     expression or glob is 4000 naming it.
//   - code:edit {path, old_string, new_string, replace_all?} → {path,
//     replacements, size}: replaces the exact old_string, which must occur
//     once unless replace_all is true. An empty old_string, old_string
//     equal to new_string, a string not found, or one found n times without
//     replace_all is 4000, naming the file (and n).
//
// Paths are relative to the workspace (an absolute path is accepted only
// when it lies inside it). They are opened through an os.Root on the
// workspace, so neither ".." nor a symbolic link can reach outside it; such a
// path is refused with 4000, as is a missing file. glob and grep walk the
// tree through the same root: a link to a file inside counts as a file, a
// link to a directory is not descended (no loops), and a link leading out
// of the workspace is skipped, never read; a glob pattern may not be
// absolute or hold "..". read, write, edit and grep open regular files
// only: the open never waits (O_NONBLOCK) and what was opened is checked
// with fstat, so a FIFO, socket or device (mkfifo works under bwrap too)
// is refused with 4000 at once instead of blocking the session, and grep
// skips it.
//
// Destroying the session (or its expiry) kills the interpreter and the
// shell with every process they started (internal/reaper); the core
// removes the workspace.
//
// Config (resources.code.config): timeout (seconds, default 600),
// output_limit (bytes, default 100000), max_file_size (bytes read or
// written by read/write, default 10 MiB), isolation: unset, the service's
// policy (flock's --isolation, default auto) runs the interpreter and the
// shell under bubblewrap wherever it can run, with only the workspace (and
// /tmp) writable and the service's data dir, other sessions' workspaces
// included, hidden; "bwrap" adds a private /tmp and no network; "none" is
// the operator opting out (see sandbox.Env.Isolation and package
// isolation).
package code
