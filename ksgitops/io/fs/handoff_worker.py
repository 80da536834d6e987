"""The monitor's side of a hand-off (handoff.py): a forked worker that becomes the asking process
(its arguments, environment, working folder, umask and standard streams) and runs the command.

The monitor forks only when the asker would run the code the monitor holds (the same interpreter
and package files unchanged since the monitor loaded them); it does not wait for the worker, which
talks to the asker itself, so a worker may ask the monitor what changed like any command.
"""
from __future__ import annotations

import atexit
import gc
import io
import json
import os
import signal
import socket
import sys
import time
import traceback
from typing import Any, Callable

from ...core.load.schemas import schema_dir
from ..git import cache
from . import handoff

Runner = Callable[[list[str]], None]  # runs a command line as `ksgitops` would (may raise SystemExit)


class Warm:
    """What the monitor holds for hand-offs: the code it loaded, and how to run a command."""

    def __init__(self, run: Runner, preload: Callable[[], None]) -> None:
        self.stamp = package_stamp()  # before loading: an edit made meanwhile shows as a change
        preload()
        self.run = run
        self.interpreter = handoff.interpreter()
        self.served = 0

    def refresh(self, state: str) -> None:
        """Read the state folder's pickles that changed (the cache, the records): a worker takes
        them from memory when their bytes are the same (io/git/cache.py `unpickle`)."""
        if cache.warm(state):
            gc.freeze()

    def refusal(self, request: dict[str, Any]) -> str | None:
        """Why this monitor cannot run the request's command (None: it can)."""
        if request.get("interpreter") != self.interpreter:
            return "another interpreter, library path or package"
        if package_stamp() != self.stamp:
            return "the package changed since the monitor started"
        if not isinstance(request.get("argv"), list) or not isinstance(request.get("env"), dict):
            return "a malformed request"
        return None


def package_stamp() -> list[Any]:
    """Every file of the package and its schemas (name, size, mtime, inode): an edit or an upgrade changes it."""
    stamp = []
    for base in (handoff.PACKAGE, str(schema_dir())):
        for top, folders, files in os.walk(base):
            folders[:] = sorted(f for f in folders if f != "__pycache__")
            for name in sorted(files):
                if name.endswith((".pyc", ".pyo")):
                    continue
                path = os.path.join(top, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                stamp.append([path, st.st_size, st.st_mtime_ns, st.st_ino])
    return stamp


def start(conn: socket.socket, request: dict[str, Any], fds: list[int], warm: Warm) -> int | None:
    """Fork a worker for `request` (fds: its working folder, then its standard streams); every
    other descriptor of the monitor is closed in the worker. The worker's pid, or None when
    refused (the asker runs the command itself)."""
    why = warm.refusal(request)
    if why is not None or len(fds) != 1 + len(request.get("streams") or ()):
        conn.sendall(json.dumps({"refused": why or "descriptors missing"}).encode() + b"\n")
        return None
    pid = os.fork()
    if pid:
        warm.served += 1
        return pid
    code = 4
    try:
        signal.set_wakeup_fd(-1)  # the monitor's pipe, closed next: its number may soon be another file's
        _close_others({conn.fileno(), *fds})
        code = _work(conn, request, fds, warm.run)
    except BaseException:  # noqa: BLE001 - a worker never returns into the monitor's loop
        code = 4
    finally:
        os._exit(code)


def _work(conn: socket.socket, request: dict[str, Any], fds: list[int], run: Runner) -> int:
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    conn.settimeout(None)
    conn.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
    if _line(conn) != b"go\n":
        return 0  # the asker gave up and runs the command itself
    _become(request, fds)
    handoff_link.conn = conn
    code = _run(run, request["argv"])
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    conn.sendall(json.dumps({"exit": code}).encode() + b"\n")
    return code


def _become(request: dict[str, Any], fds: list[int]) -> None:
    """Take the asker's working folder, streams, umask, environment and arguments."""
    here, streams = fds[0], fds[1:]
    os.fchdir(here)
    os.close(here)
    present = request["streams"]
    for target in (0, 1, 2):
        if target not in present:
            _close(target)
    for target, fd in zip(present, streams):
        os.dup2(fd, target)
        if fd != target:
            os.close(fd)
    os.umask(int(request["umask"]))
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in request["env"].items()})
    time.tzset()  # TZ as the asker has it
    sys.argv = [str(a) for a in request["argv"]]
    if sys.path:
        sys.path[0] = str(request.get("path0") or "")  # modules loaded from here on are found as the asker finds them
    encodings = request.get("encodings") or [None, None, None]
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        stream = _stream(fd, encodings[fd] if fd < len(encodings) else None) if fd in present else None
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _stream(fd: int, encoding: list[str] | None) -> io.TextIOWrapper:
    """A text stream over `fd` as the interpreter makes one at start-up (stdout line-buffered on a
    terminal, stderr always; the asker's encoding and error handler)."""
    name, errors = encoding or (None, None)
    raw = io.FileIO(fd, "r" if fd == 0 else "w", closefd=False)
    interactive = raw.isatty()
    buffered = io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw)
    return io.TextIOWrapper(buffered, encoding=name, errors=errors, line_buffering=fd == 2 or (fd == 1 and interactive))


def _run(run: Runner, argv: list[str]) -> int:
    """The exit code of the command, as the interpreter would give it."""
    try:
        run(argv[1:])
    except SystemExit as e:
        if e.code is None:
            return 0
        if isinstance(e.code, int):
            return e.code
        print(e.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        traceback.print_exc()
        return 130
    except BaseException:  # noqa: BLE001 - an uncaught error, shown as the interpreter shows one
        traceback.print_exc()
        return 1
    return 0


class _Link:
    """The worker's line to its asker, for what must happen in the asker's process (a pager)."""

    conn: socket.socket | None = None

    def page(self, command: str, env: dict[str, str], text: str) -> None:
        assert self.conn is not None
        self.conn.sendall(json.dumps({"page": command, "env": env, "text": text}).encode() + b"\n")
        _line(self.conn)


handoff_link = _Link()


def _line(conn: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def _close_others(keep: set[int]) -> None:
    """Close every descriptor above the standard streams but `keep` (the monitor's socket, watches
    and lock are not the command's to hold)."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            _close(fd)


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass
