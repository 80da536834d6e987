"""Step 2 of the work-tree write protocol (worktree.py): each changed root's new content written
to its staging sibling, in two threads for a large batch, with the stamps of what was written
(statcache.py) when a record is kept."""
from __future__ import annotations

import os
import shutil
import stat
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ...core.tree import KEEP, FileTree, has_files
from .tree import lstat_mode, write_new
from .statcache import ABSENT, THREADS, Observed, lstamp, stamp_of

PARALLEL = 4  # roots in a batch from which staging runs in threads


@dataclass
class Change:
    path: str  # the root, relative to the work tree
    content: FileTree | bytes | None  # None: the root goes
    existed: bool
    keep: list[str] = field(default_factory=list)  # paths inside the old root to carry over
    made: list[str] | None = None  # read from a journal: the top-level names a new root was staged with


def sibling(target: Path, role: str) -> Path:
    return target.with_name(f".{target.name}.ksgitops-{role}")


def stage_all(root: Path, changes: list[Change], observe: bool) -> list[Observed | None]:
    """Step 2 for a batch: in two threads when there is much to write (the file system's calls
    release the GIL). Every staging has ended before a failure is raised."""
    if len(changes) < PARALLEL or THREADS < 2:
        return [_stage(root, c, observe) for c in changes]
    failed = threading.Event()

    def one(change: Change) -> Observed | None:
        if failed.is_set():
            return None
        try:
            return _stage(root, change, observe)
        except BaseException:
            failed.set()
            raise
    with ThreadPoolExecutor(THREADS) as pool:
        futures = [pool.submit(one, c) for c in changes]
    return [f.result() for f in futures]


def _stage(root: Path, change: Change, observe: bool) -> Observed | None:
    """Write a root's new content to its staging sibling; with `observe`, the path (inside the
    root, "" the root itself) and stamp of everything it owns, as written, in the order written."""
    target = root / change.path
    staging = sibling(target, "stage")
    remove(staging)
    if change.content is None:
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(change.content, bytes):
        write_new(str(staging), change.content)
        return None  # a file root's stamp changes as it is renamed in: recorded when next compared
    os.mkdir(staging)
    seen: Observed | None = [] if observe else None
    _write_files(str(staging), change.content, seen, "")
    if seen is not None and not any(v is KEEP for v in change.content.values()):
        seen.insert(0, ("", lstamp(str(staging))))  # no entry of its own but what the tree names
    return seen


def _write_files(folder: str, tree: FileTree, seen: Observed | None, prefix: str) -> None:
    """The hot loop of a full reconcile into a work tree: plain os calls on str paths."""
    for name, value in tree.items():
        if isinstance(value, dict):
            rel = f"{prefix}{name}"
            if not has_files(value):
                if seen is not None:
                    seen.append((rel, ABSENT))  # a folder the tree wants gone
                continue
            path = f"{folder}/{name}"
            os.mkdir(path)
            if seen is None:
                _write_files(path, value, None, "")
                continue
            at = len(seen)
            seen.append((rel, ABSENT))
            _write_files(path, value, seen, f"{rel}/")
            seen[at] = (rel, lstamp(path))  # after its last entry
        elif isinstance(value, bytes):
            written = write_new(f"{folder}/{name}", value, seen is not None)
            if seen is not None and written is not None:
                seen.append((f"{prefix}{name}", stamp_of(written)))


def remove(path: Path) -> None:
    mode = lstat_mode(path)
    if stat.S_ISDIR(mode):
        shutil.rmtree(path)
    elif mode:
        os.unlink(path)
