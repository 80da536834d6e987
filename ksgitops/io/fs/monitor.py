"""The change feed of one work tree: a process that outlives the commands, keeps its folders under
inotify watches (watchtree.py) and answers, over a unix socket in the git directory (in the
folder's own state folder, folderstate.py), "which paths changed since token T?" (feed.py asks).

A token is `<history>:<n>`: the history is new each time the monitor starts or loses events, and n
counts the batches of changes it has read. Before answering, the monitor reads the kernel's queue
to its end, so the answer covers every change made before the question was asked. An answer for
a token of another history, or of a history trimmed since (more than HISTORY_LIMIT paths), is
"unknown": the asker checks everything, as it does with no monitor at all.
"""
from __future__ import annotations

import json
import os
import secrets
import selectors
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

from . import handoff_worker
from .feed import FORMAT, address, hold_monitor_lock, identity_of
from .handoff import FDS, peer_pid
from .handoff_worker import Warm
from .folderstate import place_of
from .paths import STATE_DIR, private_folder
from .watchtree import CannotWatch, Overflow, WatchTree

HISTORY_LIMIT = 500_000  # distinct changed paths kept; beyond, the history starts again
REQUEST_TIMEOUT = 2.0  # seconds an asker may take to send its whole request
SETTLE = 0.3  # seconds without a change before planning ahead (an editor's save is a burst of events)


class History:
    """The changed paths seen, each with the number of the batch it last changed in."""

    def __init__(self) -> None:
        self.name = secrets.token_hex(8)
        self.count = 0
        self.floor = 0  # tokens older than this were trimmed away
        self.changed: dict[str, int] = {}

    @property
    def token(self) -> str:
        return f"{self.name}:{self.count}"

    def add(self, paths: list[str]) -> None:
        if not paths:
            return
        self.count += 1
        changed, count = self.changed, self.count
        for path in paths:
            changed[path] = count
        if len(changed) > HISTORY_LIMIT:
            self.floor = count
            changed.clear()

    def since(self, token: Any) -> list[str] | None:
        """The paths changed after `token` (None: unknown, as for a token of another history)."""
        name, _, count = str(token).partition(":")
        if name != self.name or not count.isdigit() or not self.floor <= int(count) <= self.count:
            return None
        after = int(count)
        return sorted(path for path, n in self.changed.items() if n > after)


class _Unwatched:
    """A repository without a work tree: nothing to watch (its monitor only runs commands)."""

    folders = 0

    def drain(self) -> list[str]:
        return []

    def fileno(self) -> int:
        return -1  # never registered

    def close(self) -> None:
        pass


class Monitor:
    """One work tree's watches, history and socket (a bare repository's: none, and no history)."""

    def __init__(self, work_tree: Path, git_dir: Path) -> None:
        self.root = os.path.realpath(work_tree)
        self.git_dir = os.path.realpath(git_dir)
        identity = identity_of(self.root)
        if identity is None:
            raise FileNotFoundError(f"{self.root}: no such folder")
        self.identity = identity
        self.tree = self._watch()
        self.history = History()
        self.started = time.time()
        self.restarts = 0
        self.asked = time.monotonic()  # when a command last asked or was handed over
        self.idle_exit = 0.0  # seconds without a command after which it stops (0: never)

    @property
    def bare(self) -> bool:
        return self.root == self.git_dir

    def _watch(self) -> WatchTree | _Unwatched:
        git_dir = self.git_dir
        return _Unwatched() if self.bare else WatchTree(self.root, lambda path: path == git_dir)

    def restart(self, why: str) -> None:
        """Events were lost: new watches, and a new history (every old token answers unknown)."""
        log(f"{why}: watching again from scratch")
        self.tree.close()
        self.tree = self._watch()
        self.history = History()
        self.restarts += 1

    def catch_up(self) -> None:
        try:
            self.history.add(self.tree.drain())
        except (Overflow, OSError) as e:  # events lost, or a walk met the tree changing under it
            self.restart(str(e))

    def gone(self) -> bool:
        """The work tree was removed or moved, or the git directory went: nothing left to watch."""
        return identity_of(self.root) != self.identity or not os.path.isdir(self.git_dir)

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op", "since")
        if op == "stop":
            return {"stopping": True}
        self.catch_up()
        facts = {"format": FORMAT, "identity": self.identity, "token": self.history.token}
        if op == "status":
            return {**facts, "pid": os.getpid(), "folders": self.tree.folders, "started": self.started,
                    "restarts": self.restarts, "remembered": len(self.history.changed), "idleExit": self.idle_exit}
        return {**facts, "changed": None if self.bare else self.history.since(request.get("since"))}


