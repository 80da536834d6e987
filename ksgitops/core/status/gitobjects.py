"""Git object ids computed in memory (git's own format: "<type> <size>\\0<content>" under SHA-1).

Pure, so that the core can name content the way git does without a repository: the writers use
it to hash what they store, and the mailbox revision (syncreport.py) is a tree id computed the
same way from files or read from a commit.
"""
from __future__ import annotations

import hashlib
from typing import Any, Iterable, Mapping

BLOB_MODE = 0o100644
TREE_MODE = 0o040000


def object_id(kind: bytes, content: bytes) -> bytes:
    """The raw 20-byte id git gives an object of `kind` with `content`."""
    return hashlib.sha1(b"%s %d\0" % (kind, len(content)) + content).digest()


def tree_content(entries: Iterable[tuple[str, int, bytes]]) -> bytes:
    """Serialize (name, mode, raw id) entries in git's order (a folder sorts as `name/`). A name
    that is not UTF-8 comes from git as pygit2 gives it (its bytes as lone surrogates) and goes
    back as the same bytes."""
    def order(entry: tuple[str, int, bytes]) -> bytes:
        name, mode, _ = entry
        return name.encode("utf-8", "surrogateescape") + (b"/" if mode == TREE_MODE else b"")
    return b"".join(b"%o %s\0%s" % (mode, name.encode("utf-8", "surrogateescape"), raw)
                    for name, mode, raw in sorted(entries, key=order))


def blob_id(data: bytes) -> str:
    """The id (hex) git gives a file holding `data`."""
    return object_id(b"blob", data).hex()


def tree_id(entries: Iterable[tuple[str, int, str]]) -> str:
    """The id (hex) of a tree with these (name, mode, id hex) entries."""
    return object_id(b"tree", tree_content((n, m, bytes.fromhex(i)) for n, m, i in entries)).hex()


def files_tree_id(files: Mapping[str, Any]) -> str:
    """The id of the tree holding these nested files ({name: bytes | blob id (hex) | {...}}); ""
    when it holds no file (git keeps no empty folder)."""
    entries = []
    for name, value in files.items():
        if isinstance(value, (bytes, str)):
            entries.append((name, BLOB_MODE, blob_id(value) if isinstance(value, bytes) else value))
        elif isinstance(value, Mapping):
            sub = files_tree_id(value)
            if sub:
                entries.append((name, TREE_MODE, sub))
    return tree_id(entries) if entries else ""


__all__ = ["object_id", "tree_content", "blob_id", "tree_id", "files_tree_id", "BLOB_MODE", "TREE_MODE"]
