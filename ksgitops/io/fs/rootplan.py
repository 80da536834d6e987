"""What writing one generated root into a work tree takes (worktree.py's step 0): the root on disk
compared with its generated tree, the paths inside it to keep, and the folders already as
generated, which the writer moves into the new root instead of staging them."""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from ...core.tree import KEEP, OTHERS, FileTree, has_files
from . import eol
from .paths import FileStats, LinkError, index_stat, lstat_mode
from .staging import Change

EXECUTABLE = 0o111


def plan_root(root: Path, rel: str, tree: FileTree | bytes | None, files: FileStats | None = None,
              checkout: Any = None) -> Change | None:
    """What writing `tree` at `rel` takes (None: it is there already, and `files` gets each of its
    files with the stat taken before it was read and found equal: a later change moves it). Raises
    LinkError for a link inside the old root, before anything is written. `checkout`: git's
    end-of-line conversion in this work tree (eol.py), under which a file git would write with CRLF
    is as generated in either form."""
    target = root / rel
    mode = lstat_mode(target)
    existed = mode != 0
    if isinstance(tree, bytes):
        before = os.lstat(target) if files is not None and stat.S_ISREG(mode) else None
        if stat.S_ISREG(mode) and eol.same(checkout, str(target), target.read_bytes(), tree):
            if before is not None and files is not None:
                files[rel] = index_stat(before)
            return None
        return Change(rel, tree, existed)
    if tree is None or not has_files(tree):
        if stat.S_ISDIR(mode):
            _compare(str(target), {}, "", _Scan(rel))  # links inside are refused
        return Change(rel, None, True) if existed else None
    if not stat.S_ISDIR(mode):
        return Change(rel, tree, existed)
    scan = _Scan(rel, stats=[] if files is not None else None, checkout=checkout)
    if _compare(str(target), tree, "", scan)[0]:
        if files is not None:
            files.update(scan.stats or ())
        return None
    return Change(rel, tree, True, scan.keep, reuse=scan.reuse)


class _Scan(Struct):
    rel: str
    keep: list[str] = field(default_factory=list)
    reuse: list[str] = field(default_factory=list)  # folders whose files are all as generated
    stats: list[tuple[str, bytes]] | None = None  # files found equal (path in the work tree, index stat)
    checkout: Any = None  # eol.Checkout


def _compare(folder: str, tree: FileTree, prefix: str, scan: _Scan) -> tuple[bool, bool]:
    """(whether a folder holds what `tree` generates, whether it could move whole: that, and
    nothing kept in it). Collects the kept paths and the largest movable folders inside a folder
    that is not (reading a folder's files only while they are all equal), and refuses any link in
    what the tree owns."""
    entries = {e.name: e for e in os.scandir(folder)}
    others = tree.get(OTHERS) is KEEP
    same, movable, inside = True, not others, []
    for name, entry in entries.items():
        value, path = tree.get(name), f"{prefix}{name}"
        if entry.is_symlink():
            raise LinkError(f"{scan.rel}/{path}")
        if value is KEEP or (value is None and others):
            scan.keep.append(path)
            movable = False
        elif entry.is_dir(follow_symlinks=False):
            equal, whole = _compare(entry.path, value if isinstance(value, dict) else {}, f"{path}/", scan)
            if equal and isinstance(value, dict) and has_files(value):
                movable = movable and whole
                if whole:
                    inside.append(path)
            else:
                same = False
        elif not isinstance(value, bytes) or not entry.is_file(follow_symlinks=False):
            same = False
        elif same:
            before = entry.stat(follow_symlinks=False)
            if before.st_mode & EXECUTABLE or ((data := Path(entry.path).read_bytes()) != value
                                               and not eol.same(scan.checkout, entry.path, data, value)):
                same = False  # (a generated file is never executable: git would see the mode)
            elif scan.stats is not None:
                scan.stats.append((f"{scan.rel}/{path}", index_stat(before)))
    for name, value in tree.items():
        if value is KEEP:
            movable = False
        elif name not in entries and (isinstance(value, bytes) or (isinstance(value, dict) and has_files(value))):
            same = False
    if not (same and movable):
        scan.reuse.extend(inside)
    return same, same and movable