def serve(work_tree: Path, git_dir: Path, ready: Any = None, warm: Warm | None = None, idle_exit: float = 0.0) -> int:
    """Run the monitor until asked to stop, signalled, or its work tree goes, or (`idle_exit` > 0)
    no command asked anything for that many seconds. `ready`: a file descriptor told "ready" (or
    why not) once the first watches are in place; `warm`: the code commands are handed to
    (handoff_worker.py; None: the monitor only answers what changed)."""
    place = place_of(work_tree)  # the folder's own state folder: two folders of a repository, two monitors
    where = address(git_dir, place)
    try:
        lock = hold_monitor_lock(Path(git_dir) / place)
        monitor = Monitor(work_tree, git_dir)
        monitor.idle_exit = idle_exit
        listener = _listen(where)
    except (OSError, CannotWatch) as e:
        _tell(ready, f"error: {e}")
        return 1
    _tell(ready, f"ready {monitor.tree.folders}")
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.append(True))
    selector = selectors.DefaultSelector()
    if not monitor.bare:
        selector.register(monitor.tree.fileno(), selectors.EVENT_READ, "events")
    selector.register(listener, selectors.EVENT_READ, "ask")
    wake = _wake_on_signals()
    selector.register(wake, selectors.EVENT_READ, "signal")  # a worker ended, or a stop: no 5 s wait
    log(f"watching {monitor.root}: {monitor.tree.folders} folders" if not monitor.bare else
        f"{monitor.root}: a repository without a work tree: nothing watched, commands run")
    events, restarts = monitor.tree.fileno(), 0
    listening = _inode(where)
    states = list(dict.fromkeys([os.path.join(monitor.git_dir, STATE_DIR), os.path.join(monitor.git_dir, place)]))
    if warm is not None:
        warm.refresh(states)
    seen = monitor.history.token
    if warm is not None and warm.plan_ahead and not monitor.bare:  # once at the start too: a record as of
        warm.due = time.monotonic() + SETTLE  # this history, so the first command is answered from the feed
    try:
        while not stop:
            due = warm.due if warm is not None and warm.plan_ahead else None
            wait = 5.0 if due is None else min(5.0, max(0.0, due - time.monotonic()))
            if idle_exit > 0:  # wake in time to stop
                wait = min(wait, max(0.0, monitor.asked + idle_exit - time.monotonic()) + 0.01)
            woken = selector.select(timeout=wait)
            for key, _ in woken:
                if key.data == "events":
                    monitor.catch_up()
                elif key.data == "signal":
                    _drain(wake)
                elif _serve_one(listener, monitor, warm):
                    stop.append(True)
                if monitor.restarts != restarts:  # a new inotify descriptor, maybe under the old number
                    selector.unregister(events)
                    events, restarts = monitor.tree.fileno(), monitor.restarts
                    selector.register(events, selectors.EVENT_READ, "events")
            if (_reap(warm) or not woken) and warm is not None:  # a worker ended, or nothing to do
                warm.refresh(states)
            if warm is not None and warm.plan_ahead and not monitor.bare:
                if monitor.history.token != seen:  # the work tree changed: plan once it is quiet
                    seen, warm.due = monitor.history.token, time.monotonic() + SETTLE
                elif warm.due is not None and time.monotonic() >= warm.due and not warm.live:
                    warm.due = None
                    handoff_worker.plan_ahead(warm, str(monitor.root))
                    if warm.ahead is not None:
                        log(f"worker {warm.ahead}: planning ahead")
                    if warm.ahead is None and warm.askers:  # someone's run goes on: look again later
                        warm.due = time.monotonic() + SETTLE
            if monitor.gone():
                log("the work tree or its git directory went: stopping")
                break
            if idle_exit > 0 and time.monotonic() - monitor.asked >= idle_exit and not (warm is not None and warm.live):
                log(f"no command asked for {idle_exit:g} s: stopping")
                break
            if not _still_ours(where, listening):
                log(f"{where}: the socket is not this monitor's any more: stopping")
                break
    except CannotWatch as e:
        log(f"stopping: {e}")
        return 1
    finally:
        if warm is not None:
            handoff_worker.stop_ahead(warm, SETTLE)  # it would save the record after the monitor is gone
        listener.close()
        if not where.startswith("\0"):
            try:
                os.unlink(where)
            except OSError:
                pass
        monitor.tree.close()
        os.close(lock)
    log("stopped")
    return 0


