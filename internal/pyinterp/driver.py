# flock python driver: runs cells sent by the flock server in one persistent
# namespace. Embedded in the Go binary and started as `python3 -c <source>`.
#
# File descriptors, set up by the server:
#   0  /dev/null (input() raises EOFError instead of eating the protocol)
#   1  the output file (user stdout; also fd 2, so streams interleave)
#   2  the output file
#   3  requests from the server
#   4  replies to the server
# Fds 3 and 4 are made non-inheritable at once, so subprocesses never see the
# protocol, and nothing user code writes to fd 1 or 2 can corrupt it.
#
# Frames in both directions: a 4-byte big-endian length, then that many bytes
# of UTF-8 JSON.
#   server -> driver  {"op": "exec", "id": N, "code": "..."}
#                     {"op": "interrupt", "id": N}
#   driver -> server  {"op": "hello", "version": "3.11.7", "pid": P}
#                     {"id": N, "error": "traceback or ''", "interrupted": bool}
#
# A reader thread owns fd 3. Exec requests are queued for the main thread; an
# interrupt for the running cell is delivered as a real SIGINT to the main
# thread, so blocking calls (sleep, socket reads, subprocess waits) are
# interrupted too. Between cells the driver's SIGINT handler ignores the
# signal, so a late interrupt can never hit the next cell or the protocol.
# When fd 3 reaches end of file the server is gone and the driver exits.

import sys

# `python -c` puts the working directory first on sys.path. Keep it out
# while the driver imports, so a json.py or queue.py in the work directory
# cannot replace the modules the protocol depends on; it is put back for
# user code.
_PATH0 = sys.path.pop(0) if sys.path and sys.path[0] in ("", ".") else None

import ast
import builtins
import io
import json
import linecache
import os
import queue
import signal
import struct
import threading
import traceback
import types

_REQ_FD = 3
_RESP_FD = 4
_MAX_FRAME = 64 << 20
_MAX_ERROR = 1 << 20
_KEEP_CELLS = 200


def _read_exact(fd, n):
    chunks = []
    while n > 0:
        b = os.read(fd, n)
        if not b:
            return None
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def _read_frame(fd):
    head = _read_exact(fd, 4)
    if head is None:
        return None
    (n,) = struct.unpack(">I", head)
    if n > _MAX_FRAME:
        raise ValueError("frame too large: %d" % n)
    body = _read_exact(fd, n)
    if body is None:
        return None
    return json.loads(body.decode("utf-8"))


def _write_frame(fd, obj):
    body = json.dumps(obj).encode("utf-8")
    view = memoryview(struct.pack(">I", len(body)) + body)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class _State:
    busy = None  # id of the cell running now, or None
    fired = False  # our SIGINT handler raised during this cell


def _on_sigint(signum, frame):
    if _State.busy is None:
        return
    _State.fired = True
    raise KeyboardInterrupt


def _clip(s, limit):
    if len(s) <= limit:
        return s
    half = limit // 2
    return "%s\n[... %d characters elided ...]\n%s" % (s[:half], len(s) - 2 * half, s[-half:])


# Driver functions that can appear in a cell's traceback.
_DRIVER_FUNCS = frozenset(("_execute", "_compile_cell", "_run_cell", "_on_sigint"))


def _strip(te, seen):
    # Drops the driver's frames from te and the exceptions chained to it.
    if te is None or id(te) in seen:
        return
    seen.add(id(te))
    te.stack = traceback.StackSummary.from_list(
        [f for f in te.stack if not (f.filename == _DRIVER_FILE and f.name in _DRIVER_FUNCS)]
    )
    _strip(te.__cause__, seen)
    _strip(te.__context__, seen)


def _format(exc):
    if isinstance(exc, SyntaxError) and getattr(exc, "_flock_parse", False):
        return "".join(traceback.format_exception_only(type(exc), exc))
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__)
    _strip(te, set())
    return "".join(te.format())


def _compile_cell(code, name):
    try:
        tree = ast.parse(code, name, "exec")
    except SyntaxError as e:
        e._flock_parse = True
        raise
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
        ast.fix_missing_locations(last)
    body = compile(tree, name, "exec")
    tail = compile(last, name, "eval") if last is not None else None
    return body, tail


def _run_cell(body, tail, ns):
    exec(body, ns)
    if tail is not None:
        value = eval(tail, ns)
        if value is not None:
            sys.displayhook(value)


_DRIVER_FILE = _run_cell.__code__.co_filename


def _flush():
    for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if s is not None:
                s.flush()
        except Exception:
            pass


def _execute(msg, ns, cells):
    """Runs one cell and returns its error text ('' on success)."""
    n = len(cells) + 1
    name = "<cell-%d>" % n
    code = msg.get("code", "")
    cells.append(name)
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    if len(cells) > _KEEP_CELLS:
        linecache.cache.pop(cells[-_KEEP_CELLS - 1], None)
    _State.fired = False
    signal.signal(signal.SIGINT, _on_sigint)
    try:
        try:
            _State.busy = msg["id"]
            body, tail = _compile_cell(code, name)
            _run_cell(body, tail, ns)
        finally:
            _State.busy = None
    except BaseException as e:  # SystemExit and KeyboardInterrupt included
        try:
            return _format(e)
        except BaseException:
            return "%s: %s\n" % (type(e).__name__, e)
    finally:
        try:
            signal.signal(signal.SIGINT, _on_sigint)
        except Exception:
            pass
        _flush()
    return ""


def _reader(requests, main_ident):
    while True:
        try:
            msg = _read_frame(_REQ_FD)
        except Exception:
            msg = None
        if msg is None:
            os._exit(0)  # the server closed the pipe: it is gone
        if msg.get("op") == "interrupt":
            if msg.get("id") is not None and msg.get("id") == _State.busy:
                signal.pthread_kill(main_ident, signal.SIGINT)
            continue
        requests.put(msg)


def _main():
    os.set_inheritable(_REQ_FD, False)
    os.set_inheritable(_RESP_FD, False)
    signal.signal(signal.SIGINT, _on_sigint)
    out = io.TextIOWrapper(
        io.FileIO(1, "w", closefd=False),
        encoding="utf-8",
        errors="backslashreplace",
        line_buffering=True,
    )
    err = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False),
        encoding="utf-8",
        errors="backslashreplace",
        line_buffering=True,
    )
    sys.stdout = sys.__stdout__ = out
    sys.stderr = sys.__stderr__ = err
    sys.argv = [""]
    if _PATH0 is not None:
        sys.path.insert(0, _PATH0)
    pid = os.getpid()
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    ns = main.__dict__
    cells = []
    requests = queue.SimpleQueue()
    reader = threading.Thread(
        target=_reader, args=(requests, threading.get_ident()), name="flock-reader", daemon=True
    )
    reader.start()
    v = sys.version_info
    _write_frame(_RESP_FD, {"op": "hello", "version": "%d.%d.%d" % (v[0], v[1], v[2]), "pid": os.getpid()})
    while True:
        msg = requests.get()
        if msg.get("op") != "exec":
            continue
        error = _execute(msg, ns, cells)
        if os.getpid() != pid:
            os._exit(0)  # a child forked by the cell must not answer
        try:
            _write_frame(_RESP_FD, {"id": msg["id"], "error": _clip(error, _MAX_ERROR), "interrupted": _State.fired})
        except OSError:
            os._exit(70)  # the cell broke the reply pipe: the server sees the exit


_main()
