"""The work tree edge: read a folder as a Snapshot, write Generated trees into it.

Writes are per owned root: a root whose content is unchanged is not touched; a changed root is
built beside the old one and swapped in with renames, so a crash leaves either the old or the new
mailbox, never a mix. Symbolic links are never followed (no path escapes the repo).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pygit2
from typing import Iterator

from ..core.snapshot import SourceFile, is_source_path
from ..core.tree import KEEP, REUSE, FileTree, Generated, has_files, put
from ..model import Progress


class WorkTreeSnapshot:
    """A Snapshot over a folder (a git work tree or any directory)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def list_spaces(self) -> list[str]:
        spaces = self.root / "spaces"
        if not spaces.is_dir():
            return []
        return sorted(e.name for e in os.scandir(spaces)
                      if e.is_dir(follow_symlinks=False) and not e.name.startswith("."))

    def space_files(self, space: str) -> list[SourceFile]:
        base = self.root / "spaces" / space
        files = []
        for rel in _walk(base):
            if is_source_path(rel):
                files.append(self._source(f"spaces/{space}/{rel}"))
        return files

    def file(self, path: str) -> SourceFile | None:
        full = self.root / path
        if full.is_symlink() or not full.is_file():
            return None
        return self._source(path)

    def read(self, path: str) -> bytes | None:
        full = self.root / path
        if full.is_symlink() or not full.is_file():
            return None
        return full.read_bytes()

    def read_tree(self, path: str) -> FileTree | None:
        """The files below `path` as a nested tree (None when there is no such folder)."""
        base = self.root / path
        if base.is_symlink() or not base.is_dir():
            return None
        tree: FileTree = {}
        for rel in _walk(base):
            put(tree, rel, (base / rel).read_bytes())
        return tree

    def _source(self, path: str) -> SourceFile:
        data = (self.root / path).read_bytes()
        key = str(pygit2.hash(data))  # the git blob id: work tree and commits share cache entries
        return SourceFile(path, key, lambda: data)


def walk_files(base: Path) -> Iterator[str]:
    """Relative paths of the regular files below `base` (none when it is not a folder), in name
    order, never following links."""
    if base.is_symlink():
        return iter(())
    return _walk(base)


def _walk(base: Path, prefix: str = "") -> Iterator[str]:
    """Relative paths of regular files below `base`, never following links."""
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        if entry.is_symlink():
            continue
        if entry.is_dir():
            yield from _walk(Path(entry.path), f"{prefix}{entry.name}/")
        elif entry.is_file():
            yield f"{prefix}{entry.name}"


def write_file(target: Path, data: bytes) -> None:
    """Replace one file atomically: written beside it (a name of this process's), then renamed over it."""
    staging = target.with_name(f".{target.name}.ksgitops-{os.getpid()}")
    staging.write_bytes(data)
    os.replace(staging, target)


def write_generated(root: Path, generated: Generated, progress: Progress | None = None) -> list[str]:
    """Bring every owned root to its generated content; returns the roots that changed.
    `progress` hears ("writing", roots done, roots) after each root."""
    changed = []
    for done, (rel, tree) in enumerate(generated.items(), 1):
        if progress is not None:
            progress("writing", done - 1, len(generated))
        target = Path(root) / rel
        if tree is REUSE:
            continue
        if isinstance(tree, bytes):  # a file root (STATUS.md)
            if target.is_symlink() or not target.is_file() or target.read_bytes() != tree:
                write_file(target, tree)
                changed.append(rel)
            continue
        if tree is None or not has_files(tree):  # type: ignore[arg-type]
            if target.exists():
                shutil.rmtree(target)
                changed.append(rel)
            continue
        if not _same(target, tree):  # type: ignore[arg-type]
            _swap_in(target, tree)  # type: ignore[arg-type]
            changed.append(rel)
    if progress is not None:
        progress("writing", len(generated), len(generated))
    return changed


def _same(target: Path, tree: FileTree) -> bool:
    """True when the folder holds exactly the tree's files (KEEP subtrees are not compared)."""
    if not target.is_dir():
        return False
    existing = {e.name: e for e in os.scandir(target)}
    keep = {name for name, v in tree.items() if v is KEEP}
    wanted = {name for name, v in tree.items() if v is not KEEP and (not isinstance(v, dict) or has_files(v))}
    if set(existing) - keep != wanted:
        return False
    for name in wanted:
        value, entry = tree[name], existing[name]
        if isinstance(value, dict):
            if not entry.is_dir(follow_symlinks=False) or not _same(Path(entry.path), value):
                return False
        elif not entry.is_file(follow_symlinks=False) or Path(entry.path).read_bytes() != value:
            return False
    return True


def swap_in(target: Path, tree: FileTree) -> None:
    """Build `tree` beside `target` and rename it into place (KEEP entries move over)."""
    _swap_in(target, tree)


def _swap_in(target: Path, tree: FileTree) -> None:
    staging = target.with_name(f".{target.name}.ksgitops-new")
    trash = target.with_name(f".{target.name}.ksgitops-old")
    for leftover in (staging, trash):
        if leftover.exists():
            shutil.rmtree(leftover)
    _write_tree(staging, tree, target)
    if target.exists():
        os.rename(target, trash)
    os.rename(staging, target)
    if trash.exists():
        shutil.rmtree(trash)


def _write_tree(folder: Path, tree: FileTree, old: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    _write_files(str(folder), tree, str(old))


def _write_files(folder: str, tree: FileTree, old: str) -> None:
    """The hot loop of a full reconcile into a work tree: plain os calls on str paths."""
    for name, value in tree.items():
        path = f"{folder}/{name}"
        if value is KEEP:
            if os.path.exists(f"{old}/{name}"):
                os.rename(f"{old}/{name}", path)
        elif isinstance(value, dict):
            if has_files(value):
                os.mkdir(path)
                _write_files(path, value, f"{old}/{name}")
        else:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, value)  # type: ignore[arg-type]
            finally:
                os.close(fd)
