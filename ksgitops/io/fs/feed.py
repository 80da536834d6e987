"""Asking a work tree's monitor (monitor.py) what changed since a token, and what an answer vouches for.

A work-tree run asks before it looks at anything: every change made before the answer is in it,
and the answer's token is where the next run asks from. A path the answer does not name has not
changed since the token was given, so its recorded stamp still holds without an lstat
(statcache.py, proof.py). No monitor, a slow one, one watching another folder or one that lost
events all mean "unknown": everything is checked, as without a monitor.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import socket
from pathlib import Path
from typing import Any, Iterable, NamedTuple

from .folderstate import MONITOR_LOCK, STATE
from .handoff import address, same_user
from .paths import private_folder

TIMEOUT = 5.0  # seconds an answer may take (a monitor re-walking after lost events) before checking everything
FORMAT = 1
ANOTHER = "another monitor watches this work tree"  # why a monitor does not start (monitor.py)
_UNWATCHED = re.compile(r"\..+\.ksgitops-[a-z]+")  # a writer's staging, new or trash sibling (staging.py)


def hold_monitor_lock(state: Path) -> int:
    """Take the monitor lock in the folder's own state folder `state` (folderstate.py), for as
    long as the descriptor returned stays open (OSError(ANOTHER): another monitor holds it; a second one would take the
    socket's name from the first and leave it answering no one)."""
    private_folder(state)
    fd = os.open(state / MONITOR_LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise OSError(ANOTHER) from None
    return fd


def unwatched(name: str) -> bool:
    """A folder the monitor puts no watch on: nothing in it is vouched for."""
    return _UNWATCHED.fullmatch(name) is not None


class Changes:
    """The paths a monitor saw change. A changed path stands for everything below it (a folder
    created, moved or deleted), and for its folder's own stamp (an entry came, went or was renamed)."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.changed = set(paths)
        self.folders = {path.rpartition("/")[0] for path in self.changed}  # folders whose entries changed
        self.above = {path[:i] for path in self.changed for i in _cuts(path)} | self.changed
        self.everything = "" in self.changed  # the work tree itself changed

    def stamp_may_differ(self, path: str) -> bool:
        """Whether the stamp of `path` (a file, or a folder with or without a trailing /) may have moved."""
        path = path.rstrip("/")
        return self.everything or path in self.changed or path in self.folders or self._below_changed(path)

    def tree_may_differ(self, root: str) -> bool:
        """Whether anything at or below `root` may have changed."""
        return self.everything or root in self.above or self._below_changed(root)

    def _below_changed(self, path: str) -> bool:
        """A folder above `path` changed (created, moved, deleted), or `path` lies in a folder no
        watch is kept on."""
        changed = self.changed
        for i in _cuts(path):
            if path[:i] in changed:
                return True
        return ".ksgitops-" in path and any(unwatched(name) for name in path.split("/"))


def _cuts(path: str) -> list[int]:
    """Where each folder above `path` ends."""
    cuts, i = [], path.find("/")
    while i >= 0:
        cuts.append(i)
        i = path.find("/", i + 1)
    return cuts


def identity_of(root: str | Path) -> list[Any] | None:
    """Which folder a monitor watches: its real path, device and inode (None: it is not there)."""
    try:
        top = os.stat(root)
    except OSError:
        return None
    return [os.path.realpath(root), top.st_dev, top.st_ino]


class Answer(NamedTuple):
    token: str
    changes: Changes | None  # None: unknown, check everything


def ask(git_dir: str, since: str | None, identity: Any, timeout: float = TIMEOUT, place: str = STATE) -> Answer | None:
    """The answer of the monitor of the folder whose state folder is `place` (folderstate.py)
    (None: there is no monitor, or it watches another folder)."""
    reply = request(git_dir, {"since": since}, timeout, place)
    if reply is None or reply.get("format") != FORMAT or list(reply.get("identity") or ()) != list(identity):
        return None
    changed = reply.get("changed")
    token = reply.get("token")
    if not isinstance(token, str):
        return None
    if not isinstance(changed, list) or not all(isinstance(p, str) for p in changed):
        return Answer(token, None)
    return Answer(token, Changes(changed))


def request(git_dir: str, message: dict[str, Any], timeout: float = TIMEOUT,
            place: str = STATE) -> dict[str, Any] | None:
    """One question to the monitor of the folder whose state folder in `git_dir` is `place` (None: none answers)."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(timeout)
    try:
        conn.connect(address(git_dir, place))
        if not same_user(conn):
            return None  # another user's process holds the name (an abstract socket has no file mode)
        conn.sendall(json.dumps(message).encode() + b"\n")
        chunks = []
        while chunk := conn.recv(1 << 16):
            chunks.append(chunk)
        reply = json.loads(b"".join(chunks))
    except (OSError, ValueError):
        return None
    finally:
        conn.close()
    return reply if isinstance(reply, dict) else None
