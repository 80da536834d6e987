"""The monitor's side of a hand-off (handoff.py): a forked worker that becomes the asking process
(its arguments, environment, working folder, umask and standard streams) and runs the command.

The monitor forks only when the asker would run the code the monitor holds (the same interpreter
and package files unchanged since the monitor loaded them); it does not wait for the worker, which
talks to the asker itself, so a worker may ask the monitor what changed like any command (what
makes the monitor fit to: handoff_fit.py). Once it has answered, the worker keeps the run's memos
(afterwards.py), holding nothing of the asker's.
"""
from __future__ import annotations

import atexit
import fcntl
import gc
import io
import json
import os
import select
import signal
import socket
import sys
import time
from typing import Any, Callable

from ..git import cache
from . import afterwards, handoff
from .handoff_fit import contents_of, credentials, package_stamp, stamp_of

Runner = Callable[[list[str]], None]  # runs a command line as `ksgitops` would (may raise SystemExit)


MAX_WORKERS = 16  # at once; beyond, a command runs in its own process
GO_TIMEOUT = 10.0  # seconds a worker waits for its asker's go-ahead


class Warm:
    """What the monitor holds for hand-offs: the code it loaded, and how to run a command."""

    def __init__(self, run: Runner, preload: Callable[[], None]) -> None:
        self.stamp = package_stamp()  # before loading: an edit made meanwhile shows as a change
        self.contents = contents_of([entry[0] for entry in self.stamp])
        preload()
        files = (getattr(module, "__file__", None) for module in list(sys.modules.values()))
        self.loaded = sorted({f for f in files if isinstance(f, str) and not f.startswith(handoff.PACKAGE + os.sep)})
        self.loaded_stamp = stamp_of(self.loaded)  # the libraries loaded: an upgrade shows as a change
        self.loaded_contents = contents_of(self.loaded)
        self.last_refusal = ""
        self.run = run
        self.interpreter = handoff.interpreter()
        self.credentials = credentials("self")
        self.served = 0
        self.live: set[int] = set()
        self.plan_ahead = False  # `monitor start --plan-ahead`: a quiet `diff` once the work tree settles
        self.ahead: int | None = None  # the worker planning ahead, while it runs
        self.due: float | None = None  # when the work tree will have been quiet long enough for one
        self.askers: dict[int, float] = {}  # runs that asked what changed, and when: no plan-ahead beside them

    def refresh(self, states: list[str]) -> None:
        """Read the state folders' pickles that changed (the cache, the records) and the status
        memos' small parts (the repository's, and the watched folder's own: folderstate.py): a
        worker takes them from memory when their bytes are the same (io/git/cache.py `unpickle`,
        io/status_sources.py `load_memo`)."""
        from ..status_sources import warm_memos
        if any([cache.warm(state) | warm_memos(state) for state in states]):
            gc.freeze()

    def unchanged(self) -> bool:
        """The package and the libraries loaded are what the monitor loaded: by their stamps, or,
        when a file was only touched (an editor's save, a checkout back and forth), by content."""
        stamp, loaded = package_stamp(), stamp_of(self.loaded)
        if stamp == self.stamp and loaded == self.loaded_stamp:
            return True
        paths = [entry[0] for entry in stamp]
        if paths != [entry[0] for entry in self.stamp] or contents_of(paths) != self.contents \
                or contents_of(self.loaded) != self.loaded_contents:
            return False
        self.stamp, self.loaded_stamp = stamp, loaded
        return True

    def refusal(self, request: dict[str, Any], peer: int, fds: list[int]) -> str | None:
        """Why this monitor cannot run the request's command for the process `peer` (None: it can)."""
        why = self._refusal(request, peer, fds)
        if why is not None:
            self.last_refusal = why
        return why

    def _refusal(self, request: dict[str, Any], peer: int, fds: list[int]) -> str | None:
        if not _well_formed(request) or len(fds) != 1 + len(request["streams"]):
            return "a malformed request"
        if request["interpreter"] != self.interpreter:
            return "another interpreter, library path or package"
        if len(self.live) >= MAX_WORKERS:
            return "too many workers"
        if credentials(str(peer)) != self.credentials:
            return "another group, capability, namespace, cgroup, limit, OOM score, LSM label, priority or affinity"
        if not self.unchanged():
            return "the package or a library changed since the monitor started: restart it"
        return None


