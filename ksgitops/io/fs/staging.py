"""Step 2 of the work-tree write protocol (worktree.py): each changed root's new content written
to its staging sibling, in two threads for a large batch, with the stamps of what was written
(statcache.py) when a record is kept, and each file's stat as written when a git index is to
follow (io/git/indexstat.py)."""
from __future__ import annotations

import os
import shutil
import stat
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from ...core.tree import KEEP, OTHERS, FileTree, has_files
from .paths import FileStats, LinkError, index_stat, lstat_mode, write_new
from .statcache import ABSENT, THREADS, Observed, full_stamp, lstamp, stamp_of

PARALLEL = 4  # roots in a batch from which staging runs in threads


class Change(Struct):
    path: str  # the root, relative to the work tree
    content: FileTree | bytes | None  # None: the root goes
    existed: bool
    keep: list[str] = field(default_factory=list)  # paths inside the old root to carry over
    made: list[str] | None = None  # read from a journal: the top-level names a new root was staged with
    reuse: list[str] = field(default_factory=list)  # folders of the old root already as generated: moved, not staged

    @property
    def carried(self) -> list[str]:
        """Every path moved from the old root into the new one (kept, then reused)."""
        return self.keep + self.reuse


def sibling(target: Path, role: str) -> Path:
    return target.with_name(f".{target.name}.ksgitops-{role}")


def stage_all(root: Path, changes: list[Change], observe: bool,
              files: FileStats | None = None, checkout: Any = None) -> list[Observed | None]:
    """Step 2 for a batch: in two threads when there is much to write (the file system's calls
    release the GIL). Every staging has ended before a failure is raised. With `files`, each file
    written goes in with its stat, taken before it was closed (a root's rename moves no file's).
    With `checkout` (eol.py), each file as git's checkout would write it."""
    if len(changes) < PARALLEL or THREADS < 2:
        staged = [_stage(root, c, observe, files is not None, checkout) for c in changes]
    else:
        failed = threading.Event()

        def one(change: Change) -> tuple[Observed | None, list[tuple[str, bytes]] | None]:
            if failed.is_set():
                return None, None
            try:
                return _stage(root, change, observe, files is not None, checkout)
            except BaseException:
                failed.set()
                raise
        with ThreadPoolExecutor(THREADS) as pool:
            futures = [pool.submit(one, c) for c in changes]
        staged = [f.result() for f in futures]
    if files is not None:
        for change, (_, stats) in zip(changes, staged):
            files.update((f"{change.path}/{rel}", st) for rel, st in stats or ())
    return [seen for seen, _ in staged]


def _stage(root: Path, change: Change, observe: bool, stat_files: bool,
           checkout: Any = None) -> tuple[Observed | None, list[tuple[str, bytes]] | None]:
    """Write a root's new content to its staging sibling; with `observe`, the path (inside the
    root, "" the root itself) and stamp of everything it owns, as written, in the order written;
    with `stat_files`, each file's path inside the root and stat."""
    target = root / change.path
    staging = sibling(target, "stage")
    remove(staging)
    if change.content is None:
        return None, None
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(change.content, bytes):
        write_new(str(staging), change.content if checkout is None else checkout.form(str(target), change.content))
        return None, None  # a file root's stamp changes as it is renamed in: recorded when next compared
    os.mkdir(staging)
    # a root reused folders move into is not recorded as written: their stamps move as they are
    # renamed in, after the comparison that vouched for them (`worktree._settle` compares it again)
    seen: Observed | None = [] if observe and not change.reuse else None
    stats: list[tuple[str, bytes]] | None = [] if stat_files else None
    _write_files(str(staging), change.content, seen, "", frozenset(change.reuse), stats,
                 None if checkout is None else (checkout, f"{target}/"))
    if seen is not None and not any(v is KEEP for v in change.content.values()):
        seen.insert(0, ("", lstamp(str(staging))))  # no entry of its own but what the tree names
    return seen, stats


def _write_files(folder: str, tree: FileTree, seen: Observed | None, prefix: str,
                 reused: frozenset[str] = frozenset(), stats: list[tuple[str, bytes]] | None = None,
                 converted: tuple[Any, str] | None = None) -> None:
    """The hot loop of a full reconcile into a work tree: plain os calls on str paths.
    `converted`: (eol.Checkout, the root's path in the work tree)."""
    for name, value in tree.items():
        if isinstance(value, dict):
            rel = f"{prefix}{name}"
            if rel in reused:
                continue  # moved from the old root in step 3
            if not has_files(value):
                if seen is not None:
                    seen.append((rel, ABSENT))  # a folder the tree wants gone
                continue
            path = f"{folder}/{name}"
            os.mkdir(path)
            if seen is None:
                _write_files(path, value, None, f"{rel}/", reused, stats, converted)
                continue
            at = len(seen)
            seen.append((rel, ABSENT))
            _write_files(path, value, seen, f"{rel}/", reused, stats, converted)
            seen[at] = (rel, full_stamp(path))  # after its last entry (its ctime too: never renamed)
        elif isinstance(value, bytes):
            if converted is not None:
                value = converted[0].form(f"{converted[1]}{prefix}{name}", value)
            written = write_new(f"{folder}/{name}", value, seen is not None or stats is not None)
            if written is not None:
                if seen is not None:
                    seen.append((f"{prefix}{name}", stamp_of(written)))
                if stats is not None:
                    stats.append((f"{prefix}{name}", index_stat(written)))


def remove(path: Path) -> None:
    mode = lstat_mode(path)
    if stat.S_ISDIR(mode):
        shutil.rmtree(path)
    elif mode:
        os.unlink(path)


def resolve_legacy(root: Path, rel: str, tree: FileTree | bytes | None) -> None:
    """The earlier writer moved the kept folders into `.NAME.ksgitops-new` before renaming it in,
    and deleted that folder on the next run: put what it holds back, delete only what is generated."""
    target = root / rel
    new, old = sibling(target, "new"), sibling(target, "old")
    has_new, has_old = os.path.lexists(new), os.path.lexists(old)
    if not (has_new or has_old):
        return
    for leftover in (new, old):
        if os.path.islink(leftover):
            raise LinkError(str(leftover.relative_to(root)))
    if not os.path.lexists(target):
        if has_old and not has_new:
            os.rename(old, target)  # the old root, never renamed back: restore it
            return
        if has_old:
            os.rename(new, target)  # renamed aside, the new one complete (kept folders inside)
            shutil.rmtree(old)
            return
    if has_new and isinstance(tree, dict) and os.path.isdir(new) and os.path.isdir(target):
        others = tree.get(OTHERS) is KEEP
        for entry in os.scandir(new):
            kept = tree.get(entry.name) is KEEP or (others and entry.name not in tree)
            if kept and not os.path.lexists(target / entry.name):
                os.rename(entry.path, target / entry.name)
    if has_new:
        remove(new)
    if has_old:
        remove(old)
