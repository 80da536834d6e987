"""The work tree edge: read a folder as a Snapshot, and the guards every work-tree writer uses.

Symbolic links: nothing is ever read, written, moved or deleted through a link on the way to a
path ksgitops owns (`spaces/`, a space folder, `.ksgitops/`, a mailbox folder or any folder in it,
`STATUS.md`, the cache folder in the git directory). Such a link is refused with a LinkError
(exit 2) naming it, before anything is written. Links inside source spaces are skipped, as before.

Writing generated roots crash-safely is `worktree.py`'s job; the guards themselves and single-file
writes are in `paths.py`.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from ..pygit import pygit2

from ...core.load.snapshot import GENERATED_DIR, MAX_FILE_BYTES, SOURCE_SUFFIXES, SourceFile
from ...core.status.gitobjects import blob_id
from ...core.tree import FileTree, put
from ...model import KsgitopsError
from .eol import AsGitReads
from .statcache import ABSENT, SourceStat, Stamp, full_stamp
from .paths import STATUS_FILE, LinkError, check_path, lstat_mode

def check_layout(root: Path, sources: bool = False) -> None:
    """The fixed part of what ksgitops owns, checked once per command before anything is read or
    written: `spaces/`, every entry directly in it, each space's `.ksgitops/` and its folders,
    and STATUS.md (with `sources`, when the work tree is what is read: each space's `space.yaml`
    too, what makes a folder a mailbox, so that a link there is refused whether or not a record
    remembers the folder as one). Deeper folders are checked where they are read or written."""
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
        for owned in (("space.yaml", GENERATED_DIR) if sources else (GENERATED_DIR,)):
            if os.path.islink(f"{entry.path}/{owned}"):
                raise LinkError(f"spaces/{entry.name}/{owned}")
        try:
            generated = list(os.scandir(f"{entry.path}/{GENERATED_DIR}"))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for inner in generated:
            if inner.is_symlink():
                raise LinkError(f"spaces/{entry.name}/{GENERATED_DIR}/{inner.name}")


def space_names(root: Path) -> tuple[str, ...]:
    """The folders in `spaces/` (links and hidden entries left out), by name; then, each as `/name`,
    the source files directly in `spaces/`, which nothing reads (`stray_files` warns of them): the
    proof of a no-op compares the whole listing, so a file put there is seen at once."""
    spaces = root / "spaces"
    if spaces.is_symlink() or not spaces.is_dir():
        return ()
    folders, strays = [], []
    for e in os.scandir(spaces):
        if e.name.startswith("."):
            continue
        if e.is_dir(follow_symlinks=False):
            folders.append(e.name)
        elif e.name.endswith(SOURCE_SUFFIXES) and e.is_file(follow_symlinks=False):
            strays.append(f"/{e.name}")
    return tuple(sorted(folders)) + tuple(sorted(strays))


def check_mailbox_tops(root: Path, mailboxes: Iterable[str]) -> None:
    """A link directly in a mailbox folder is refused (LinkError). A mailbox keeps entries it does
    not name (reports), so its folder's own stamp is not recorded: a run that reuses it, or
    proves the whole work tree, looks at its top level here."""
    for folder in mailboxes:
        try:
            entries = os.scandir(f"{root}/{folder}")
        except (FileNotFoundError, NotADirectoryError):
            continue
        with entries:
            for entry in entries:
                if entry.is_symlink():
                    raise LinkError(f"{folder}/{entry.name}")


class WorkTreeSnapshot:
    """A Snapshot over a folder (a git work tree or any directory); never reads through a link.
    With a `record` (statcache.WorkTreeRecord), a source file or folder whose stamp is as
    recorded is neither read nor listed again: its blob id and listing come from the record."""

    def __init__(self, root: Path, record: Any = None) -> None:
        self.root = Path(root)
        self._verified: set[str] = set()
        self.record = record if record is not None and record.enabled else None
        self.seen: set[str] = set()  # source paths (and folders, with a trailing /) looked at
        self.observed: dict[str, Stamp] = {}  # with a record: every path looked at, as it stood
        self.spaces_listing: tuple[str, ...] | None = None  # with a record: what list_spaces found
        self._found: tuple[str, ...] | None = None  # what list_spaces found, for stray_files
        self.listings: dict[str, tuple[tuple[str, bool], ...]] = {}  # with a record: source folders listed
        self._clean = AsGitReads(self.root)

    def list_spaces(self) -> list[str]:
        found = self._found = space_names(self.root)
        if self.record is not None:
            self.spaces_listing = found  # its writes move the folder's stamp: proof.py compares names
        return [name for name in found if not name.startswith("/")]

    def stray_files(self) -> list[str]:
        found = self._found if self._found is not None else space_names(self.root)
        return [f"spaces{name}" for name in found if name.startswith("/")]

    def space_files(self, space: str) -> list[SourceFile]:
        check_path(self.root, f"spaces/{space}", self._verified)
        return [self._source(path) for path in self._source_walk(f"spaces/{space}")]

    def _source_walk(self, folder: str) -> Iterator[str]:
        """Source paths below `folder` in name order, never into links or generated folders."""
        for name, is_dir in self._listing(folder):
            path = f"{folder}/{name}"
            if not is_dir:
                if path.endswith(SOURCE_SUFFIXES):
                    yield path
            elif name != GENERATED_DIR:
                yield from self._source_walk(path)

    def _listing(self, folder: str) -> tuple[tuple[str, bool], ...]:
        """(name, is folder) of the regular files and folders in `folder`, by name."""
        full = f"{self.root}/{folder}"
        if self.record is None:
            return _list(full)
        self.seen.add(f"{folder}/")
        self.observed[f"{folder}/"] = stamp = full_stamp(full)
        known = self.record.source(f"{folder}/", stamp)
        if known is not None:
            self.listings[f"{folder}/"] = known.listing
            return known.listing  # type: ignore[no-any-return]
        self.record.clock()  # before the listing it vouches for
        listing = self.listings[f"{folder}/"] = _list(full)
        if stamp != ABSENT:
            self.record.note_source(f"{folder}/", SourceStat(stamp, "", listing))
        return listing

    def listed_again(self, folder: str) -> tuple[tuple[str, bool], ...]:
        """What `folder` (with its trailing /) holds now, as _listing would list it."""
        return _list(f"{self.root}/{folder.rstrip('/')}")

    def _regular(self, path: str) -> bool:
        check_path(self.root, path, self._verified, last=False)
        if self.record is None:
            return stat.S_ISREG(lstat_mode(self.root / path))
        self.record.clock()  # before the content its stamp stands for
        self.observed[path] = stamp = full_stamp(f"{self.root}/{path}")
        return stat.S_ISREG(stamp[4])

    def file(self, path: str) -> SourceFile | None:
        check_path(self.root, path, self._verified, last=False)
        stamp = full_stamp(f"{self.root}/{path}")  # one lstat: is it a file, and is it as recorded
        if self.record is not None:
            self.observed[path] = stamp
        return self._source(path, stamp) if stat.S_ISREG(stamp[4]) else None

    def read(self, path: str) -> bytes | None:
        return self._clean(f"{self.root}/{path}", (self.root / path).read_bytes()) if self._regular(path) else None

    def read_tree(self, path: str) -> FileTree | None:
        """The files below `path` as a nested tree (None when there is no such folder)."""
        check_path(self.root, path, self._verified, last=False)
        base = self.root / path
        if not stat.S_ISDIR(lstat_mode(base)):
            if self.record is not None:
                self.observed[path] = full_stamp(str(base))  # a folder that appears later ends a proof
            return None
        tree: FileTree = {}
        if self.record is None:
            for rel in _walk(base):
                put(tree, rel, self._clean(f"{base}/{rel}", (base / rel).read_bytes()))
            return tree
        self.record.clock()  # before the folders and files whose stamps stand for what is read

        def listing(folder: Path) -> None:  # an entry added to a folder moves its stamp
            self.observed[f"{folder.relative_to(self.root)}/"] = full_stamp(str(folder))
        for rel in _walk(base, listing=listing):
            self.observed[f"{path}/{rel}"] = full_stamp(f"{base}/{rel}")
            put(tree, rel, self._clean(f"{base}/{rel}", (base / rel).read_bytes()))
        return tree

    def _source(self, path: str, stamp: Stamp | None = None) -> SourceFile:
        full = f"{self.root}/{path}"  # a string: pathlib's parsing cost a third of a fleet's mailbox reads
        if self.record is not None:
            self.seen.add(path)
            self.observed[path] = stamp = stamp or full_stamp(full)
        if (stamp[1] if stamp else os.stat(full).st_size) > MAX_FILE_BYTES:
            # never held whole: the parser only needs to see that it is too large
            return SourceFile(path, str(pygit2.hashfile(full)), lambda: _prefix(full))
        if self.record is None:
            data = _read_bytes(full)
            return SourceFile(path, _blob_id(data), lambda: data)
        assert stamp is not None
        known = self.record.source(path, stamp)
        if known is not None:
            return SourceFile(path, known.key, lambda: _read_as(full, path, known.key))
        self.record.clock()  # before the content it vouches for is read
        data = _read_bytes(full)
        key = _blob_id(data)
        self.record.note_source(path, SourceStat(stamp, key))
        return SourceFile(path, key, lambda: data)


def _blob_id(data: bytes) -> str:
    return blob_id(data)  # the git blob id: work tree and commits share cache entries


def _read_bytes(full: str) -> bytes:
    with open(full, "rb") as f:
        return f.read()


def _read_as(full: str, path: str, key: str) -> bytes:
    """A source's bytes, read only when its parse is not cached: they must still be the blob the
    stamp stood for (else the file changed while ksgitops ran)."""
    data = _read_bytes(full)
    if _blob_id(data) != key:
        raise KsgitopsError(f"{path}: changed while ksgitops was reading the sources; run again")
    return data


def _prefix(path: str) -> bytes:
    """The first bytes of a file over the parse limit: enough for the parser to say so."""
    with open(path, "rb") as f:
        return f.read(MAX_FILE_BYTES + 1)


def _list(full: str) -> tuple[tuple[str, bool], ...]:
    try:
        entries = sorted(os.scandir(full), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return ()
    return tuple((e.name, e.is_dir(follow_symlinks=False)) for e in entries
                 if not e.is_symlink() and (e.is_dir(follow_symlinks=False) or e.is_file(follow_symlinks=False)))


def walk_files(root: Path, rel: str) -> Iterator[str]:
    """Relative paths of the regular files below `root/rel` (none when it is not a folder), in
    name order, never following links; a link on the way to `rel` is a LinkError."""
    check_path(root, rel)
    return _walk(root / rel)


def _walk(base: Path, prefix: str = "", listing: Callable[[Path], None] | None = None) -> Iterator[str]:
    """Relative paths of regular files below `base`, never following links; `listing` hears each
    folder before it is listed."""
    if listing is not None:
        listing(base)
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        if entry.is_symlink():
            continue
        if entry.is_dir():
            yield from _walk(Path(entry.path), f"{prefix}{entry.name}/", listing)
        elif entry.is_file():
            yield f"{prefix}{entry.name}"