def _well_formed(request: dict[str, Any]) -> bool:
    argv, env, ignored, encodings = (request.get(k) for k in ("argv", "env", "ignored", "encodings"))
    return (isinstance(argv, list) and len(argv) >= 1 and all(isinstance(a, str) for a in argv)
            and isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
            and request.get("streams") == [0, 1, 2] and isinstance(request.get("umask"), int)
            and isinstance(request.get("path0", ""), str)
            and isinstance(ignored, list) and all(isinstance(i, int) for i in ignored)
            and isinstance(encodings, list) and len(encodings) == 3 and all(_encoding(e) for e in encodings))


def _encoding(entry: Any) -> bool:
    return entry is None or (isinstance(entry, list) and len(entry) == 2
                             and all(isinstance(x, (str, type(None))) for x in entry))


def start(conn: socket.socket, request: dict[str, Any], fds: list[int], warm: Warm, peer: int) -> int | None:
    """Fork a worker for `request` of the process `peer` (fds: its working folder, then its
    standard streams); every other descriptor of the monitor is closed in the worker. The
    worker's pid, or None when refused (the asker runs the command itself)."""
    why = warm.refusal(request, peer, fds)
    if why is not None:
        conn.sendall(json.dumps({"refused": why}).encode() + b"\n")
        return None
    pid = os.fork()
    if pid:
        warm.served += 1
        warm.live.add(pid)
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


ASKER_WINDOW = 30.0  # seconds a run that asked what changed holds plans ahead back at most (it may live on)


def plan_ahead(warm: Warm, root: str) -> None:
    """Fork a worker that runs a quiet `diff` of the work tree at a lower priority: the plan it
    keeps (io/fs/plan.py) is the next `reconcile`'s or `diff`'s while nothing changes. It has the
    monitor's own powers and environment; a request from anyone else stops it (`stop_ahead`)."""
    now = time.monotonic()
    warm.askers = {pid: at for pid, at in warm.askers.items()
                   if now - at < ASKER_WINDOW and os.path.exists(f"/proc/{pid}")}
    if warm.ahead is not None or warm.live or warm.askers or not warm.unchanged():
        return
    pid = os.fork()
    if pid:
        warm.live.add(pid)
        warm.ahead = pid
        return
    try:
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        _close_others(set())
        os.nice(10)
        os.chdir(root)
        afterwards.defer()  # its memos kept here, after its diff, where `stop_ahead` still reaches them
        try:
            warm.run(["diff", "-o", "json", root])
        finally:
            afterwards.hold()
            afterwards.finish()
    except BaseException:  # noqa: BLE001 - its exit says nothing: the plan is kept or it is not
        pass
    finally:
        os._exit(0)


def stop_ahead(warm: Warm, settle: float, asker: int | None = None) -> None:
    """Stop the worker planning ahead, and plan again only once `asker` ended: another process
    asked the monitor, its command comes first, and only one run at a time may save the work
    tree's record (the last writer wins). The monitor's own end stops it too."""
    if asker is not None:
        warm.askers[asker] = time.monotonic()
    pid, warm.ahead = warm.ahead, None
    if pid is None:
        return
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
    warm.live.discard(pid)
    warm.due = time.monotonic() + settle


def _work(conn: socket.socket, request: dict[str, Any], fds: list[int], run: Runner) -> int:
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in request.get("ignored", []):
        if sig in handoff.FORWARDED:
            signal.signal(sig, signal.SIG_IGN)  # as the asker ignores it (`nohup`)
    conn.settimeout(GO_TIMEOUT)
    conn.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
    try:
        go = handoff.line_of(conn)
    except OSError:
        go = b""
    if go != b"go\n":
        return 0  # the asker gave up and runs the command itself
    conn.settimeout(None)
    _end_with_the_asker(conn)
    _become(request, fds)
    handoff_link.conn = conn
    afterwards.defer()
    code = afterwards.exit_code(lambda: run(request["argv"][1:]), catch_all=True)
    atexit._run_exitfuncs()
    afterwards.flush_streams()
    afterwards.let_go(signal.SIGIO, signal.SIGTERM)  # SIGIO: the asker ends once answered
    try:
        afterwards.hold()
        conn.sendall(json.dumps({"exit": code}).encode() + b"\n")
    finally:
        afterwards.finish()
    return code


