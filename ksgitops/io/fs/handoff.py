"""Handing a command to the work tree's monitor: the monitor keeps ksgitops imported, and forks a
worker per command (handoff_worker.py) that runs it with this process's arguments, environment,
working folder, umask and standard streams (passed as file descriptors), so that a command pays
neither the interpreter's start-up nor the imports (~0.2–0.3 s of a ~0.5 s `diff`).

A command is handed over only when the monitor runs the very code this process would import (the
same interpreter, flags, library path, package folder, and package files unchanged since the
monitor loaded them); otherwise, or when no monitor answers at once, it runs here as before. The
worker sends its pid, waits for a go-ahead (so a process that gave up waiting never has a twin
running), runs the command, and sends its exit code; signals sent to this process are passed on.

This module is what every command loads before deciding, so it imports nothing beyond the
standard library's cheapest parts.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys
from typing import Any

from .folderstate import STATE, is_git_dir, place_of

SOCKET = "monitor.sock"
ENV = "KSGITOPS_HANDOFF"  # "0": never hand a command over
COMMANDS = frozenset({"reconcile", "diff", "validate", "render", "explain", "wecs", "status"})
CONNECT_TIMEOUT = 1.0  # seconds to reach a monitor and get its worker's pid; then the command runs here
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
FDS = b"F"  # the byte the descriptors travel with, before the request
PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def address(git_dir: str | os.PathLike[str], place: str = STATE) -> str:
    """The monitor's socket: a file in its folder's state folder `place` in the git directory
    (folderstate.py), or, when that path is too long for a unix socket, a name in Linux's
    abstract namespace made from it."""
    path = os.path.join(os.path.realpath(git_dir), place, SOCKET)
    if len(os.fsencode(path)) < 100:
        return path
    import hashlib
    return "\0ksgitops-monitor-" + hashlib.sha256(os.fsencode(path)).hexdigest()[:32]


def same_user(conn: socket.socket) -> bool:
    """The process at the other end runs as this one's user (SO_PEERCRED: an abstract socket name
    has no file mode, and anyone may take it first). Both ends ask it."""
    return peer_pid(conn) is not None


def peer_pid(conn: socket.socket) -> int | None:
    """The pid of the process at the other end when it runs as this one's user, else None."""
    try:
        pid, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                          struct.calcsize("3i")))
    except OSError:
        return None
    return pid if uid == os.getuid() else None


def interpreter() -> dict[str, Any]:
    """What decides which code a `ksgitops` process runs, and how: the worker's must equal the asker's."""
    return {"executable": sys.executable, "version": sys.version, "flags": list(sys.flags),
            "path": sys.path[1:], "package": PACKAGE, "warnoptions": sys.warnoptions,
            "xoptions": sorted(map(str, sys._xoptions.items())), "encoding": sys.getfilesystemencoding(),
            "env": sorted([k, v] for k, v in os.environ.items() if k.startswith("PYTHON") or k in _LOCALE)}


_LOCALE = ("LANG", "LC_ALL", "LC_CTYPE",  # set at start-up: the default encoding of every file opened
           "SSL_CERT_FILE", "SSL_CERT_DIR")  # and the certificates of a push, as libgit2 loaded them


def hand_off(args: list[str]) -> int | None:
    """Run the command `args` in a monitor's worker: its exit code, or None to run it here."""
    if os.environ.get(ENV) == "0" or not sys.platform.startswith("linux"):
        return None
    command, folders = _command_of(args)
    if command not in COMMANDS or (command == "diff" and os.environ.get("KUBECTL_EXTERNAL_DIFF")):
        return None  # an external diff tool may want the terminal this process holds
    if not all(_is_open(fd) for fd in (0, 1, 2)):
        return None  # a closed stream's number would be taken by the socket: run here, as without a monitor
    try:
        for folder in folders:
            git_dir = _plain_git_dir(folder)
            if git_dir is not None:
                conn = _worker(address(git_dir, place_of(_ksgitops_folder(folder))), args)
                if conn is not None:
                    return _follow(*conn)
    except OSError:  # a working folder gone or unreadable: the command here says so
        return None
    return None


def _command_of(args: list[str]) -> tuple[str | None, list[str]]:
    """The command's name and the folders where a monitor may be found: any argument naming a
    folder, found as the command finds it (below the `-C` folders, each below the one before,
    wherever they are given), the last `-C` folder, and the working folder."""
    command, named, base, after_c = None, [], "", False
    for arg in args:
        if after_c:
            base = os.path.join(base, arg)
            after_c = False
        elif arg == "-C":
            after_c = True
        elif arg.startswith("-C"):
            base = os.path.join(base, arg[2:])
        elif command is None and not arg.startswith("-"):
            command = arg
        elif command is not None and not arg.startswith("-"):
            named.append(arg)
    named = [os.path.join(base, arg) for arg in named]
    return command, [*(f for f in named if os.path.isdir(f)), *([base] if base else []), "."]


