"""The shape of reconcile's output: file trees rooted at the paths reconcile owns.

`Generated` maps an owned root (e.g. `spaces/inv-mb-florin`) to the tree that must be there (or the
bytes, for a file root such as `STATUS.md`), or to None when the root must go. Inside a tree, KEEP means "leave what is there" (reported/ and
upsynced/ of a mailbox), `{OTHERS: KEEP}` keeps every entry the tree does not name (what a person
or another tool put in a mailbox), and a whole root may be REUSE ("unchanged, do not touch"). Subtrees may be shared between roots; writers exploit that (one git tree per distinct
subtree object).
"""
from __future__ import annotations

from typing import Iterator, Union

from msgspec import Struct


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self) -> str:  # unpickled as the module's own marker: markers are compared by identity
        return self.name


class Subtree(Struct, frozen=True):
    """An existing git tree, by id (hex), to be linked in as it is (the report-ref fold-in)."""

    id: str


KEEP = _Marker("KEEP")
REUSE = _Marker("REUSE")
OTHERS = ""  # a key no file can have: `{OTHERS: KEEP}` keeps every entry the tree does not name

FileTree = dict[str, Union[bytes, "FileTree", _Marker]]
Generated = dict[str, Union[FileTree, _Marker, bytes, Subtree, None]]


def put(tree: FileTree, path: str, content: bytes | _Marker | FileTree) -> None:
    """Set `path` (slash-separated, relative) in a nested tree, creating folders."""
    *dirs, leaf = path.split("/")
    node = tree
    for part in dirs:
        node = node.setdefault(part, {})  # type: ignore[assignment]
    node[leaf] = content


def walk(tree: FileTree, prefix: str = "") -> Iterator[tuple[str, bytes | _Marker]]:
    """(path, content) for every file or marker, depth first, in name order."""
    for name in sorted(tree):
        value = tree[name]
        path = f"{prefix}{name}"
        if isinstance(value, dict):
            yield from walk(value, path + "/")
        else:
            yield path, value


def has_files(tree: FileTree) -> bool:
    """True when a file (not only folders or markers) is somewhere below."""
    return any(isinstance(v, bytes) or (isinstance(v, dict) and has_files(v)) for v in tree.values())


def same_files(old: FileTree | None, new: object) -> bool:
    """Equal file content, ignoring KEEP subtrees (reported/, upsynced/, and with OTHERS every
    entry `new` does not name); a folder without files is the same as none (neither git nor the
    writers keep empty folders)."""
    if not isinstance(new, dict):
        return not old
    if old is None:
        return not has_files(new)
    others = new.get(OTHERS) is KEEP
    for name in set(old) | set(new):
        a, b = old.get(name), new.get(name)
        if b is KEEP or (others and name not in new):
            continue
        if isinstance(b, dict):
            if (a is not None and not isinstance(a, dict)) or not same_files(a, b):
                return False
        elif a != b and not (b is None and isinstance(a, dict) and not has_files(a)):
            return False
    return True
