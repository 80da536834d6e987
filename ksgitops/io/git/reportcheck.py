"""What a WEC's report ref may hold, checked before the fold-in takes it (foldin.py): its tree
objects read as raw bytes, as a hostile agent may have made them by hand (git's own push takes
most of what follows unless the server runs fsck), so that a checkout can always follow what is
folded in and never writes outside the mailbox.

Refused: names git refuses, or that lead out of a folder (`..`, `.`, a `/`), over-long names and
paths; entries out of git's order or named twice (git's lookup and the fold-in's would see
different trees); any mode but 100644 (a plain file) and 40000 (a folder), and an entry whose
object is not what its mode says, or is missing; more entries, counted as a checkout would write
them, than ENTRIES_AT_MOST (a folder met again at the same depth is not walked again, but counted:
folders shared at every level would otherwise cost 2^depth, to check and to write).
"""
from __future__ import annotations

import os
import re

from ..pygit import pygit2

TREE, FILE = b"40000", b"100644"
_PLAIN_ENTRY = re.compile(rb"(100644|40000) ([^\0]+)\0(.{20})", re.S)
_PLAIN_TREE = re.compile(rb"(?:(?:100644|40000) [^\0]+\0.{20})*", re.S)
PATH_AT_MOST = 1024  # bytes of a report's path in the repository (an honest one: ~600 at most)
NAME_AT_MOST = 255  # bytes of one name: the file system's limit
ENTRIES_AT_MOST = 1_000_000  # entries one ref's check reads (an honest ref: a few thousand)
HFS_IGNORED = dict.fromkeys(map(ord, "\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                                       "\u206a\u206b\u206c\u206d\u206e\u206f\ufeff"))  # HFS+ drops them from names


class _Walk:
    """One ref's check: the entries each folder holds, all the way down (by folder and depth of
    its path: walked once), and the entries of the tree checked so far, counted as the checkout
    would write them."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo, self.sizes, self.entries = repo, dict[tuple[bytes, int], int](), 0


def first_odd_entry(repo: pygit2.Repository, tree_id: pygit2.Oid, prefix: str, held: pygit2.Oid | None) -> str:
    """What a checkout could not bring along as the tree says, below tree `tree_id` ('' when
    nothing). A folder the branch head already holds (`held`: the id at the same place in the
    head) is not looked into again."""
    return _odd(_Walk(repo), tree_id.raw, prefix, held.raw if held is not None else None)


def _odd(walk: _Walk, tree: bytes, prefix: str, held: bytes | None) -> str:
    key, start = (tree, len(prefix)), walk.entries
    if key in walk.sizes:
        walk.entries += walk.sizes[key]
        return f"{prefix.rstrip('/')} holds too many entries" if walk.entries > ENTRIES_AT_MOST else ""
    found = _odd_entries(walk, tree, prefix, held)
    walk.sizes[key] = walk.entries - start
    return found


def _odd_entries(walk: _Walk, tree: bytes, prefix: str, held: bytes | None) -> str:
    entries = _entries(walk.repo, tree)
    if isinstance(entries, str):
        return f"{prefix.rstrip('/')} {entries}"
    kept = _held(walk.repo, held)
    previous = b""
    for mode, raw_name, oid in entries:
        walk.entries += 1
        name = _decoded(raw_name)
        path = f"{prefix}{name}"
        if walk.entries > ENTRIES_AT_MOST:
            return f"{prefix.rstrip('/')} holds too many entries"
        if refused(name):
            return f"{path} is a name git refuses"
        if longer(path, PATH_AT_MOST):
            return f"{path} is too long a path"
        order = raw_name + b"/" if mode == TREE else raw_name
        if order <= previous:
            return f"{path} is {'named twice' if order == previous else 'out of git’s order'} in its folder"
        previous = order
        if mode == TREE:
            found = "" if kept.get(raw_name) == oid else _odd(walk, oid, f"{path}/", kept.get(raw_name))
            if found:
                return found
        elif mode != FILE:
            return f"{path} is not a plain file (mode {mode.decode('ascii', 'replace')})"
        else:
            found = _not_a_file(walk.repo, oid)
            if found:
                return f"{path} {found}"
    return ""


def first_path_outside(repo: pygit2.Repository, tree: pygit2.Oid, allowed: set[str], where: str) -> str:
    """What the ref's tree holds besides the `allowed` folders and the folders on the way to them
    (`where`, in words), or names twice on that way ('' when nothing)."""
    return _outside(repo, tree.raw, "", allowed, where)


def _outside(repo: pygit2.Repository, tree: bytes, prefix: str, allowed: set[str], where: str) -> str:
    entries = _entries(repo, tree)
    if isinstance(entries, str):
        return f"{prefix.rstrip('/') or 'its tree'} {entries}"
    seen: set[bytes] = set()
    for _, raw_name, _ in entries:
        if raw_name in seen:
            return f"it names {prefix}{_decoded(raw_name)} twice in one folder"
        seen.add(raw_name)
    for mode, raw_name, oid in entries:
        path = f"{prefix}{_decoded(raw_name)}"
        if path in allowed:
            continue
        if mode != TREE or not any(root.startswith(f"{path}/") for root in allowed):
            return f"it holds {path}, outside {where}"
        found = _outside(repo, oid, f"{path}/", allowed, where)
        if found:
            return found
    return ""


def refused(name: str) -> bool:
    """A name git's checks refuse in a path (or libgit2's, with HFS+ and NTFS protection on), or
    one no folder can hold: `.` and `..` (the checkout would write outside the mailbox), a `/` or
    NUL, `.git` and what HFS+ or NTFS read as it (any case, ignorable characters, `git~1`), a
    backslash, more than NAME_AT_MOST bytes."""
    if name in ("", ".", "..") or "/" in name or "\\" in name or "\0" in name or longer(name, NAME_AT_MOST):
        return True
    bare = (name if name.isascii() else name.translate(HFS_IGNORED)).lower()
    return bare.startswith(".git") or (bare.startswith("git~") and bare[4:].isdigit())


def longer(text: str, at_most: int) -> bool:
    """More than `at_most` bytes in UTF-8 (at most 4 a character: most texts are not encoded)."""
    return len(text) * 4 > at_most and len(os.fsencode(text)) > at_most


def _entries(repo: pygit2.Repository, tree: bytes) -> list[tuple[bytes, bytes, bytes]] | str:
    """(mode, name, id) of a tree object's entries as written, or what is wrong with it."""
    try:
        kind, data = repo.odb.read(pygit2.Oid(raw=tree))
    except (KeyError, ValueError, pygit2.GitError):
        return "names an object the repository lacks"
    if kind != pygit2.GIT_OBJECT_TREE:
        return "is not a folder"
    if _PLAIN_TREE.fullmatch(data):  # the usual tree, split in C; else entry by entry, odd modes named
        return _PLAIN_ENTRY.findall(data)
    entries, pos = [], 0
    try:
        while pos < len(data):
            space = data.index(b" ", pos)
            end = data.index(b"\0", space)
            entries.append((data[pos:space], data[space + 1:end], data[end + 1:end + 21]))
            pos = end + 21
    except ValueError:
        return "is not a well-formed folder"
    if pos != len(data):
        return "is not a well-formed folder"
    return entries


def _held(repo: pygit2.Repository, tree: bytes | None) -> dict[bytes, bytes]:
    """name -> id of the entries of a folder the branch head holds (checked when it came in; read
    through libgit2's object cache, which the fold-in reads it from again)."""
    if tree is None:
        return {}
    try:
        folder = repo[pygit2.Oid(raw=tree)]
    except (KeyError, ValueError, pygit2.GitError):
        return {}
    if folder.type != pygit2.GIT_OBJECT_TREE:
        return {}
    return {str(e.name).encode("utf-8", "surrogateescape"): e.id.raw for e in folder.peel(pygit2.Tree)}


def _not_a_file(repo: pygit2.Repository, oid: bytes) -> str:
    """'' when the object `oid` is there and a file's (a blob), else what is wrong."""
    try:
        found = int(repo.odb.read_header(pygit2.Oid(raw=oid))[0])
    except (KeyError, ValueError, pygit2.GitError):
        return "names an object the repository lacks"
    return "is a folder’s object, not a file’s" if found != pygit2.GIT_OBJECT_BLOB else ""


def _decoded(raw_name: bytes) -> str:
    return raw_name.decode("utf-8", "surrogateescape")  # as os.fsdecode on Linux, without its lookups