def _plain_git_dir(path: str) -> str | None:
    """The `.git` folder of the work tree holding `path`, or the bare repository it is in (None:
    none, or not a plain one)."""
    folder = os.path.realpath(path)
    while True:
        candidate = os.path.join(folder, ".git")
        if os.path.isdir(candidate):
            return candidate
        if os.path.lexists(candidate):
            return None  # a linked work tree or a submodule: no hand-off
        if is_git_dir(folder):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _ksgitops_folder(path: str) -> str:
    """The ksgitops folder holding `path`, as the command will find it: the nearest folder at or
    above it holding `spaces/`, up to the top of its work tree (else that top: its monitor's), or
    the bare repository it is in (whose monitor's state is its own, wherever it lies)."""
    folder = os.path.realpath(path)
    while True:
        if os.path.isdir(os.path.join(folder, "spaces")) or is_git_dir(folder):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder or os.path.lexists(os.path.join(folder, ".git")):
            return folder
        folder = parent


def _worker(where: str, args: list[str]) -> tuple[socket.socket, int] | None:
    """Ask the monitor at `where` for a worker: (the connection, its pid), or None."""
    here = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(CONNECT_TIMEOUT)
    streams = [0, 1, 2]
    try:
        conn.connect(where)
        if not same_user(conn):
            raise OSError("not this user's monitor")
        umask = os.umask(0o022)
        os.umask(umask)
        request = {"op": "exec", "interpreter": interpreter(), "argv": [sys.argv[0], *args], "env": dict(os.environ),
                   "path0": sys.path[0] if sys.path else "",
                   "umask": umask, "streams": streams, "ignored": _ignored(),
                   "unbuffered": bool(getattr(sys.stdout, "write_through", False)),  # -u, PYTHONUNBUFFERED
                   "encodings": [[s.encoding, s.errors] if s is not None else None
                                 for s in (sys.stdin, sys.stdout, sys.stderr)]}
        socket.send_fds(conn, [FDS], [here, *streams])  # one byte carries them; then the request, whatever its size
        conn.sendall(json.dumps(request, ensure_ascii=True).encode() + b"\n")
        reply = json.loads(line_of(conn) or b"{}")
        pid = reply.get("pid") if isinstance(reply, dict) else None
        if not isinstance(pid, int):
            raise OSError("no worker")
        conn.sendall(b"go\n")
    except (OSError, ValueError):
        conn.close()
        return None
    finally:
        os.close(here)
    return conn, pid


def _ignored() -> list[int]:
    """The forwarded signals this process ignores (`nohup`, a shell's trap): the worker ignores them too."""
    return [int(sig) for sig in FORWARDED if signal.getsignal(sig) is signal.SIG_IGN]


def _follow(conn: socket.socket, pid: int) -> int:
    """Pass signals on to the worker `pid` and wait for its exit code (pager requests served here).
    A worker that a passed-on signal ended without an exit code ends this process by that signal,
    as it would have ended the command run here."""
    sent: list[int] = []

    def forward(signum: int, _frame: Any) -> None:
        sent.append(signum)
        _kill(pid, signum)

    def suspend(_signum: int, _frame: Any) -> None:  # Ctrl-Z: the worker stops with this process
        _kill(pid, signal.SIGSTOP)
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTSTP)  # stopped here until continued, or not at all (an orphaned group)
        signal.signal(signal.SIGTSTP, suspend)
        _kill(pid, signal.SIGCONT)  # either way this process runs again: so does the worker

    for sig in FORWARDED:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, forward)
    if signal.getsignal(signal.SIGTSTP) is not signal.SIG_IGN:
        signal.signal(signal.SIGTSTP, suspend)
        signal.signal(signal.SIGCONT, lambda *_: _kill(pid, signal.SIGCONT))
    conn.settimeout(None)
    with conn:
        while True:
            try:
                line = line_of(conn)
                message = json.loads(line) if line else {}
                if isinstance(message, dict) and "page" in message:
                    _page(message)
                    conn.sendall(b"paged\n")
                    continue
            except (OSError, ValueError):
                message = {}
            code = message.get("exit") if isinstance(message, dict) else None
            if isinstance(code, int):
                return code
            if sent:
                signal.signal(sent[-1], signal.SIG_DFL)
                os.kill(os.getpid(), sent[-1])
            print(f"ksgitops: the monitor's worker (pid {pid}) ended without an exit code", file=sys.stderr)
            return 4


def _kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def _page(message: dict[str, Any]) -> None:
    """Show a worker's text through the pager from this process: the terminal is ours, not the worker's."""
    import subprocess
    proc = subprocess.Popen(message["page"], shell=True, stdin=subprocess.PIPE, env=message["env"])  # noqa: S602
    try:
        proc.communicate(message["text"].encode("utf-8", "surrogateescape"))
    except BrokenPipeError:
        pass


def line_of(conn: socket.socket) -> bytes:
    """One message of the hand-off's protocol, a line (b"": the other end closed first)."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(1 << 16)
        if not chunk:
            return b""
        data += chunk
    return data


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True