def _inode(where: str) -> int:
    if where.startswith("\0"):
        return 0  # an abstract name: no file to lose
    try:
        return os.stat(where).st_ino
    except OSError:
        return -1


def _still_ours(where: str, inode: int) -> bool:
    """The socket's file is the one this monitor made (removed or replaced, no one can ask it)."""
    return _inode(where) == inode


def _listen(where: str) -> socket.socket:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if not where.startswith("\0"):
        private_folder(os.path.dirname(where))
        try:
            os.unlink(where)  # a socket left by a monitor that was killed (start checked none answers)
        except FileNotFoundError:
            pass
    old = os.umask(0o077)  # only the owner asks
    try:
        listener.bind(where)
    finally:
        os.umask(old)
    listener.listen(16)
    return listener


def _serve_one(listener: socket.socket, monitor: Monitor, warm: Warm | None = None) -> bool:
    """Answer one asker, or fork a worker for its command; True when it asked the monitor to stop.
    Whatever an asker sends costs it its answer at worst, never the monitor."""
    try:
        conn, _ = listener.accept()
    except OSError:
        return False
    fds: list[int] = []
    with conn:
        try:
            peer = peer_pid(conn)
            if peer is None:
                return False  # another user's process
            if warm is None or peer != warm.ahead:  # a command, not the monitor's own planning ahead
                monitor.asked = time.monotonic()
            deadline = time.monotonic() + REQUEST_TIMEOUT  # one slow asker holds the monitor no longer
            conn.settimeout(REQUEST_TIMEOUT)
            data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 8)
            request = json.loads(_read_line(conn, data.removeprefix(FDS), deadline))
            request = request if isinstance(request, dict) else {}
            if warm is not None and warm.plan_ahead and peer != warm.ahead and request.get("op") != "status":
                handoff_worker.stop_ahead(warm, SETTLE, peer)  # a run: it may save the record
            if request.get("op") == "exec":
                if warm is None:
                    conn.sendall(b'{"refused": "this monitor runs no commands"}\n')
                    return False
                monitor.catch_up()  # the worker's first question is answered from an up-to-date history
                worker = handoff_worker.start(conn, request, fds, warm, peer)
                log(f"worker {worker}: {' '.join(map(str, request['argv'][1:]))[:200]}" if worker is not None
                    else f"a command runs in its own process: {warm.last_refusal}")
                return False
            reply = monitor.answer(request)
            if request.get("op") == "status":
                reply["handoff"] = warm is not None
                reply["served"] = warm.served if warm is not None else 0
                reply["refused"] = warm.last_refusal if warm is not None else ""
            conn.sendall(json.dumps(reply).encode() + b"\n")
        except CannotWatch:
            raise
        except Exception:  # noqa: BLE001 - a malformed or hostile request: no answer
            return False
        finally:
            for fd in fds:
                os.close(fd)
    return bool(reply.get("stopping"))


def _wake_on_signals() -> int:
    """A pipe the interpreter writes a byte to on each signal (SIGCHLD included), for the selector."""
    read, write = os.pipe()
    for fd in (read, write):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    return read


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass


def _reap(warm: Warm | None) -> int:
    """Collect the workers that ended (the monitor never waits for one); how many."""
    ended = 0
    try:
        while pid := os.waitpid(-1, os.WNOHANG)[0]:
            ended += 1
            if warm is not None:
                warm.live.discard(pid)
                warm.ahead = None if warm.ahead == pid else warm.ahead
    except ChildProcessError:
        pass
    return ended


def _read_line(conn: socket.socket, data: bytes = b"", deadline: float | None = None) -> bytes:
    while not data.endswith(b"\n") and len(data) < 1 << 20:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request took too long")
            conn.settimeout(left)
        chunk = conn.recv(1 << 16)
        if not chunk:
            break
        data += chunk
    return data


def _tell(fd: Any, message: str) -> None:
    if fd is None:
        return
    try:
        os.write(fd, message.encode() + b"\n")
        os.close(fd)
    except OSError:
        pass


def log(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {message}", file=sys.stderr, flush=True)
