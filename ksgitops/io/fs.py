"""The work tree edge: read a folder as a Snapshot, and the guards every work-tree writer uses.

Symbolic links: nothing is ever read, written, moved or deleted through a link on the way to a
path ksgitops owns (`spaces/`, a space folder, `.ksgitops/`, a mailbox folder or any folder in it,
`STATUS.md`, the cache folder in the git directory). Such a link is refused with a LinkError
(exit 2) naming it, before anything is written. Links inside source spaces are skipped, as before.

Writing generated roots crash-safely is `worktree.py`'s job; `write_file` here replaces one file
whose loss costs nothing but time (caches, memos) or that a journal can redo (a checkout).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Iterator

import pygit2

from ..core.parse import MAX_FILE_BYTES
from ..core.snapshot import GENERATED_DIR, SourceFile, is_source_path
from ..core.tree import FileTree, Generated, put
from ..model import KsgitopsError, Origin, Problem, Progress

STATUS_FILE = "STATUS.md"


class LinkError(KsgitopsError):
    """A symbolic link where ksgitops reads or writes what it owns: exit 2, nothing touched."""

    def __init__(self, rel: str) -> None:
        super().__init__(Problem(Origin(rel), "is a symbolic link; ksgitops never reads or writes through "
                                              "links in the paths it owns (make it a folder or file of the repository)"),
                         exit_code=2)


def check_path(root: Path, rel: str, verified: set[str] | None = None, last: bool = True, shown: str = "") -> None:
    """Raise LinkError when a component of `rel` below `root` is a symbolic link (`last`: the
    final component too), named `shown`/component. `verified` caches folders found to be real."""
    parts = rel.split("/")
    upto = parts if last else parts[:-1]
    for i in range(len(upto)):
        prefix = "/".join(parts[:i + 1])
        if verified is not None and prefix in verified:
            continue
        try:
            mode = os.lstat(root / prefix).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return  # nothing below a missing component can be a link
        if stat.S_ISLNK(mode):
            raise LinkError(f"{shown}/{prefix}" if shown else prefix)
        if verified is not None and stat.S_ISDIR(mode):
            verified.add(prefix)


def check_layout(root: Path) -> None:
    """The fixed part of what ksgitops owns, checked once per command before anything is read or
    written: `spaces/`, every entry directly in it, each space's `.ksgitops/` and its folders,
    and STATUS.md. Deeper folders are checked where they are read or written."""
    check_path(root, STATUS_FILE)
    check_path(root, "spaces")
    try:
        entries = list(os.scandir(root / "spaces"))
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        if entry.is_symlink():
            raise LinkError(f"spaces/{entry.name}")
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        if os.path.islink(f"{entry.path}/{GENERATED_DIR}"):
            raise LinkError(f"spaces/{entry.name}/{GENERATED_DIR}")
        try:
            generated = list(os.scandir(f"{entry.path}/{GENERATED_DIR}"))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for inner in generated:
            if inner.is_symlink():
                raise LinkError(f"spaces/{entry.name}/{GENERATED_DIR}/{inner.name}")


class WorkTreeSnapshot:
    """A Snapshot over a folder (a git work tree or any directory); never reads through a link."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._verified: set[str] = set()

    def list_spaces(self) -> list[str]:
        spaces = self.root / "spaces"
        if spaces.is_symlink() or not spaces.is_dir():
            return []
        return sorted(e.name for e in os.scandir(spaces)
                      if e.is_dir(follow_symlinks=False) and not e.name.startswith("."))

    def space_files(self, space: str) -> list[SourceFile]:
        check_path(self.root, f"spaces/{space}", self._verified)
        base = self.root / "spaces" / space
        files = []
        for rel in _walk(base):
            if is_source_path(rel):
                files.append(self._source(f"spaces/{space}/{rel}"))
        return files

    def _regular(self, path: str) -> bool:
        check_path(self.root, path, self._verified, last=False)
        return stat.S_ISREG(_lstat_mode(self.root / path))

    def file(self, path: str) -> SourceFile | None:
        return self._source(path) if self._regular(path) else None

    def read(self, path: str) -> bytes | None:
        return (self.root / path).read_bytes() if self._regular(path) else None

    def read_tree(self, path: str) -> FileTree | None:
        """The files below `path` as a nested tree (None when there is no such folder)."""
        check_path(self.root, path, self._verified, last=False)
        base = self.root / path
        if not stat.S_ISDIR(_lstat_mode(base)):
            return None
        tree: FileTree = {}
        for rel in _walk(base):
            put(tree, rel, (base / rel).read_bytes())
        return tree

    def _source(self, path: str) -> SourceFile:
        full = self.root / path
        if os.stat(full).st_size > MAX_FILE_BYTES:  # never held whole: the parser only says it is too large
            return SourceFile(path, str(pygit2.hashfile(str(full))), lambda: _prefix(full))
        data = full.read_bytes()
        key = str(pygit2.hash(data))  # the git blob id: work tree and commits share cache entries
        return SourceFile(path, key, lambda: data)


def _prefix(path: Path) -> bytes:
    """The first bytes of a file over the parse limit: enough for the parser to say so."""
    with open(path, "rb") as f:
        return f.read(MAX_FILE_BYTES + 1)


def _lstat_mode(path: Path) -> int:
    try:
        return os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return 0


def walk_files(root: Path, rel: str) -> Iterator[str]:
    """Relative paths of the regular files below `root/rel` (none when it is not a folder), in
    name order, never following links; a link on the way to `rel` is a LinkError."""
    check_path(root, rel)
    return _walk(root / rel)


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
    """Replace one file atomically: written beside it, then renamed over it. A kill leaves the old
    file (and at worst the sibling `.NAME.ksgitops-tmp`, overwritten by the next write)."""
    staging = target.with_name(f".{target.name}.ksgitops-tmp")
    write_new(str(staging), data)
    os.replace(staging, target)


def write_new(path: str, data: bytes) -> None:
    """Create (or truncate) `path` holding `data`: plain os calls, the hot loop of a full write."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:  # a short write (a full disk, a file size limit) continues or raises
            view = view[os.write(fd, view):]
    except OSError as e:
        raise OSError(e.errno, e.strerror, path) from None  # os.write names no file
    finally:
        os.close(fd)


def write_generated(root: Path, generated: Generated, progress: Progress | None = None) -> list[str]:
    """Bring every owned root to its generated content (worktree.py); returns the roots that changed.
    `progress` hears ("writing", done, total)."""
    from .worktree import write_generated as write
    return write(root, generated, progress)
