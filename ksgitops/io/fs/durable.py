"""Durability primitives: make what was written survive a power loss, at the cost of one call per
batch rather than one per file.

A kill of the process needs none of this (the kernel's page cache outlives it); a power loss does.
The writers call `sync_filesystem` once per transaction step (everything staged, then everything
renamed) instead of fsync per file: at 1,000 WECs a reconcile writes ~200,000 files, and an fsync
each would cost minutes (see benchmarks/fsync_cost.py).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from ..pygit import pygit2

from . import waiting
from .paths import STATE_DIR, plain_staging, write_state

_libc: Any = None


def _syncfs() -> Any:
    """libc's syncfs(2) (Linux), or None where there is none."""
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
            _libc.syncfs.argtypes = [ctypes.c_int]
        except (OSError, AttributeError):
            _libc = False
    return _libc.syncfs if _libc else None


def sync_filesystem(path: Path | str) -> None:
    """Flush every dirty page and directory entry of the file system holding `path` to disk."""
    syncfs = _syncfs()
    if syncfs is None:
        os.sync()
        return
    fd = os.open(str(path), os.O_RDONLY)
    try:
        if syncfs(fd) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, os.strerror(errno), str(path))
    finally:
        os.close(fd)


def fsync_dir(path: Path | str) -> None:
    """Make a folder's entries (names created, renamed or removed in it) durable."""
    _fsync(path, os.O_RDONLY | os.O_DIRECTORY)


def fsync_file(path: Path | str) -> None:
    """Make a file's data and inode durable (its name: fsync_dir of its folder)."""
    _fsync(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO put there meanwhile never blocks


def _fsync(path: Path | str, flags: int) -> None:
    fd = os.open(str(path), flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durably(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Replace one small file atomically and durably: a sibling written and fsynced, renamed over
    `path`, then the folder fsynced. For journals and other files whose loss matters; as
    `paths.write_state`, never through a link or into a FIFO at the staging name."""
    staging = plain_staging(path)
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.fchmod(fd, mode)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(staging, path)
    fsync_dir(path.parent)


@contextmanager
def libgit2_fsync() -> Iterator[None]:
    """libgit2 fsyncs what it writes (loose objects, refs, the index) inside this block: a commit
    and the ref move that publishes it. Outside, pygit2 work (tests, fetches) runs at full speed."""
    pygit2.settings.enable_fsync_gitdir(True)
    try:
        yield
    finally:
        pygit2.settings.enable_fsync_gitdir(False)  # libgit2's default


_held: dict[str, list[int]] = {}  # folder -> [fd, depth]: re-entrant within the process


@contextmanager
def exclusive(folder: Path | str, wait: bool = True) -> Iterator[bool]:
    """Hold an advisory lock (flock) on `folder` for a write and its recovery, so that a command
    never rolls back a write another live process is doing (it waits for it instead). The kernel
    drops the lock of a killed process; nothing is written to take it. A wait of more than a moment
    says on stderr which process holds the lock (`waiting.py`). Without `wait`, a lock
    another process holds is not waited for: the block runs holding nothing, told False."""
    key = os.path.realpath(folder)
    held = _held.get(key)
    if held is not None:
        held[1] += 1
        try:
            yield True
        finally:
            held[1] -= 1
        return
    fd = os.open(key, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if wait:
            waiting.take(fd, key)
        else:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
        _held[key] = [fd, 1]
        try:
            yield True
        finally:
            del _held[key]
    finally:
        os.close(fd)


def os_reason(error: OSError) -> str:
    """What went wrong, in words, for an OSError (libgit2's come with no errno: their text says it);
    a lock file named in it gets the way out."""
    reason = error.strerror or str(error) or type(error).__name__
    if ".lock" in reason:
        reason += (" (another git process is working in this repository, or one was killed: when none is "
                   "running, remove the .lock file named here)")
    return reason


def common_dir(git_dir: Path | str) -> Path:
    """The git directory holding the repository's refs and objects: a linked work tree's own git
    directory (`.git/worktrees/<name>`) names it in its `commondir` file (relative, or absolute)."""
    path = Path(git_dir)
    try:
        named = (path / "commondir").read_text().strip()
    except (OSError, UnicodeDecodeError):
        return path
    return path / named if named else path


REF_INTENT = f"{STATE_DIR}/ref-intent"  # in the git directory: the refs a ksgitops process is moving


PER_WORKTREE = ("refs/worktree/", "refs/bisect/", "refs/rewritten/")  # refs a linked work tree keeps in its own git dir
GIT_FILES = {"FETCH_HEAD": False, "shallow": True, "config": True, "packed-refs": True}  # file -> in the common dir
_intents: dict[str, list[str]] = {}  # intent file -> what this process has named in it (nested moves)


@contextmanager
def moving_refs(git_dir: str, *refs: str) -> Iterator[None]:
    """Hold the repository's write lock (`exclusive`) while `refs` move.

    libgit2 moves a ref through `<ref>.lock`; a kill in between leaves that file behind, and every
    later writer (git's too) fails on it. The intent file names the refs before they move and goes
    when they have; a later process that holds the lock and still finds it knows its writer died
    mid-move (a live one would hold the lock), and removes the lock files of those refs, and only
    those: a lock another git process holds is never touched. A fetch names what it may move
    without knowing which refs that will be: `refs/.../*` (every ref below), and the files of
    `GIT_FILES` that libgit2 also writes through a lock (FETCH_HEAD, shallow, config, packed-refs).

    In a linked work tree (`git worktree add`) branches live in the common git directory: the
    lock and the intent are taken there too (every work tree of the repository moves its branches
    under one lock), beside the work tree's own lock (which its checkout's recovery waits on)."""
    common = common_dir(git_dir)
    with exclusive(git_dir), exclusive(common):
        intent = common / REF_INTENT
        key = os.path.realpath(intent)
        outer = _intents.get(key)
        if outer is None:
            for named in {Path(git_dir) / REF_INTENT, intent}:  # an earlier version's, in the work tree's own
                _clear_dead_mover(Path(git_dir), common, named)
        names = [*(outer or ()), *refs]
        write_state(intent, ("\n".join(names) + "\n").encode())
        _intents[key] = names  # once written: a failed write must leave no move of this process behind
        try:
            yield
        finally:
            if outer is None:
                del _intents[key]
                intent.unlink(missing_ok=True)
            else:  # the enclosing move goes on: its refs stay named
                _intents[key] = outer
                write_state(intent, ("\n".join(outer) + "\n").encode())


def _clear_dead_mover(git_dir: Path, common: Path, intent: Path) -> None:
    try:
        named = intent.read_text().split()
    except (FileNotFoundError, UnicodeDecodeError):
        return
    for ref in named:
        parts = ref.split("/")
        if ref in GIT_FILES:
            (common if GIT_FILES[ref] else git_dir).joinpath(f"{ref}.lock").unlink(missing_ok=True)
            continue
        if ref == "HEAD" or ref.startswith(PER_WORKTREE):
            where = git_dir
        elif parts[0] == "refs" and all(p not in ("", ".", "..") for p in parts):
            where = common
        else:
            continue
        if parts[-1] == "*":  # every ref below the folder
            _clear_locks_below(where.joinpath(*parts[:-1]))
        else:
            (where / f"{ref}.lock").unlink(missing_ok=True)
    intent.unlink(missing_ok=True)


def _clear_locks_below(folder: Path) -> None:
    """Every `*.lock` file below `folder`, never following a link."""
    for root, _, files in os.walk(folder):
        for name in files:
            if name.endswith(".lock"):
                Path(root, name).unlink(missing_ok=True)
