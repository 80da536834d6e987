"""Work a command may leave until it has answered: the memos a run keeps for the next one (the
local cache, the run record; io/git/cache.py). A command run in its own process does it at once.
A command handed to the monitor answers first (its output, then its exit code) and keeps them
after, in the worker the monitor forked, as git leaves `gc --auto` until a command is done: they
only save the next run time, and the asker waits for nothing that its command's result needs.

The next run reads no memo half-kept: from the moment work is left for later until it is done,
the worker holds the state folder's `memos.lock` (flock), and a reader of the memos waits for it
(`settled`). A killed worker's lock goes with it, and each memo file is replaced whole."""
from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Callable

LOCK_FILE = "memos.lock"

_queue: list[Callable[[], None]] | None = None  # None: work is done at once
_held: dict[str, int] = {}  # state folder -> the descriptor holding its lock, while work waits


def later(state: Path | None, work: Callable[[], None]) -> None:
    """Do `work`, which writes memos into the state folder `state`: now, or after the answer."""
    if _queue is None or state is None:
        work()
        return
    key = os.path.realpath(state)
    if key not in _held:
        fd = _open_lock(Path(key), create=True)
        if fd is None:  # no lock to hold: do it now rather than let a reader see it half-done
            work()
            return
        fcntl.flock(fd, fcntl.LOCK_EX)
        _held[key] = fd
    _queue.append(work)


def defer() -> None:
    """From now on, `later` queues work until `finish` (a monitor's worker, before its command)."""
    global _queue
    _queue = []


def finish() -> None:
    """Do the work left for later, then let readers in. A failure costs only time next run."""
    global _queue
    queue, _queue = _queue or [], None
    try:
        for work in queue:
            try:
                work()
            except Exception:  # noqa: BLE001 - memos: the next run computes what is missing
                pass
    finally:
        for fd in _held.values():
            os.close(fd)
        _held.clear()


def settled(state: Path) -> None:
    """Wait until no other process has memos of `state` left to write."""
    key = os.path.realpath(state)
    if key in _held:
        return  # this process's own: it writes them after its answer
    fd = _open_lock(Path(key), create=False)
    if fd is None:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    finally:
        os.close(fd)


def _open_lock(state: Path, create: bool) -> int | None:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_CREAT if create else 0)
    try:
        if create:
            state.mkdir(parents=True, exist_ok=True)
        return os.open(state / LOCK_FILE, flags, 0o644)
    except OSError:  # none yet, a link, a full or read-only disk: nothing to hold or to wait for
        return None
