"""The shape of reconcile's output: file trees rooted at the paths reconcile owns.

`Generated` maps an owned root (e.g. `spaces/inv-mb-florin`) to the tree that must be there, or to
None when the root must go. Inside a tree, KEEP means "leave what is there" (reported/ and
upsynced/ of a mailbox, status/ of a WDS), and a whole root may be REUSE ("unchanged, do not
touch"). Subtrees may be shared between roots; writers exploit that (one git tree per distinct
subtree object).
"""
from __future__ import annotations

from typing import Iterator, Union


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


KEEP = _Marker("KEEP")
REUSE = _Marker("REUSE")

FileTree = dict[str, Union[bytes, "FileTree", _Marker]]
Generated = dict[str, Union[FileTree, _Marker, None]]


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