def _end_with_the_asker(conn: socket.socket) -> None:
    """The asker killed outright (SIGKILL) closes its end: the worker dies at once, as the command
    run there would have (the kernel signals SIGIO on the socket; a page's answer is the other cause)."""
    def check(_signum: int, _frame: Any) -> None:
        poll = select.poll()
        poll.register(conn, select.POLLRDHUP)
        if any(events & (select.POLLRDHUP | select.POLLHUP | select.POLLERR) for _, events in poll.poll(0)):
            os.kill(os.getpid(), signal.SIGKILL)
    signal.signal(signal.SIGIO, check)
    fcntl.fcntl(conn.fileno(), fcntl.F_SETOWN, os.getpid())
    fcntl.fcntl(conn.fileno(), fcntl.F_SETFL, fcntl.fcntl(conn.fileno(), fcntl.F_GETFL) | os.O_ASYNC)
    check(signal.SIGIO, None)  # gone before the signal was set up


def _become(request: dict[str, Any], fds: list[int]) -> None:
    """Take the asker's working folder, streams, umask, environment and arguments."""
    here, streams = fds[0], fds[1:]
    os.fchdir(here)
    os.close(here)
    for target, fd in enumerate(streams):  # 0, 1 and 2, all open: an asker with one closed runs its command
        os.dup2(fd, target)
        if fd != target:
            os.close(fd)
    os.umask(int(request["umask"]))
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in request["env"].items()})
    time.tzset()  # TZ as the asker has it
    _git_config_as_asked()
    sys.argv = [str(a) for a in request["argv"]]
    if sys.path:
        sys.path[0] = str(request.get("path0") or "")  # modules loaded from here on are found as the asker finds them
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        stream = _stream(fd, request["encodings"][fd], request.get("unbuffered") is True)
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _git_config_as_asked() -> None:
    """libgit2 read where the global and system git configuration live (HOME, XDG_CONFIG_HOME)
    when the monitor loaded it: found again from the asker's environment."""
    pygit2 = sys.modules.get("pygit2")
    if pygit2 is None or type(pygit2).__name__ == "_LazyModule":
        return
    from pygit2.enums import ConfigLevel
    for level in (ConfigLevel.SYSTEM, ConfigLevel.XDG, ConfigLevel.GLOBAL, ConfigLevel.PROGRAMDATA):
        pygit2.settings.search_path[level] = None  # type: ignore[assignment]


def _stream(fd: int, encoding: list[str] | None, unbuffered: bool) -> io.TextIOWrapper:
    """A text stream over `fd` as the interpreter makes one at start-up: newlines as they are,
    stdout line-buffered on a terminal and stderr always, or both unbuffered (`-u`,
    PYTHONUNBUFFERED, as the asker's are); the asker's encoding and error handler."""
    name, errors = encoding or (None, None)
    raw = io.FileIO(fd, "r" if fd == 0 else "w", closefd=False)
    buffered_stdio = not unbuffered or fd == 0
    stream: Any = raw if not buffered_stdio else io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw)
    line_buffering = buffered_stdio and (fd == 2 or raw.isatty())
    return io.TextIOWrapper(stream, encoding=name, errors=errors, newline="\n", line_buffering=line_buffering,
                            write_through=not buffered_stdio)


class _Link:
    """The worker's line to its asker, for what must happen in the asker's process (a pager)."""

    conn: socket.socket | None = None

    def page(self, command: str, env: dict[str, str], text: str) -> None:
        assert self.conn is not None
        self.conn.sendall(json.dumps({"page": command, "env": env, "text": text}).encode() + b"\n")
        handoff.line_of(self.conn)


handoff_link = _Link()


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
