"""What a generated root owns (its shape: the paths the record stamps) and a digest of its content."""
from __future__ import annotations

import hashlib
from typing import Any

from ...core.tree import KEEP, OTHERS, FileTree, has_files

Shape = tuple[str, ...]  # paths relative to a root ("" is the root folder itself)


def shape_of(tree: FileTree | bytes | None, memo: dict[int, Shape] | None = None) -> Shape:
    """The paths a root owns, in the order the writer creates them: "" (the root itself, unless
    the tree keeps entries it does not name), folders before what they hold, files, and folders
    the tree wants gone (no file below)."""
    if isinstance(tree, bytes) or not isinstance(tree, dict) or not has_files(tree):
        return ("",)  # a file, or a root that must not exist
    memo = {} if memo is None else memo
    keeps = any(v is KEEP for v in tree.values())
    return (() if keeps else ("",)) + _inner(tree, memo)


def _inner(tree: FileTree, memo: dict[int, Shape]) -> Shape:
    found = memo.get(id(tree))
    if found is not None:
        return found
    paths: list[str] = []
    for name, value in tree.items():
        if name == OTHERS or value is KEEP:
            continue
        if isinstance(value, dict):
            paths.append(name)
            if has_files(value):
                paths.extend(f"{name}/{p}" for p in _inner(value, memo))
        elif isinstance(value, bytes):
            paths.append(name)
    memo[id(tree)] = shape = tuple(paths)
    return shape


def content_digest(tree: Any, memo: dict[int, bytes]) -> bytes:
    """A digest of a generated tree's content (KEEP markers included), memoized by object: the
    trees and bytes that mailboxes share are digested once."""
    found = memo.get(id(tree))
    if found is not None:
        return found
    digest = hashlib.blake2b(digest_size=16)
    if isinstance(tree, bytes):
        digest.update(b"f")
        digest.update(tree)
    elif isinstance(tree, dict):
        digest.update(b"d")
        for name in sorted(tree):
            value = tree[name]
            digest.update(f"\0{name}\0".encode())
            digest.update(b"k" if value is KEEP else content_digest(value, memo))
    else:
        digest.update(repr(tree).encode())
    memo[id(tree)] = result = digest.digest()
    return result
