// Package code is the sandbox backend "code": a per-session workspace with a
// persistent Python interpreter (flock's python handler, handlers/python), a
// bash shell (handlers/bash) and file access confined to the workspace.
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
//
// Paths are relative to the workspace (an absolute path is accepted only
// when it lies inside it). They are opened through an os.Root on the
// workspace, so neither ".." nor a symbolic link can reach outside it; such a
// path is refused with 4000, as is a missing file.
//
// Destroying the session (or its expiry) kills the interpreter and the
// shell with every process they started (internal/reaper); the core
// removes the workspace.
//
// Config (resources.code.config): timeout (seconds, default 600),
// output_limit (bytes, default 100000), max_file_size (bytes read or
// written by read/write, default 10 MiB), isolation ("bwrap" runs the
// interpreter and the shell under bubblewrap with only the workspace
// writable and the service's data dir, other sessions' workspaces included,
// hidden; see package isolation).
package code
