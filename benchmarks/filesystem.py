"""What the harness does about the file system between figures: dirty pages written out before
the next figure, and no folder removed until the run ends.

Removal waits because of how ext4 picks inodes: on a file system without a journal (this
machine's), an inode freed within the last minute (six while its inode table block is dirty) is
passed over when a new file needs one, one buffer lookup per inode passed. Creating 200,000 files
right after removing 200,000 others then costs several times what it costs on a settled file
system: a mode's full write, measured just after the harness removed the previous mode's fleet,
measured the harness. The probe floor shows the file system's pace at the start of a run.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import time
from pathlib import Path

from measure import log

_discarded: list[Path] = []

# creates FILES files of 600 bytes, ten to a folder, as the work-tree writer does (os calls on str paths)
PROBE_FILES = 20_000
PROBE = f"""
import os, sys
flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
base, data = sys.argv[1], b"x" * 600
os.mkdir(base)
for i in range({PROBE_FILES} // 10):
    folder = f"{{base}}/d{{i}}"
    os.mkdir(folder)
    for j in range(10):
        fd = os.open(f"{{folder}}/f{{j}}.yaml", flags, 0o644)
        os.write(fd, data)
        os.close(fd)
"""

# writes MEMORY_MIB MiB the process never touched before: the pace at which this machine gives a
# process (and the page cache: a file's first page) memory it has not used
MEMORY_MIB = 256
MEMORY = f"""
block = b"x" * ({MEMORY_MIB} << 20)
"""


def discard(path: Path) -> None:
    """Remove `path` when the run ends (remove_discarded), not now: see the module's docstring."""
    _discarded.append(path)


def remove_discarded() -> None:
    while _discarded:
        shutil.rmtree(_discarded.pop(), ignore_errors=True)


def memos_kept(repo: Path) -> float:
    """Wait until the last command's memos are written (a command answers first and keeps its memos
    after, in a child holding the state folder's memos.lock, io/fs/afterwards.py): each figure is
    then its own command's, as for a user whose commands are not a few milliseconds apart."""
    for git_dir in (repo, repo / ".git"):
        lock = git_dir / "ksgitops-state" / "memos.lock"
        if lock.is_file():
            started = time.perf_counter()
            with open(lock, "rb") as f:
                fcntl.flock(f, fcntl.LOCK_SH)
            return time.perf_counter() - started
    return 0.0


def settle(label: str) -> None:
    """Every dirty page written out before the next figure is taken: on a slow disk the fleet
    just written would otherwise be flushed during the next mode's full run, and that run, not
    the anchor beside it, would pay."""
    started = time.perf_counter()
    os.sync()
    log(f"{label}: the disk settled in {time.perf_counter() - started:.1f}s (sync)")
