"""A checkout's index changes, collected, then made in one go.

A one-mailbox change touches a few hundred index entries, but libgit2 reads and writes the whole
index to make them: ~0.6 s at a fleet's 200,000 entries, where `git update-index` takes ~0.1 s for
the same file. So when a `git` program is on PATH the changes go through it (one process; the index
is written under its lock, fsynced with `core.fsync=index`); without one, or when it fails, libgit2
makes them as before. Either way the index holds the same entries (path, mode, id; no stat data,
as libgit2's additions), and both write it atomically, so a kill leaves the old index or the new
one: the checkout's journal (checkout.py) then makes the changes again. git ends with this process
(PR_SET_PDEATHSIG): the next command's recovery removes the index.lock a killed run left, which a
git still writing would otherwise rename into place. Beside other threads (no code may run between
fork and exec there) libgit2 makes the changes.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

from ..fs.forked import end_with, may_fork
from ..pygit import pygit2

REMOVED = "0" * 40
TIMEOUT = 300.0  # seconds; a git that hangs is given up, and libgit2 does the work


class IndexUpdates:
    """Index additions and removals in order, as `pygit2.Index` takes them (`add`, `remove`, `in`)."""

    def __init__(self) -> None:
        self.changes: list[tuple[str, str, int]] = []  # (path, hex id or "", mode): "" removes

    def add(self, entry: pygit2.IndexEntry) -> None:
        self.changes.append((os.fspath(entry.path), str(entry.id), int(entry.mode)))

    def remove(self, path: str) -> None:
        self.changes.append((path, "", 0))

    def __contains__(self, path: str) -> bool:
        return True  # a removal of a path the index lacks is no change, in git as in libgit2

    def write(self, repo: pygit2.Repository, meanwhile: Callable[[], None] = lambda: None) -> None:
        """Make the changes in the repository's index (nothing to make: the index is not touched).
        `meanwhile` runs while git makes them (the checkout's sync of the files written: both are
        done before the journal goes, in either order)."""
        started = _start_git(repo, self.changes) if self.changes else None
        try:
            meanwhile()
        except BaseException:
            if started is not None:
                started.kill()
                started.wait()
            raise
        if not self.changes or (started is not None and _finished(started)):
            return
        index = repo.index
        for path, oid, mode in self.changes:
            if oid:
                index.add(pygit2.IndexEntry(path, pygit2.Oid(hex=oid), pygit2.enums.FileMode(mode)))
            elif path in index:
                index.remove(path)
        index.write()


def _start_git(repo: pygit2.Repository, changes: list[tuple[str, str, int]]) -> subprocess.Popen[bytes] | None:
    """`git update-index` making the changes, started (None: no git, or other threads alive)."""
    program = shutil.which("git")
    if program is None or not repo.workdir or not may_fork():  # beside other threads: no code between fork and exec
        return None
    parent = os.getpid()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}  # this repository's own index
    try:
        with tempfile.TemporaryFile() as lines:  # a file, not a pipe: nothing here waits for git to read
            for path, oid, mode in changes:
                lines.write(f"{mode:o} {oid or REMOVED}\t".encode() + os.fsencode(path) + b"\0")
            lines.seek(0)
            return subprocess.Popen([program, f"--git-dir={Path(repo.path)}", f"--work-tree={Path(repo.workdir)}",
                                     "-c", "core.fsync=index", "-c", "core.fsyncMethod=fsync",
                                     "update-index", "-z", "--index-info"],
                                    stdin=lines, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                                    preexec_fn=lambda: end_with(parent))  # noqa: PLW1509 - one thread, see above
    except (OSError, subprocess.SubprocessError):
        return None


def _finished(started: subprocess.Popen[bytes]) -> bool:
    """True when git made the changes; False when it failed or hung (its lock and rename make it
    all or nothing: libgit2 then makes them)."""
    try:
        return started.wait(timeout=TIMEOUT) == 0
    except subprocess.TimeoutExpired:
        started.kill()
        started.wait()
        return False
