// Package pyinterp runs Python code cells in persistent interpreters, one
// per owner, so globals, imports and definitions carry over from cell to
// cell, as in a notebook. A Pool holds the interpreters; the owner is a run
// for the python operation (handlers/python) and a sandbox session for the
// sandbox's code backend.
//
// # Driver and protocol
//
// Each interpreter runs a small driver (driver.py, embedded in the binary
// and passed with -c). The server talks to it over two dedicated pipes,
// fds 3 (requests) and 4 (replies), which the driver marks
// non-inheritable; frames are a 4-byte big-endian length followed by JSON.
// The driver's stdin is /dev/null (input() raises EOFError), and fds 1 and
// 2 are an unlinked temporary file, so nothing a cell writes — print,
// sys.__stdout__, os.write(1, ...), subprocesses — can corrupt the protocol.
//
// # Output
//
// Output is stdout and stderr interleaved in write order (both line
// buffered), including what subprocesses write; a cell's traceback goes to
// the result's Error, and output written before the exception is kept. If
// the last statement of a cell is an expression its value is shown with
// sys.displayhook, like the interactive interpreter (None shows nothing,
// and _ holds the last value). Output is capped at Cell.OutputLimit
// (Options.OutputLimit by default), keeping the head and the tail like
// elide.Middle; only those parts are read from the file, so the
// server's memory stays bounded however much a cell prints (the file itself
// lives in the server's temporary directory until the next cell clears it).
// Output that background processes write between cells is discarded when
// the next cell starts.
//
// # Timeouts, death and cancellation
//
// A cell runs for Cell.Timeout, else Options.DefaultTimeout (600 s). At the deadline the driver delivers
// SIGINT to its main thread: KeyboardInterrupt is raised in the cell (also
// inside sleep, socket reads and subprocess waits), the result has
// timed_out set, and the interpreter and its globals are kept. If the cell
// has not stopped after Options.InterruptGrace (1 s) — it ignores SIGINT or
// swallows KeyboardInterrupt — the interpreter's process group is killed;
// the result says so, and the next call starts a fresh interpreter. The same
// restart follows an interpreter that dies during a cell (os._exit, a
// crash); the output up to its death is kept. SystemExit is reported as an
// error and does not end the interpreter. When ctx is done the interpreter
// is killed and Run returns ErrCancelled ("cancelled").
//
// # Processes a cell starts
//
// Each interpreter runs under its own reaper (package internal/reaper): the
// server's binary re-executed as a child subreaper, so that processes the
// code starts stay below it even when they leave the process group or the
// session (subprocess.Popen(..., start_new_session=True), os.fork daemons,
// nohup). When the interpreter is killed, exits or is closed (CloseOwner,
// Close), and when the server dies (kill -9 included), every one of them
// is killed too, whatever signals it ignores. A timed-out cell kills them
// as well, from the server, even when the interpreter and its globals are
// kept: after a timeout no process the interpreter started, in that cell or
// an earlier one, is left running. Between cells, background processes
// live on.
//
// # Interpreter and environment
//
// The binary is Cell.Interpreter, else python3 on the server's
// PATH, else /usr/bin/python3 or /usr/local/bin/python3. A path in a
// "shims" directory (pyenv, asdf) is replaced, once per process, by the
// sys.executable it reports, to avoid the shim's cost on every start.
// Interpreters run in the cell's work directory (created if missing), which
// is also first on sys.path as with `python -c`, though modules there
// cannot shadow the driver's own imports. The environment is the base set
// of the server's (isolation.Environ: PATH, HOME, the locale, TZ, ...) plus
// PYTHONUNBUFFERED=1, PYTHONDONTWRITEBYTECODE=1, PYTHONIOENCODING=utf-8 and
// Options.Env; server secrets such as OPENAI_API_KEY never reach the code.
//
// # Isolation
//
// Options.Wrap, when set, rewrites the command line. Otherwise the
// operator's policy (Options.Isolation) and Cell.Isolation (a run's
// settings.isolation) resolve to the isolation isolation.Wrap applies,
// with Options.Hidden as the paths to hide: bwrap by default wherever it
// can run. See package isolation for what bwrap does and does not protect.
//
// # Caveats
//
//   - Cells of one owner are serialized; different owners run in parallel.
//   - The driver's SIGINT handler is reinstalled around every cell, so a
//     handler a cell installs lasts only for that cell.
//   - A process forked by a cell (os.fork without exec) that falls back into
//     the driver exits quietly instead of answering.
//   - Nothing bounds memory, CPU or disk use of the code beyond the timeout.
//   - The driver needs Python 3.7 or later.
package pyinterp
